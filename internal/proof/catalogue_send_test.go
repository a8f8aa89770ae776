package proof

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/fifo"
)

// invalidMessage is a message SQS would refuse, and the error every send
// path must give it before any call.
type invalidMessage struct {
	name  string
	fifo  bool
	msg   fifo.Message
	field string // ValidationError.Field
	code  string // ValidationError.Code
	also  error  // an error it must match too, or nil
	opts  func(*fifo.SenderOptions)
}

func str(dt, v string) types.MessageAttributeValue {
	return types.MessageAttributeValue{DataType: aws.String(dt), StringValue: aws.String(v)}
}

func attrs(kv ...string) map[string]types.MessageAttributeValue {
	m := map[string]types.MessageAttributeValue{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = str("String", kv[i+1])
	}
	return m
}

const (
	fieldBody  = "MessageBody"
	fieldAttrs = "MessageAttributes"
	fieldGroup = "MessageGroupId"
	fieldDedup = "MessageDeduplicationId"
	fieldDelay = "DelaySeconds"

	codeInvalid  = "InvalidParameterValue"
	codeMissing  = "MissingParameter"
	codeContents = "InvalidMessageContents"
)

var errCustomDedup = errors.New("the order service is down")

func invalidMessages() []invalidMessage {
	elevenAttrs := map[string]types.MessageAttributeValue{}
	for i := range 11 {
		elevenAttrs[fmt.Sprintf("a%d", i)] = str("String", "v")
	}
	oneMiB := 1 << 20
	return []invalidMessage{
		{name: "empty body", msg: fifo.Message{Body: ""}, field: fieldBody, code: codeMissing},
		{name: "body with NUL", msg: fifo.Message{Body: "a\x00b"}, field: fieldBody, code: codeContents},
		{name: "body with U+FFFE", msg: fifo.Message{Body: "a\uFFFEb"}, field: fieldBody, code: codeContents},
		{name: "body with a vertical tab", msg: fifo.Message{Body: "a\vb"}, field: fieldBody, code: codeContents},
		{name: "body with invalid UTF-8", msg: fifo.Message{Body: "a\xffb"}, field: fieldBody, code: codeContents},
		{name: "body with a UTF-8-encoded surrogate", msg: fifo.Message{Body: "a\xed\xa0\x80b"}, field: fieldBody, code: codeContents},
		{name: "body of 1 MiB + 1 byte", msg: fifo.Message{Body: strings.Repeat("x", oneMiB+1)}, field: fieldBody, code: codeInvalid},
		{name: "body of 1 MiB with an attribute", msg: fifo.Message{Body: strings.Repeat("x", oneMiB-5), Attributes: attrs("a", "bc")}, field: fieldBody, code: codeInvalid},
		{name: "body above the Sender's MaxMessageBytes", msg: fifo.Message{Body: strings.Repeat("x", 2000)}, field: fieldBody, code: codeInvalid,
			opts: func(o *fifo.SenderOptions) { o.MaxMessageBytes = 1024 }},
		{name: "eleven attributes", msg: fifo.Message{Body: "b", Attributes: elevenAttrs}, field: fieldAttrs, code: codeInvalid},
		{name: "attribute name empty", msg: fifo.Message{Body: "b", Attributes: attrs("", "v")}, field: fieldAttrs, code: codeInvalid},
		{name: "attribute name with a leading period", msg: fifo.Message{Body: "b", Attributes: attrs(".a", "v")}, field: fieldAttrs, code: codeInvalid},
		{name: "attribute name with a trailing period", msg: fifo.Message{Body: "b", Attributes: attrs("a.", "v")}, field: fieldAttrs, code: codeInvalid},
		{name: "attribute name with two periods in a row", msg: fifo.Message{Body: "b", Attributes: attrs("a..b", "v")}, field: fieldAttrs, code: codeInvalid},
		{name: "attribute name with the AWS. prefix", msg: fifo.Message{Body: "b", Attributes: attrs("AWS.x", "v")}, field: fieldAttrs, code: codeInvalid},
		{name: "attribute name with the amazon. prefix in any case", msg: fifo.Message{Body: "b", Attributes: attrs("aMaZoN.x", "v")}, field: fieldAttrs, code: codeInvalid},
		{name: "attribute name of 257 characters", msg: fifo.Message{Body: "b", Attributes: attrs(strings.Repeat("n", 257), "v")}, field: fieldAttrs, code: codeInvalid},
		{name: "attribute name with a space", msg: fifo.Message{Body: "b", Attributes: attrs("a b", "v")}, field: fieldAttrs, code: codeInvalid},
		{name: "attribute name with a non-ASCII letter", msg: fifo.Message{Body: "b", Attributes: attrs("café", "v")}, field: fieldAttrs, code: codeInvalid},
		{name: "attribute without a data type", msg: fifo.Message{Body: "b", Attributes: map[string]types.MessageAttributeValue{"a": {StringValue: aws.String("v")}}}, field: fieldAttrs, code: codeInvalid},
		{name: "attribute data type Strin", msg: fifo.Message{Body: "b", Attributes: map[string]types.MessageAttributeValue{"a": str("Strin", "v")}}, field: fieldAttrs, code: codeInvalid},
		{name: "attribute data type with an empty suffix", msg: fifo.Message{Body: "b", Attributes: map[string]types.MessageAttributeValue{"a": str("Number.", "1")}}, field: fieldAttrs, code: codeInvalid},
		{name: "attribute data type of 257 characters", msg: fifo.Message{Body: "b", Attributes: map[string]types.MessageAttributeValue{"a": str("String."+strings.Repeat("t", 250), "v")}}, field: fieldAttrs, code: codeInvalid},
		{name: "String attribute with an empty value", msg: fifo.Message{Body: "b", Attributes: attrs("a", "")}, field: fieldAttrs, code: codeInvalid},
		{name: "String attribute with no value", msg: fifo.Message{Body: "b", Attributes: map[string]types.MessageAttributeValue{"a": {DataType: aws.String("String")}}}, field: fieldAttrs, code: codeInvalid},
		{name: "String attribute with a control character", msg: fifo.Message{Body: "b", Attributes: attrs("a", "\x01")}, field: fieldAttrs, code: codeInvalid},
		{name: "Number attribute abc", msg: fifo.Message{Body: "b", Attributes: map[string]types.MessageAttributeValue{"a": str("Number", "abc")}}, field: fieldAttrs, code: codeInvalid},
		{name: "Number attribute of 39 digits", msg: fifo.Message{Body: "b", Attributes: map[string]types.MessageAttributeValue{"a": str("Number", strings.Repeat("9", 39))}}, field: fieldAttrs, code: codeInvalid},
		{name: "Number attribute 1e127", msg: fifo.Message{Body: "b", Attributes: map[string]types.MessageAttributeValue{"a": str("Number", "1e127")}}, field: fieldAttrs, code: codeInvalid},
		{name: "Number attribute 1e-129", msg: fifo.Message{Body: "b", Attributes: map[string]types.MessageAttributeValue{"a": str("Number", "1e-129")}}, field: fieldAttrs, code: codeInvalid},
		{name: "Number attribute NaN", msg: fifo.Message{Body: "b", Attributes: map[string]types.MessageAttributeValue{"a": str("Number", "NaN")}}, field: fieldAttrs, code: codeInvalid},
		{name: "Binary attribute empty", msg: fifo.Message{Body: "b", Attributes: map[string]types.MessageAttributeValue{"a": {DataType: aws.String("Binary"), BinaryValue: []byte{}}}}, field: fieldAttrs, code: codeInvalid},
		{name: "Binary attribute with a string value too", msg: fifo.Message{Body: "b", Attributes: map[string]types.MessageAttributeValue{"a": {DataType: aws.String("Binary"), BinaryValue: []byte{1}, StringValue: aws.String("x")}}}, field: fieldAttrs, code: codeInvalid},
		{name: "attribute with an empty StringListValues", msg: fifo.Message{Body: "b", Attributes: map[string]types.MessageAttributeValue{"a": {DataType: aws.String("String"), StringValue: aws.String("v"), StringListValues: []string{}}}}, field: fieldAttrs, code: codeInvalid},
		{name: "DelaySeconds -1", msg: fifo.Message{Body: "b", DelaySeconds: -1}, field: fieldDelay, code: codeInvalid},
		{name: "DelaySeconds 901", msg: fifo.Message{Body: "b", DelaySeconds: 901}, field: fieldDelay, code: codeInvalid},
		{name: "deduplication id on a standard queue", msg: fifo.Message{Body: "b", DeduplicationID: "d"}, field: fieldDedup, code: codeInvalid},
		{name: "fair-queue tenant with a space", msg: fifo.Message{Body: "b", GroupID: "tenant one"}, field: fieldGroup, code: codeInvalid},
		{name: "no group id", fifo: true, msg: fifo.Message{Body: "b"}, field: fieldGroup, code: codeMissing},
		{name: "group id of 129 characters", fifo: true, msg: fifo.Message{Body: "b", GroupID: strings.Repeat("g", 129)}, field: fieldGroup, code: codeInvalid},
		{name: "group id with a non-ASCII letter", fifo: true, msg: fifo.Message{Body: "b", GroupID: "grüppe"}, field: fieldGroup, code: codeInvalid},
		{name: "group id from SenderOptions.GroupID with a space", fifo: true, msg: fifo.Message{Body: "b"}, field: fieldGroup, code: codeInvalid,
			opts: func(o *fifo.SenderOptions) { o.GroupID = func(*fifo.Message) string { return "customer 42" } }},
		{name: "DelaySeconds on a FIFO queue", fifo: true, msg: fifo.Message{Body: "b", GroupID: "g", DelaySeconds: 5}, field: fieldDelay, code: codeInvalid},
		{name: "deduplication id of 129 characters", fifo: true, msg: fifo.Message{Body: "b", GroupID: "g", DeduplicationID: strings.Repeat("d", 129)}, field: fieldDedup, code: codeInvalid},
		{name: "deduplication id with a tab", fifo: true, msg: fifo.Message{Body: "b", GroupID: "g", DeduplicationID: "a\tb"}, field: fieldDedup, code: codeInvalid},
		{name: "KeyDedup without a DedupKey", fifo: true, msg: fifo.Message{Body: "b", GroupID: "g"}, field: fieldDedup, code: codeInvalid, also: fifo.ErrNoDedupKey,
			opts: func(o *fifo.SenderOptions) { o.Dedup = fifo.KeyDedup("orders") }},
		{name: "ProvidedDedup without a DeduplicationID", fifo: true, msg: fifo.Message{Body: "b", GroupID: "g"}, field: fieldDedup, code: codeInvalid, also: fifo.ErrNoDedupID,
			opts: func(o *fifo.SenderOptions) { o.Dedup = fifo.ProvidedDedup() }},
		{name: "custom Dedup failing", fifo: true, msg: fifo.Message{Body: "b", GroupID: "g"}, field: fieldDedup, code: codeInvalid, also: errCustomDedup,
			opts: func(o *fifo.SenderOptions) {
				o.Dedup = func(*fifo.Message, string) (string, error) { return "", errCustomDedup }
			}},
		{name: "custom Dedup returning an id with a space", fifo: true, msg: fifo.Message{Body: "b", GroupID: "g"}, field: fieldDedup, code: codeInvalid,
			opts: func(o *fifo.SenderOptions) {
				o.Dedup = func(*fifo.Message, string) (string, error) { return "order 42", nil }
			}},
	}
}

