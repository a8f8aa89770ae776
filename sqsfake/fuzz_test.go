package sqsfake

import (
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"math"
	"math/big"
	"net/url"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
)

// The oracles restate each format apart from the parser under test.

var handleFormat = regexp.MustCompile(`^sqsfake\|([0-9]+)\|([0-9]+)\|[^|]*$`)

func fitsUint64(digits string) bool {
	n, ok := new(big.Int).SetString(digits, 10)
	return ok && n.BitLen() <= 64
}

// oneReceived is a server with a standard queue holding one message,
// received once, and its receipt handle.
func oneReceived(t *testing.T) (*Server, string, string) {
	t.Helper()
	s := New(func(o *Options) { o.Clock = NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) })
	ctx := context.Background()
	q, err := s.createQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.sendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("m")}); err != nil {
		t.Fatal(err)
	}
	out, err := s.receiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl})
	if err != nil || len(out.Messages) != 1 {
		t.Fatalf("receive: %v, %v", out, err)
	}
	return s, *q.QueueUrl, *out.Messages[0].ReceiptHandle
}

func (s *Server) held(url string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.lookup(&url)
	if err != nil {
		return -1
	}
	return len(q.msgs.bySeq)
}

// FuzzReceiptHandle: handles the server makes parse back to their queue and
// message; any other string parses exactly when it is the base64 of
// sqsfake|<queue>|<message>|<receive> with numbers that fit, and a delete
// with it never panics, fails only with ReceiptHandleIsInvalid, and deletes
// the message only with the handle its receive returned.
func FuzzReceiptHandle(f *testing.F) {
	f.Add(uint64(1), uint64(2), 1, "c3FzZmFrZXwxfDJ8MQ")
	f.Add(uint64(math.MaxUint64), uint64(0), -1, "")
	f.Add(uint64(7), uint64(9), 3, "c3FzZmFrZXwxfDE4NDQ2NzQ0MDczNzA5NTUxNjE2fDE")
	f.Add(uint64(0), uint64(0), 0, "AQEBwJnKyrHigUMZj6rYigCgxlaS3SLy0a")
	f.Fuzz(func(t *testing.T, queueID, seq uint64, receives int, h string) {
		made := receiptHandle(&queue{id: queueID}, &message{seq: seq, receiveCount: receives})
		if q, m, ok := parseReceiptHandle(made); !ok || q != queueID || m != seq {
			t.Fatalf("handle %q of queue %d message %d parses as %d %d %v", made, queueID, seq, q, m, ok)
		}
		_, _, ok := parseReceiptHandle(h)
		raw, err := base64.RawURLEncoding.DecodeString(h)
		want := false
		if err == nil {
			if sub := handleFormat.FindStringSubmatch(string(raw)); sub != nil {
				want = fitsUint64(sub[1]) && fitsUint64(sub[2])
			}
		}
		if ok != want {
			t.Fatalf("handle %q (%q): expect parsed=%v, got %v", h, raw, want, ok)
		}
		s, queueURL, current := oneReceived(t)
		_, err = s.deleteMessageOp(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(queueURL), ReceiptHandle: aws.String(h)})
		var invalid *types.ReceiptHandleIsInvalid
		var apiErr smithy.APIError
		switch {
		case err == nil:
		case errors.As(err, &invalid):
		case h == "" && errors.As(err, &apiErr) && apiErr.ErrorCode() == "MissingParameter":
		default:
			t.Fatalf("delete with %q: unexpected error %v", h, err)
		}
		if left := s.held(queueURL); (h == current) != (left == 0) {
			t.Fatalf("delete with %q (the receive gave %q): %d messages left", h, current, left)
		}
	})
}

var queuePath = regexp.MustCompile(`^/*123456789012/orders/*$`)

