package proof

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/sqskit/sqskit/sqsfake"
)

// wireRows feed sqsfake's HTTP endpoint requests no SDK would send: each
// gets the status and error shape SQS gives, and a request that never
// reaches an operation counts no call.
func wireRows() []row {
	raw := func(name, method, target, body string, status int, errType string) row {
		return row{cat: catWire, name: name, run: func(t *testing.T, w *catWorld) error {
			hs := sqsfake.StartHTTP(t, w.srv)
			req, err := http.NewRequest(method, hs.URL+"/", strings.NewReader(body))
			if err != nil {
				return err
			}
			if target != "" {
				req.Header.Set("X-Amz-Target", target)
			}
			req.Header.Set("Content-Type", "application/x-amz-json-1.0")
			hc := &http.Client{Transport: &http.Transport{}}
			defer hc.CloseIdleConnections()
			resp, err := hc.Do(req)
			if err != nil {
				return err
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != status {
				return fmt.Errorf("expect HTTP %d, got %d: %s", status, resp.StatusCode, b)
			}
			if errType == "" {
				return nil
			}
			var e struct {
				Type string `json:"__type"`
			}
			if err := json.Unmarshal(b, &e); err != nil || !strings.HasSuffix(e.Type, "#"+errType) {
				return fmt.Errorf("expect __type %s, got %s (%v)", errType, b, err)
			}
			return nil
		}}
	}
	sdk := func(name string, call func(api *sqs.Client, w *catWorld) error, check func(error) error) row {
		return row{cat: catWire, name: name, calls: true, run: func(t *testing.T, w *catWorld) error {
			hs := sqsfake.StartHTTP(t, w.srv)
			hc := &http.Client{Transport: &http.Transport{}}
			defer hc.CloseIdleConnections()
			api := hs.SDKClient(func(o *sqs.Options) { o.RetryMaxAttempts, o.HTTPClient = 1, hc })
			return check(call(api, w))
		}}
	}
	code := func(want string) func(error) error {
		return func(err error) error {
			apiErr, e := isAs[smithy.APIError](err)
			if e != nil {
				return e
			}
			if got := strings.TrimPrefix(apiErr.ErrorCode(), "AWS.SimpleQueueService."); got != want {
				return fmt.Errorf("expect code %s, got %s (%v)", want, got, err)
			}
			return nil
		}
	}
	return []row{
		raw("GET instead of POST", http.MethodGet, "", "", http.StatusMethodNotAllowed, ""),
		raw("no X-Amz-Target", http.MethodPost, "", "{}", http.StatusBadRequest, "UnknownOperationException"),
		raw("an unknown operation", http.MethodPost, "AmazonSQS.LaunchRockets", "{}", http.StatusBadRequest, "UnknownOperationException"),
		raw("an AWS query protocol request", http.MethodPost, "", "Action=SendMessage&MessageBody=x", http.StatusBadRequest, "UnknownOperationException"),
		raw("a body that is not JSON", http.MethodPost, "AmazonSQS.SendMessage", "{", http.StatusBadRequest, "SerializationException"),
		raw("a QueueUrl that is a number", http.MethodPost, "AmazonSQS.SendMessage", `{"QueueUrl":5,"MessageBody":"x"}`, http.StatusBadRequest, "SerializationException"),
		raw("binary attribute value not base64", http.MethodPost, "AmazonSQS.SendMessage",
			`{"QueueUrl":"http://h/123456789012/std","MessageBody":"x","MessageAttributes":{"a":{"DataType":"Binary","BinaryValue":"%%%"}}}`, http.StatusBadRequest, "SerializationException"),
		raw("a body of 9 MiB", http.MethodPost, "AmazonSQS.SendMessage", `{"MessageBody":"`+strings.Repeat("x", 9<<20)+`"}`, http.StatusRequestEntityTooLarge, ""),
		sdk("a receipt handle that is not one", func(api *sqs.Client, w *catWorld) error {
			_, err := api.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(w.std), ReceiptHandle: aws.String("not-a-handle")})
			return err
		}, func(err error) error { _, e := isAs[*types.ReceiptHandleIsInvalid](err); return e }),
		sdk("a queue URL naming no queue", func(api *sqs.Client, w *catWorld) error {
			_, err := api.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String("http://h/123456789012/nope"), MessageBody: aws.String("x")})
			return err
		}, func(err error) error { _, e := isAs[*types.QueueDoesNotExist](err); return e }),
		sdk("a queue URL with a path of three parts", func(api *sqs.Client, w *catWorld) error {
			_, err := api.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(w.std + "/extra"), MessageBody: aws.String("x")})
			return err
		}, func(err error) error { _, e := isAs[*types.QueueDoesNotExist](err); return e }),
		sdk("MaxNumberOfMessages 11", func(api *sqs.Client, w *catWorld) error {
			_, err := api.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(w.std), MaxNumberOfMessages: 11})
			return err
		}, code("InvalidParameterValue")),
		sdk("a RedrivePolicy that is not JSON", func(api *sqs.Client, w *catWorld) error {
			_, err := api.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(w.std), Attributes: map[string]string{"RedrivePolicy": "{"}})
			return err
		}, func(err error) error { _, e := isAs[*types.InvalidAttributeValue](err); return e }),
		sdk("a RedrivePolicy with maxReceiveCount 1001", func(api *sqs.Client, w *catWorld) error {
			_, err := api.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(w.std),
				Attributes: map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:123456789012:dlq","maxReceiveCount":1001}`}})
			return err
		}, func(err error) error { _, e := isAs[*types.InvalidAttributeValue](err); return e }),
		sdk("a batch of 11 entries", func(api *sqs.Client, w *catWorld) error {
			var entries []types.SendMessageBatchRequestEntry
			for i := range 11 {
				entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), MessageBody: aws.String("x")})
			}
			_, err := api.SendMessageBatch(context.Background(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(w.std), Entries: entries})
			return err
		}, func(err error) error { _, e := isAs[*types.TooManyEntriesInBatchRequest](err); return e }),
	}
}