func sendRows() []row {
	var rows []row
	for _, im := range invalidMessages() {
		kind := "standard"
		if im.fifo {
			kind = "FIFO"
		}
		rows = append(rows, row{cat: catSend, name: kind + ": " + im.name, run: func(t *testing.T, w *catWorld) error {
			return sendEveryPath(w, im)
		}})
	}
	rows = append(rows,
		row{cat: catSend, name: "standard: SendBatch with an invalid message among valid ones", calls: true, run: batchAmongValid(false)},
		row{cat: catSend, name: "FIFO: SendBatch with an invalid message inside a group", calls: true, run: batchAmongValid(true)},
		row{cat: catSend, name: "SendBatch of no messages", run: func(t *testing.T, w *catWorld) error {
			s, err := fifo.NewSender(w.api, w.std)
			if err != nil {
				return err
			}
			if res := s.SendBatch(context.Background(), nil); len(res) != 0 {
				return fmt.Errorf("expect no results, got %v", res)
			}
			return nil
		}},
		row{cat: catSend, name: "Send with a cancelled context", run: func(t *testing.T, w *catWorld) error {
			s, err := fifo.NewSender(w.api, w.std)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_, err = s.Send(ctx, fifo.Message{Body: "b"})
			return is(err, context.Canceled)
		}},
		row{cat: catSend, name: "SendBatch with a cancelled context", run: func(t *testing.T, w *catWorld) error {
			s, err := fifo.NewSender(w.api, w.fifo)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			for _, r := range s.SendBatch(ctx, []fifo.Message{{Body: "1", GroupID: "g"}, {Body: "2", GroupID: "h"}}) {
				if r.Err == nil || r.Unconfirmed != 0 {
					return fmt.Errorf("expect every message failed and none unconfirmed, got %+v", r)
				}
			}
			return nil
		}},
		row{cat: catSend, name: "Batcher.Send after Close", run: func(t *testing.T, w *catWorld) error {
			s, err := fifo.NewSender(w.api, w.std)
			if err != nil {
				return err
			}
			b, err := s.NewBatcher()
			if err != nil {
				return err
			}
			if err := b.Close(context.Background()); err != nil {
				return err
			}
			_, err = b.Send(context.Background(), fifo.Message{Body: "b"})
			return is(err, fifo.ErrClosed)
		}},
	)
	return rows
}