// FuzzQueueURL: a queue URL names the queue when its path, slashes around
// it aside, is exactly the account and the name, whatever the scheme and
// host, and so does the bare name (no slash), as SQS resolves a name in the
// caller's account; anything else is QueueDoesNotExist (an empty URL
// MissingParameter).
func FuzzQueueURL(f *testing.F) {
	for _, u := range []string{
		"https://sqs.us-east-1.amazonaws.com/123456789012/orders", "http://127.0.0.1:9324/123456789012/orders/", "/123456789012/orders",
		"123456789012/orders", "https://h/123456789012/orders.fifo", "https://h/000000000000/orders", "https://h/123456789012//orders",
		"https://h/123456789012/orders?x=1", "https://h/123456789012/ord%65rs", "%zz", "", "https://h/123456789012/orders#frag",
	} {
		f.Add(u)
	}
	f.Fuzz(func(t *testing.T, u string) {
		s := New()
		if _, err := s.createQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String("orders")}); err != nil {
			t.Fatal(err)
		}
		s.mu.Lock()
		q, err := s.lookup(&u)
		s.mu.Unlock()
		parsed, perr := url.Parse(u)
		want := u == "orders" || strings.Contains(u, "/") && perr == nil && queuePath.MatchString(parsed.Path)
		if (q != nil) != want || (q != nil && q.name != "orders") {
			t.Fatalf("URL %q: expect found=%v, got %v, %v", u, want, q, err)
		}
		if q != nil {
			return
		}
		var missing *types.QueueDoesNotExist
		var apiErr smithy.APIError
		if !errors.As(err, &missing) && !(u == "" && errors.As(err, &apiErr) && apiErr.ErrorCode() == "MissingParameter") {
			t.Fatalf("URL %q: expect QueueDoesNotExist, got %v", u, err)
		}
	})
}

const (
	fuzzSourceArn = "arn:aws:sqs:us-east-1:123456789012:orders"
	fuzzDLQArn    = "arn:aws:sqs:us-east-1:123456789012:orders-dlq"
)

// redriveOracle reads a RedrivePolicy as the developer guide describes it:
// a JSON object naming an existing dead-letter queue, other than the queue
// itself, and a maxReceiveCount from 1 to 1000, as a JSON number (a
// double, so 5.0 is 5) or a string of digits.
func redriveOracle(value string) (arn string, count int, ok bool) {
	dec := json.NewDecoder(strings.NewReader(value))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return "", 0, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return "", 0, false // trailing data
	}
	obj, isObj := v.(map[string]any)
	if !isObj {
		return "", 0, false
	}
	arn, _ = obj["deadLetterTargetArn"].(string)
	switch n := obj["maxReceiveCount"].(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(n), 64)
		if err == nil && f == math.Trunc(f) && f >= 1 && f <= 1000 {
			count = int(f)
		}
	case string:
		if regexp.MustCompile(`^[+-]?[0-9]+$`).MatchString(n) {
			if b, ok := new(big.Int).SetString(strings.TrimPrefix(n, "+"), 10); ok && b.IsInt64() && b.Int64() >= 1 && b.Int64() <= 1000 {
				count = int(b.Int64())
			}
		}
	}
	return arn, count, arn == fuzzDLQArn && count > 0
}

// FuzzRedrivePolicy: a RedrivePolicy is accepted exactly when the oracle
// accepts it, with the same target and count; refusals are
// InvalidAttributeValue.
func FuzzRedrivePolicy(f *testing.F) {
	for _, v := range []string{
		`{"deadLetterTargetArn":"` + fuzzDLQArn + `","maxReceiveCount":5}`,
		`{"deadLetterTargetArn":"` + fuzzDLQArn + `","maxReceiveCount":"10"}`,
		`{"deadLetterTargetArn":"` + fuzzDLQArn + `","maxReceiveCount":5.0}`,
		`{"deadLetterTargetArn":"` + fuzzDLQArn + `","maxReceiveCount":1e3}`,
		`{"deadLetterTargetArn":"` + fuzzDLQArn + `","maxReceiveCount":1001}`,
		`{"deadLetterTargetArn":"` + fuzzSourceArn + `","maxReceiveCount":5}`,
		`{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:123456789012:nope","maxReceiveCount":5}`,
		`{"maxReceiveCount":5}`, `[]`, `null`, `{`, ``, `{"deadLetterTargetArn":5,"maxReceiveCount":5}`,
		`{"deadLetterTargetArn":"` + fuzzDLQArn + `","maxReceiveCount":"+7"}`,
	} {
		f.Add(v)
	}
	dlq := &queue{name: "orders-dlq", arn: fuzzDLQArn}
	c := attrContext{arn: fuzzSourceArn, lookupArn: func(arn string) (*queue, bool) { return dlq, arn == fuzzDLQArn }}
	f.Fuzz(func(t *testing.T, value string) {
		p, err := parseRedrive(value, c)
		if value == "" {
			if p != nil || err != nil {
				t.Fatalf("an empty policy removes redrive: got %v, %v", p, err)
			}
			return
		}
		arn, count, ok := redriveOracle(value)
		if (err == nil) != ok {
			t.Fatalf("policy %q: expect accepted=%v, got %+v, %v", value, ok, p, err)
		}
		if ok && (p.DeadLetterTargetArn != arn || p.MaxReceiveCount != count) {
			t.Fatalf("policy %q: expect %s, %d, got %+v", value, arn, count, p)
		}
		var invalid *types.InvalidAttributeValue
		if err != nil && !errors.As(err, &invalid) {
			t.Fatalf("policy %q: expect InvalidAttributeValue, got %v", value, err)
		}
	})
}

