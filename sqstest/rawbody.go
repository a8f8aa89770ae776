package sqstest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Some behaviours can only be shown with a request aws-sdk-go-v2 never
// builds: it omits int32 members that are 0, where other SDKs send an
// explicit 0, and it encodes only valid text. rewriteBody edits the
// serialized request before it is signed and sent, so the case runs on any
// backend through the client under test.

// rewriteBody passes each request's serialized body through fn.
func rewriteBody(fn func([]byte) ([]byte, error)) func(*sqs.Options) {
	return func(o *sqs.Options) {
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			return stack.Serialize.Add(middleware.SerializeMiddlewareFunc("sqstestRewriteBody", func(ctx context.Context, in middleware.SerializeInput, next middleware.SerializeHandler) (middleware.SerializeOutput, middleware.Metadata, error) {
				req, ok := in.Request.(*smithyhttp.Request)
				if !ok {
					return next.HandleSerialize(ctx, in)
				}
				var body []byte
				if s := req.GetStream(); s != nil {
					var err error
					if body, err = io.ReadAll(s); err != nil {
						return middleware.SerializeOutput{}, middleware.Metadata{}, err
					}
				}
				body, err := fn(body)
				if err != nil {
					return middleware.SerializeOutput{}, middleware.Metadata{}, fmt.Errorf("sqstest: rewrite the request body: %w", err)
				}
				if req, err = req.SetStream(bytes.NewReader(body)); err != nil {
					return middleware.SerializeOutput{}, middleware.Metadata{}, err
				}
				req.ContentLength = int64(len(body))
				in.Request = req
				return next.HandleSerialize(ctx, in)
			}), middleware.After)
		})
	}
}

// explicitZero sends each member at paths as 0: "VisibilityTimeout", or
// "Entries.1.DelaySeconds" for a member of the second batch entry. It edits
// a JSON body (AWS JSON 1.0) or a form body (the query protocol, where
// entries are numbered from 1 under the entry shape's name).
func explicitZero(paths ...string) func(*sqs.Options) {
	return rewriteBody(func(body []byte) ([]byte, error) {
		if bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")) {
			return zeroJSON(body, paths)
		}
		return zeroForm(body, paths), nil
	})
}

func zeroJSON(body []byte, paths []string) ([]byte, error) {
	var doc map[string]any
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	if err := d.Decode(&doc); err != nil {
		return nil, err
	}
	for _, p := range paths {
		parts := strings.Split(p, ".")
		obj := doc
		for i := 0; i+1 < len(parts); i += 2 {
			list, _ := obj[parts[i]].([]any)
			n, err := strconv.Atoi(parts[i+1])
			if err != nil || n >= len(list) {
				return nil, fmt.Errorf("no member %s", p)
			}
			if obj, _ = list[n].(map[string]any); obj == nil {
				return nil, fmt.Errorf("no member %s", p)
			}
		}
		obj[parts[len(parts)-1]] = 0
	}
	return json.Marshal(doc)
}

// zeroForm appends each member to a query-protocol form body.
func zeroForm(body []byte, paths []string) []byte {
	action := ""
	for _, kv := range strings.Split(string(body), "&") {
		if v, ok := strings.CutPrefix(kv, "Action="); ok {
			action = v
		}
	}
	entry := map[string]string{"SendMessageBatch": "SendMessageBatchRequestEntry", "ChangeMessageVisibilityBatch": "ChangeMessageVisibilityBatchRequestEntry", "DeleteMessageBatch": "DeleteMessageBatchRequestEntry"}[action]
	out := bytes.Clone(body)
	for _, p := range paths {
		parts := strings.Split(p, ".")
		if len(parts) == 3 && parts[0] == "Entries" {
			n, _ := strconv.Atoi(parts[1])
			p = entry + "." + strconv.Itoa(n+1) + "." + parts[2]
		}
		out = append(out, "&"+p+"=0"...)
	}
	return out
}

// replaceInBody replaces old with raw bytes in the serialized request: text
// no SDK would send, such as invalid UTF-8 or a lone surrogate. rawJSON goes
// into an AWS JSON body, rawForm (percent-encoded) into a query protocol
// form. The client's message checksums cover what it meant to send, so
// their check is off.
func replaceInBody(old, rawJSON, rawForm string) func(*sqs.Options) {
	edit := rewriteBody(func(body []byte) ([]byte, error) {
		from, to := old, rawJSON
		if !bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")) {
			from, to = url.QueryEscape(old), rawForm
		}
		if !bytes.Contains(body, []byte(from)) {
			return nil, fmt.Errorf("%q is not in the request", from)
		}
		return bytes.ReplaceAll(body, []byte(from), []byte(to)), nil
	})
	return func(o *sqs.Options) {
		edit(o)
		o.DisableMessageChecksumValidation = true
	}
}