// sendEveryPath sends one invalid message through Send, SendBatch and a
// Batcher: each must refuse it with the same typed error.
func sendEveryPath(w *catWorld, im invalidMessage) error {
	url := w.std
	if im.fifo {
		url = w.fifo
	}
	var opts []func(*fifo.SenderOptions)
	if im.opts != nil {
		opts = append(opts, im.opts)
	}
	s, err := fifo.NewSender(w.api, url, opts...)
	if err != nil {
		return err
	}
	check := func(path string, err error) error {
		ve, e := isAs[*fifo.ValidationError](err)
		switch {
		case e != nil:
			return fmt.Errorf("%s: %w", path, e)
		case !errors.Is(err, fifo.ErrInvalid):
			return fmt.Errorf("%s: expect ErrInvalid, got %v", path, err)
		case ve.Field != im.field || ve.Code != im.code:
			return fmt.Errorf("%s: expect %s on %s, got %s on %s (%v)", path, im.code, im.field, ve.Code, ve.Field, err)
		case im.also != nil && !errors.Is(err, im.also):
			return fmt.Errorf("%s: expect an error matching %v too, got %v", path, im.also, err)
		}
		return nil
	}
	ctx := context.Background()
	if _, err := s.Send(ctx, im.msg); check("Send", err) != nil {
		return check("Send", err)
	}
	res := s.SendBatch(ctx, []fifo.Message{im.msg})
	if len(res) != 1 {
		return fmt.Errorf("SendBatch: expect one result, got %d", len(res))
	}
	if err := check("SendBatch", res[0].Err); err != nil {
		return err
	}
	b, err := s.NewBatcher()
	if err != nil {
		return err
	}
	_, err = b.Send(ctx, im.msg)
	if cerr := b.Close(ctx); cerr != nil {
		return cerr
	}
	return check("Batcher.Send", err)
}