var wireOps = []string{"CreateQueue", "GetQueueUrl", "GetQueueAttributes", "SetQueueAttributes", "DeleteQueue", "PurgeQueue", "ListQueues",
	"ListDeadLetterSourceQueues", "TagQueue", "UntagQueue", "ListQueueTags", "SendMessage", "SendMessageBatch", "ReceiveMessage", "DeleteMessage",
	"DeleteMessageBatch", "ChangeMessageVisibility", "ChangeMessageVisibilityBatch", "StartMessageMoveTask", "ListMessageMoveTasks",
	"CancelMessageMoveTask", "AddPermission", "RemovePermission", "LaunchRockets"}

// FuzzWireRequest feeds the JSON 1.0 endpoint any body for any operation.
// It never panics; it answers 200 with a JSON object, or an error the SDKs
// read (a JSON body whose __type names an SQS shape, and the
// x-amzn-query-error header), or, only when the caller's ctx ended, drops
// the connection; a body that is not JSON, for an operation sqsfake runs,
// is a SerializationException and counts no call; and a message SendMessage accepted has the MD5 of the
// body the JSON held.
func FuzzWireRequest(f *testing.F) {
	const url = `"QueueUrl":"http://127.0.0.1:9324/123456789012/orders"`
	for i, body := range []string{
		`{` + url + `,"MessageBody":"hello","MessageAttributes":{"n":{"DataType":"Number","StringValue":"1.5"},"b":{"DataType":"Binary","BinaryValue":"AAE="}}}`,
		`{` + url + `,"MessageBody":"\u00e9\ud83d\ude00\u0000"}`,
		`{` + url + `,"Entries":[{"Id":"1","MessageBody":"a"},{"Id":"1","MessageBody":"b"}]}`,
		`{` + url + `,"MaxNumberOfMessages":10,"WaitTimeSeconds":20,"MessageAttributeNames":["All"]}`,
		`{` + url + `,"ReceiptHandle":"c3FzZmFrZXwxfDJ8MQ"}`,
		`{"QueueName":"q.fifo","Attributes":{"FifoQueue":"true","RedrivePolicy":"{}"}}`,
		`{` + url + `,"Attributes":{"VisibilityTimeout":"-1"}}`,
		`{"QueueUrl":5}`, `{`, ``, `null`, `[]`, `{"MessageBody":"x"}`,
	} {
		f.Add(uint8(i), []byte(body))
	}
	f.Fuzz(func(t *testing.T, opIndex uint8, body []byte) {
		s := New()
		ctx := context.Background()
		if _, err := s.createQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders")}); err != nil {
			t.Fatal(err)
		}
		s.ResetCalls()
		op := wireOps[int(opIndex)%len(wireOps)]
		callCtx, cancel := context.WithTimeout(ctx, 5*time.Millisecond) // long polls end soon
		defer cancel()
		resp := s.serve(callCtx, wireRequest{endpoint: "http://127.0.0.1:9324", target: targetPrefix + op, body: body})
		if resp.drop != nil {
			if callCtx.Err() == nil {
				t.Fatalf("%s %q: connection dropped: %v", op, body, resp.drop)
			}
			return
		}
		if !json.Valid(resp.body) {
			t.Fatalf("%s %q: answer is not JSON: %d %q", op, body, resp.status, resp.body)
		}
		if resp.status != 200 {
			var e struct {
				Type string `json:"__type"`
			}
			_ = json.Unmarshal(resp.body, &e)
			code, fault, _ := strings.Cut(resp.header.Get("X-Amzn-Query-Error"), ";")
			if !strings.HasPrefix(e.Type, "com.amazonaws.sqs#") || code == "" || (fault != "Sender" && fault != "Receiver") || resp.status < 400 {
				t.Fatalf("%s %q: error answer SDKs cannot read: %d %q %v", op, body, resp.status, resp.body, resp.header)
			}
		}
		if known := op != "LaunchRockets"; known && len(body) > 0 && !json.Valid(body) {
			if resp.status != 400 || !strings.Contains(string(resp.body), "SerializationException") || s.Calls().Total() != 0 {
				t.Fatalf("%s %q: expect a SerializationException and no call, got %d %q, %v", op, body, resp.status, resp.body, s.Calls().Op)
			}
		}
		if op == "SendMessage" && resp.status == 200 {
			var in struct{ MessageBody string }
			var out struct{ MD5OfMessageBody string }
			if json.Unmarshal(body, &in) != nil || json.Unmarshal(resp.body, &out) != nil {
				t.Fatalf("SendMessage %q: cannot read the request or the answer %q", body, resp.body)
			}
			sum := md5.Sum([]byte(in.MessageBody))
			if out.MD5OfMessageBody != hex.EncodeToString(sum[:]) {
				t.Fatalf("SendMessage %q: MD5 %s is not the body's", body, out.MD5OfMessageBody)
			}
		}
	})
}

// FuzzQueryRequest feeds the query protocol any form for any operation. It
// never panics and answers XML: 200 with the operation's response element,
// or an ErrorResponse with a code.
func FuzzQueryRequest(f *testing.F) {
	const url = "QueueUrl=http%3A%2F%2F127.0.0.1%3A9324%2F123456789012%2Forders"
	for i, form := range []string{
		url + "&MessageBody=hello&MessageAttribute.1.Name=n&MessageAttribute.1.Value.DataType=Number&MessageAttribute.1.Value.StringValue=1.5",
		url + "&SendMessageBatchRequestEntry.1.Id=a&SendMessageBatchRequestEntry.1.MessageBody=x&SendMessageBatchRequestEntry.1.DelaySeconds=0",
		url + "&MaxNumberOfMessages=10&AttributeName.1=All&MessageAttributeName.1=All&VisibilityTimeout=0",
		"QueueName=q.fifo&Attribute.1.Name=FifoQueue&Attribute.1.Value=true&Tag.1.Key=k&Tag.1.Value=v",
		url + "&MessageBody=%ED%A0%80", url + "&DelaySeconds=x", "%zz", "", "MessageBody=x",
	} {
		f.Add(uint8(i), []byte(form))
	}
	f.Fuzz(func(t *testing.T, opIndex uint8, form []byte) {
		s := New()
		ctx := context.Background()
		if _, err := s.createQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders")}); err != nil {
			t.Fatal(err)
		}
		op := wireOps[int(opIndex)%len(wireOps)]
		callCtx, cancel := context.WithTimeout(ctx, 5*time.Millisecond) // long polls end soon
		defer cancel()
		body := append([]byte("Action="+op+"&"), form...)
		resp := s.serve(callCtx, wireRequest{endpoint: "http://127.0.0.1:9324", path: "/", contentType: "application/x-www-form-urlencoded", body: body})
		if resp.drop != nil {
			if callCtx.Err() == nil {
				t.Fatalf("%s %q: connection dropped: %v", op, form, resp.drop)
			}
			return
		}
		doc := string(resp.body)
		switch {
		case resp.status == 200 && strings.Contains(doc, "<"+op+"Response "):
		case resp.status >= 400 && strings.Contains(doc, "<ErrorResponse ") && strings.Contains(doc, "<Code>"):
		default:
			t.Fatalf("%s %q: answer clients cannot read: %d %q", op, form, resp.status, doc)
		}
	})
}