// batchAmongValid: only the invalid message fails; on a standard queue the
// others are sent, on a FIFO queue the one before it is sent and the one
// after it is blocked, naming it.
func batchAmongValid(toFIFO bool) func(*testing.T, *catWorld) error {
	return func(t *testing.T, w *catWorld) error {
		url, g := w.std, ""
		if toFIFO {
			url, g = w.fifo, "g"
		}
		s, err := fifo.NewSender(w.api, url)
		if err != nil {
			return err
		}
		res := s.SendBatch(context.Background(), []fifo.Message{{Body: "1", GroupID: g}, {Body: "", GroupID: g}, {Body: "3", GroupID: g}})
		if _, err := isAs[*fifo.ValidationError](res[1].Err); err != nil {
			return fmt.Errorf("message 1: %w", err)
		}
		if res[0].Err != nil {
			return fmt.Errorf("expect message 0 sent, got %v", res[0].Err)
		}
		want := 2
		if toFIFO {
			blocked, err := isAs[*fifo.GroupBlockedError](res[2].Err)
			if err != nil {
				return fmt.Errorf("message 2: %w", err)
			}
			if blocked.Index != 1 {
				return fmt.Errorf("expect message 2 blocked by message 1, got %d", blocked.Index)
			}
			want = 1
		} else if res[2].Err != nil {
			return fmt.Errorf("expect message 2 sent, got %v", res[2].Err)
		}
		if n := w.count(url); n != want {
			return fmt.Errorf("expect %d messages on the queue, got %d", want, n)
		}
		return nil
	}
}