// FuzzDecodeFast: a body decodeFast accepts is one encoding/json decodes to
// the same input, and probeZeros finds the same explicit zeros in; so the
// fast path changes nothing an answer depends on.
func FuzzDecodeFast(f *testing.F) {
	const url = `"QueueUrl":"http://127.0.0.1:9324/123456789012/orders"`
	for i, body := range []string{
		`{` + url + `,"MessageBody":"{\"order\":42}","DelaySeconds":0,"MessageGroupId":"g","MessageDeduplicationId":"d"}`,
		`{"Entries":[{"Id":"0","MessageBody":"a\u00e9\ud83d\ude00\n","DelaySeconds":-0},{"Id":"1","MessageBody":"b","DelaySeconds":5}],` + url + `}`,
		`{"MaxNumberOfMessages":10,` + url + `,"VisibilityTimeout":0,"WaitTimeSeconds":20,"AttributeNames":["All"],"MessageSystemAttributeNames":[],"MessageAttributeNames":["a.*"],"ReceiveRequestAttemptId":"x"}`,
		`{` + url + `,"ReceiptHandle":"c3FzZmFrZXwxfDJ8MQ"}`,
		`{"Entries":[{"Id":"0","ReceiptHandle":"c3FzZmFrZXwxfDJ8MQ"}],` + url + `}`,
		`{` + url + `,"ReceiptHandle":"h","VisibilityTimeout":43200}`,
		` { "Entries" : [ { "Id" : "0" , "ReceiptHandle" : "h" , "VisibilityTimeout" : 2147483647 } ] } `,
		`{"maxnumberofmessages":0,` + url + `}`, `{"DelaySeconds":1,"DelaySeconds":0}`, `{"QueueUrl":null}`,
		`{"DelaySeconds":1e1}`, `{"DelaySeconds":2147483648}`, `{"MessageBody":"\ud800"}`, "{\"MessageBody\":\"\xff\"}",
		`{"Entries":[]}`, `{}`, `{"Entries":[{}]}x`,
	} {
		f.Add(uint8(i), []byte(body))
	}
	f.Fuzz(func(t *testing.T, kind uint8, body []byte) {
		switch kind % 7 {
		case 0:
			decodesAsJSON[sqs.SendMessageInput](t, body)
		case 1:
			decodesAsJSON[sqs.SendMessageBatchInput](t, body)
		case 2:
			decodesAsJSON[sqs.ReceiveMessageInput](t, body)
		case 3:
			decodesAsJSON[sqs.DeleteMessageInput](t, body)
		case 4:
			decodesAsJSON[sqs.DeleteMessageBatchInput](t, body)
		case 5:
			decodesAsJSON[sqs.ChangeMessageVisibilityInput](t, body)
		case 6:
			decodesAsJSON[sqs.ChangeMessageVisibilityBatchInput](t, body)
		}
	})
}

func decodesAsJSON[In any](t *testing.T, body []byte) {
	fast := new(In)
	zeros, ok := decodeFast(body, fast)
	if !ok {
		return
	}
	want := new(In)
	if err := json.Unmarshal(body, want); err != nil {
		t.Fatalf("%T %q: decodeFast accepted what encoding/json refuses: %v", want, body, err)
	}
	if !reflect.DeepEqual(fast, want) {
		t.Fatalf("%T %q: expect %+v, got %+v", want, body, want, fast)
	}
	wantZeros := probeZeros(want, body)
	same := zeros.visibility == wantZeros.visibility && zeros.wait == wantZeros.wait && zeros.maxMessages == wantZeros.maxMessages && zeros.delay == wantZeros.delay
	for i := range 12 {
		same = same && zeros.entryDelayZero(i) == wantZeros.entryDelayZero(i)
	}
	if !same {
		t.Fatalf("%T %q: expect explicit zeros %+v, got %+v", want, body, wantZeros, zeros)
	}
}
