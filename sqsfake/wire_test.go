package sqsfake_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/sqskit/sqskit/internal/sqsrule"
	"github.com/sqskit/sqskit/sqsfake"
)

// errShape is what a caller can learn from an error of the SDK client.
type errShape struct {
	Op            string // OperationError's operation
	InvalidParams bool   // refused by the SDK before sending
	Status        int    // HTTP status of the ResponseError, 0 without one
	HasRequestID  bool
	Code          string // smithy.APIError code
	Fault         smithy.ErrorFault
	Type          string // Go type of the API error
}

func shapeOf(err error) errShape {
	var s errShape
	var opErr *smithy.OperationError
	if errors.As(err, &opErr) {
		s.Op = opErr.OperationName
	}
	var invalid smithy.InvalidParamsError
	s.InvalidParams = errors.As(err, &invalid)
	var respErr *awshttp.ResponseError
	if errors.As(err, &respErr) {
		s.Status = respErr.HTTPStatusCode()
		s.HasRequestID = respErr.ServiceRequestID() != ""
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		s.Code, s.Fault, s.Type = apiErr.ErrorCode(), apiErr.ErrorFault(), fmt.Sprintf("%T", apiErr)
	}
	return s
}

// differential runs the same calls through two clients of two identical
// servers and compares what each call returned.
type differential struct {
	t       *testing.T
	ctx     context.Context
	inProc  *sqs.Client
	overNet *sqs.Client
	netURL  string
}

// call runs fn on both clients; want, if not zero, is the error shape both
// must show. Outputs must be equal once queue URLs are made host-neutral.
func (d *differential) call(name string, want *errShape, fn func(*sqs.Client) (any, error)) {
	d.t.Helper()
	a, errA := fn(d.inProc)
	b, errB := fn(d.overNet)
	sa, sb := shapeOf(errA), shapeOf(errB)
	if (errA == nil) != (errB == nil) || sa != sb {
		d.t.Fatalf("%s: in process %+v (%v), over HTTP %+v (%v)", name, sa, errA, sb, errB)
	}
	if want != nil && sa != *want {
		d.t.Fatalf("%s: expect %+v, got %+v (%v)", name, *want, sa, errA)
	}
	if want == nil && errA != nil {
		d.t.Fatalf("%s: expect success, got %v", name, errA)
	}
	if errA != nil {
		return
	}
	ja, jb := d.normalize(a, "https://sqs.us-east-1.amazonaws.com"), d.normalize(b, d.netURL)
	if ja != jb {
		d.t.Fatalf("%s: results differ\nin process: %s\nover HTTP:  %s", name, ja, jb)
	}
}

// normalize renders an output without its metadata and with its queue URLs'
// scheme and host replaced.
func (d *differential) normalize(out any, base string) string {
	v := reflect.ValueOf(out).Elem()
	if f := v.FieldByName("ResultMetadata"); f.IsValid() {
		f.Set(reflect.Zero(f.Type()))
	}
	j, err := json.Marshal(out)
	if err != nil {
		d.t.Fatal(err)
	}
	return strings.ReplaceAll(string(j), base, "BASE")
}

func newPair(t *testing.T) *differential {
	mk := func() *sqsfake.Server {
		clock := sqsfake.NewManualClock(start)
		return sqsfake.New(func(o *sqsfake.Options) { o.Clock = clock })
	}
	hs := sqsfake.StartHTTP(t, mk())
	return &differential{t: t, ctx: context.Background(), inProc: mk().Client(), overNet: hs.SDKClient(), netURL: hs.URL}
}

// The in-process Client and an SDK client over HTTP see the same errors (type,
// code, fault, HTTP status, request id; the SDK's own validation for nil
// required members) and the same results, call by call.
func TestInProcessMatchesHTTP(t *testing.T) {
	d := newPair(t)
	ctx := d.ctx
	invalid := func(op string) *errShape { return &errShape{Op: op, InvalidParams: true} }
	generic := func(op, code string) *errShape {
		return &errShape{Op: op, Status: 400, HasRequestID: true, Code: code, Fault: smithy.FaultClient, Type: "*smithy.GenericAPIError"}
	}
	typed := func(op string, status int, code string, typ any) *errShape {
		return &errShape{Op: op, Status: status, HasRequestID: true, Code: code, Fault: smithy.FaultClient, Type: fmt.Sprintf("%T", typ)}
	}
	url := func(c *sqs.Client, name string) *string {
		out, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
		if err != nil {
			t.Fatal(err)
		}
		return out.QueueUrl
	}

	d.call("create queue", nil, func(c *sqs.Client) (any, error) {
		return c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders"), Tags: map[string]string{"team": "pay"}})
	})
	d.call("create FIFO queue", nil, func(c *sqs.Client) (any, error) {
		return c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders.fifo"), Attributes: map[string]string{"FifoQueue": "true"}})
	})
	d.call("create without a name", invalid("CreateQueue"), func(c *sqs.Client) (any, error) {
		return c.CreateQueue(ctx, &sqs.CreateQueueInput{})
	})
	d.call("create with a bad name", generic("CreateQueue", "InvalidParameterValue"), func(c *sqs.Client) (any, error) {
		return c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("bad name")})
	})
	d.call("FifoQueue=false on a standard queue", typed("CreateQueue", 400, "InvalidAttributeName", &types.InvalidAttributeName{}), func(c *sqs.Client) (any, error) {
		return c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("std"), Attributes: map[string]string{"FifoQueue": "false"}})
	})
	d.call("create again with other attributes", typed("CreateQueue", 400, "QueueAlreadyExists", &types.QueueNameExists{}), func(c *sqs.Client) (any, error) {
		return c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders"), Attributes: map[string]string{"DelaySeconds": "5"}})
	})
	d.call("missing queue", typed("GetQueueUrl", 400, "AWS.SimpleQueueService.NonExistentQueue", &types.QueueDoesNotExist{}), func(c *sqs.Client) (any, error) {
		return c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("missing")})
	})
	d.call("send without a body", invalid("SendMessage"), func(c *sqs.Client) (any, error) {
		return c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: url(c, "orders")})
	})
	d.call("send without a queue", invalid("SendMessage"), func(c *sqs.Client) (any, error) {
		return c.SendMessage(ctx, &sqs.SendMessageInput{MessageBody: aws.String("x")})
	})
	d.call("attribute without a data type", invalid("SendMessage"), func(c *sqs.Client) (any, error) {
		return c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: url(c, "orders"), MessageBody: aws.String("x"),
			MessageAttributes: map[string]types.MessageAttributeValue{"a": {StringValue: aws.String("v")}}})
	})
	d.call("body with a NUL", typed("SendMessage", 400, "InvalidMessageContents", &types.InvalidMessageContents{}), func(c *sqs.Client) (any, error) {
		return c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: url(c, "orders"), MessageBody: aws.String("a\x00b")})
	})
	d.call("number out of range", generic("SendMessage", "InvalidParameterValue"), func(c *sqs.Client) (any, error) {
		return c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: url(c, "orders"), MessageBody: aws.String("x"),
			MessageAttributes: map[string]types.MessageAttributeValue{"n": {DataType: aws.String("Number"), StringValue: aws.String("1E+200")}}})
	})
	d.call("send with every kind of attribute", nil, func(c *sqs.Client) (any, error) {
		return c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: url(c, "orders"), MessageBody: aws.String("hello ✓ \U0001F600"), DelaySeconds: 0,
			MessageAttributes: map[string]types.MessageAttributeValue{
				"s": {DataType: aws.String("String"), StringValue: aws.String("text \"quoted\" \\ \n")},
				"n": {DataType: aws.String("Number.int"), StringValue: aws.String("-12.5e3")},
				"b": {DataType: aws.String("Binary"), BinaryValue: []byte{0, 1, 2, 0xff, 0xfe}},
			},
			MessageSystemAttributes: map[string]types.MessageSystemAttributeValue{
				"AWSTraceHeader": {DataType: aws.String("String"), StringValue: aws.String("Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1")},
			}})
	})
	d.call("batch without entries", invalid("SendMessageBatch"), func(c *sqs.Client) (any, error) {
		return c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: url(c, "orders")})
	})
	d.call("empty batch", typed("SendMessageBatch", 400, "AWS.SimpleQueueService.EmptyBatchRequest", &types.EmptyBatchRequest{}), func(c *sqs.Client) (any, error) {
		return c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: url(c, "orders"), Entries: []types.SendMessageBatchRequestEntry{}})
	})
	d.call("batch with one bad entry", nil, func(c *sqs.Client) (any, error) {
		return c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: url(c, "orders"), Entries: []types.SendMessageBatchRequestEntry{
			{Id: aws.String("ok"), MessageBody: aws.String("fine")}, {Id: aws.String("bad"), MessageBody: aws.String("\x07")},
		}})
	})
	d.call("FIFO send", nil, func(c *sqs.Client) (any, error) {
		return c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: url(c, "orders.fifo"), MessageBody: aws.String("x"), MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String("d")})
	})
	d.call("FIFO send without a group", generic("SendMessage", "MissingParameter"), func(c *sqs.Client) (any, error) {
		return c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: url(c, "orders.fifo"), MessageBody: aws.String("x"), MessageDeduplicationId: aws.String("d")})
	})
	d.call("receive everything", nil, func(c *sqs.Client) (any, error) {
		return c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url(c, "orders"), MaxNumberOfMessages: 10,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{"All"}, MessageAttributeNames: []string{"All"}})
	})
	d.call("receive a FIFO message", nil, func(c *sqs.Client) (any, error) {
		return c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url(c, "orders.fifo"), MessageSystemAttributeNames: []types.MessageSystemAttributeName{"All"}})
	})
	d.call("malformed receipt handle", typed("DeleteMessage", 404, "ReceiptHandleIsInvalid", &types.ReceiptHandleIsInvalid{}), func(c *sqs.Client) (any, error) {
		return c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: url(c, "orders"), ReceiptHandle: aws.String("garbage")})
	})
	d.call("delete without a handle", invalid("DeleteMessage"), func(c *sqs.Client) (any, error) {
		return c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: url(c, "orders")})
	})
	d.call("set attributes without attributes", invalid("SetQueueAttributes"), func(c *sqs.Client) (any, error) {
		return c.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: url(c, "orders")})
	})
	d.call("bad attribute value", typed("SetQueueAttributes", 400, "InvalidAttributeValue", &types.InvalidAttributeValue{}), func(c *sqs.Client) (any, error) {
		return c.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: url(c, "orders"), Attributes: map[string]string{"Policy": "not json"}})
	})
	d.call("queue attributes", nil, func(c *sqs.Client) (any, error) {
		return c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: url(c, "orders"), AttributeNames: []types.QueueAttributeName{"All"}})
	})
	d.call("purge", nil, func(c *sqs.Client) (any, error) {
		return c.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: url(c, "orders")})
	})
	d.call("purge again", typed("PurgeQueue", 403, "AWS.SimpleQueueService.PurgeQueueInProgress", &types.PurgeQueueInProgress{}), func(c *sqs.Client) (any, error) {
		return c.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: url(c, "orders")})
	})
	d.call("list queues", nil, func(c *sqs.Client) (any, error) { return c.ListQueues(ctx, &sqs.ListQueuesInput{}) })
	d.call("list tags", nil, func(c *sqs.Client) (any, error) {
		return c.ListQueueTags(ctx, &sqs.ListQueueTagsInput{QueueUrl: url(c, "orders")})
	})
	d.call("reserved tag", generic("TagQueue", "InvalidParameterValue"), func(c *sqs.Client) (any, error) {
		return c.TagQueue(ctx, &sqs.TagQueueInput{QueueUrl: url(c, "orders"), Tags: map[string]string{"aws:owner": "x"}})
	})
	d.call("move from a missing queue", typed("StartMessageMoveTask", 404, "ResourceNotFoundException", &types.ResourceNotFoundException{}), func(c *sqs.Client) (any, error) {
		return c.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String("arn:aws:sqs:us-east-1:123456789012:missing")})
	})
	d.call("list move tasks without a source", invalid("ListMessageMoveTasks"), func(c *sqs.Client) (any, error) {
		return c.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{})
	})
}

// Over HTTP, queue URLs point back at the server, so clients that route by
// them (other SDKs, the AWS CLI) reach it.
func TestQueueURLsPointAtTheHTTPServer(t *testing.T) {
	hs := sqsfake.StartHTTP(t, sqsfake.New())
	out, err := hs.SDKClient().CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String("orders")})
	if err != nil {
		t.Fatal(err)
	}
	if want := hs.URL + "/123456789012/orders"; aws.ToString(out.QueueUrl) != want {
		t.Fatalf("expect %s, got %s", want, aws.ToString(out.QueueUrl))
	}
}

// rawCall posts an AWS JSON 1.0 request as any language would, unsigned.
func rawCall(t *testing.T, url, op, body string) (*http.Response, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "AmazonSQS."+op)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	raw, _ := io.ReadAll(resp.Body)
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("%s: answer is not JSON: %s", op, raw)
		}
	}
	return resp, out
}

// The wire format as another language sees it: member names, base64
// binaries, MD5s, and errors with __type and x-amzn-query-error.
func TestWireFormatForOtherLanguages(t *testing.T) {
	hs := sqsfake.StartHTTP(t, sqsfake.New())
	resp, out := rawCall(t, hs.URL, "CreateQueue", `{"QueueName":"orders"}`)
	if resp.StatusCode != 200 || out["QueueUrl"] != hs.URL+"/123456789012/orders" {
		t.Fatalf("create: %d %v", resp.StatusCode, out)
	}
	queueURL := out["QueueUrl"].(string)
	send := fmt.Sprintf(`{"QueueUrl":%q,"MessageBody":"hi","MessageAttributes":{"b":{"DataType":"Binary","BinaryValue":"AAH/"}},
		"MessageSystemAttributes":{"AWSTraceHeader":{"DataType":"String","StringValue":"Root=1-abc"}}}`, queueURL)
	resp, out = rawCall(t, hs.URL, "SendMessage", send)
	attrs := map[string]types.MessageAttributeValue{"b": {DataType: aws.String("Binary"), BinaryValue: []byte{0, 1, 0xff}}}
	system := map[string]types.MessageSystemAttributeValue{"AWSTraceHeader": {DataType: aws.String("String"), StringValue: aws.String("Root=1-abc")}}
	if resp.StatusCode != 200 || out["MD5OfMessageBody"] != sqsrule.MD5OfBody("hi") || out["MD5OfMessageAttributes"] != sqsrule.MD5OfAttributes(attrs) ||
		out["MD5OfMessageSystemAttributes"] != sqsrule.MD5OfSystemAttributes(system) {
		t.Fatalf("send: %d %v", resp.StatusCode, out)
	}
	_, out = rawCall(t, hs.URL, "ReceiveMessage", fmt.Sprintf(`{"QueueUrl":%q,"MessageAttributeNames":["All"]}`, queueURL))
	msgs, _ := out["Messages"].([]any)
	if len(msgs) != 1 {
		t.Fatalf("receive: %v", out)
	}
	m := msgs[0].(map[string]any)
	b := m["MessageAttributes"].(map[string]any)["b"].(map[string]any)
	if b["BinaryValue"] != "AAH/" || b["DataType"] != "Binary" || m["Body"] != "hi" {
		t.Fatalf("expect the binary attribute as base64, got %v", m)
	}
	resp, out = rawCall(t, hs.URL, "GetQueueUrl", `{"QueueName":"missing"}`)
	if resp.StatusCode != 400 || out["__type"] != "com.amazonaws.sqs#QueueDoesNotExist" || out["message"] == nil ||
		resp.Header.Get("X-Amzn-Query-Error") != "AWS.SimpleQueueService.NonExistentQueue;Sender" || resp.Header.Get("X-Amzn-Requestid") == "" {
		t.Fatalf("missing queue: %d %v %v", resp.StatusCode, resp.Header, out)
	}
	resp, out = rawCall(t, hs.URL, "NoSuchThing", `{}`)
	if resp.StatusCode != 400 || !strings.HasSuffix(out["__type"].(string), "UnknownOperationException") {
		t.Fatalf("unknown operation: %d %v", resp.StatusCode, out)
	}
}

// Injected faults reach SDK clients over HTTP as the service's failures
// would, so the SDK's retryer acts on them as in production.
func TestFaultsOverHTTP(t *testing.T) {
	ctx := context.Background()
	boom := errors.New("boom")
	cases := []struct {
		name  string
		fault sqsfake.Fault
		// stored is how many messages one SendMessage leaves; calls how
		// many attempts the SDK made (it retries twice at most).
		stored, calls int
	}{
		{"internal failure is retried", sqsfake.Fault{Times: 1}, 1, 2},
		{"throttling is retried", sqsfake.Fault{Times: 1, Err: sqsfake.ErrThrottled}, 1, 2},
		{"a lost acknowledgement duplicates", sqsfake.Fault{Times: 1, AfterApply: true}, 2, 2},
		{"a dropped connection is retried", sqsfake.Fault{Times: 1, DropConnection: true}, 1, 2},
		{"a dropped connection after applying duplicates", sqsfake.Fault{Times: 1, DropConnection: true, AfterApply: true}, 2, 2},
		{"a 503 from a proxy is retried", sqsfake.Fault{Times: 1, Status: 503}, 1, 2},
		{"a Go error drops the connection", sqsfake.Fault{Times: 1, Err: boom}, 1, 2},
		{"a client error is not retried", sqsfake.Fault{Times: 1, Err: &types.QueueDoesNotExist{}}, 0, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := sqsfake.New()
			hs := sqsfake.StartHTTP(t, srv)
			client := hs.SDKClient(func(o *sqs.Options) {
				o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
					so.MaxAttempts = 3
					so.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil }) // no real sleeps in tests
				})
			})
			q, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("q")})
			if err != nil {
				t.Fatal(err)
			}
			c.fault.Op = "SendMessage"
			h := srv.Inject(c.fault)
			_, err = client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("x")})
			if (err == nil) != (c.calls == 2) {
				t.Fatalf("unexpected result %v", err)
			}
			if got := srv.Calls().Op["SendMessage"]; got != c.calls || h.Fired() != 1 {
				t.Fatalf("expect %d attempts and one firing, got %d and %d", c.calls, got, h.Fired())
			}
			a, _ := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl, AttributeNames: []types.QueueAttributeName{"ApproximateNumberOfMessages"}})
			if got := a.Attributes["ApproximateNumberOfMessages"]; got != fmt.Sprint(c.stored) {
				t.Fatalf("expect %d stored, got %s", c.stored, got)
			}
		})
	}
}

// In process the client does not retry, and each fault shows as the SDK
// would report it.
func TestFaultsInProcess(t *testing.T) {
	ctx := context.Background()
	boom := errors.New("boom")
	check := func(t *testing.T, f sqsfake.Fault, ok func(error) bool) {
		t.Helper()
		srv := sqsfake.New()
		client := srv.Client()
		q, _ := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("q")})
		f.Op, f.Times = "SendMessage", 1
		srv.Inject(f)
		_, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("x")})
		if !ok(err) {
			t.Fatalf("unexpected error %T: %v", err, err)
		}
		if n := srv.Calls().Op["SendMessage"]; n != 1 {
			t.Fatalf("expect one attempt, got %d", n)
		}
	}
	status := func(code int) func(error) bool {
		return func(err error) bool {
			var re *awshttp.ResponseError
			return errors.As(err, &re) && re.HTTPStatusCode() == code
		}
	}
	t.Run("internal failure is a 500", func(t *testing.T) { check(t, sqsfake.Fault{}, status(500)) })
	t.Run("throttling is typed", func(t *testing.T) {
		check(t, sqsfake.Fault{Err: sqsfake.ErrThrottled}, func(err error) bool {
			var th *types.RequestThrottled
			return errors.As(err, &th) && th.ErrorCode() == "RequestThrottled" && status(403)(err)
		})
	})
	t.Run("a Go error passes through", func(t *testing.T) {
		check(t, sqsfake.Fault{Err: boom}, func(err error) bool { return errors.Is(err, boom) })
	})
	t.Run("a dropped connection is EOF", func(t *testing.T) {
		check(t, sqsfake.Fault{DropConnection: true}, func(err error) bool { return errors.Is(err, io.EOF) })
	})
	t.Run("a bare status", func(t *testing.T) { check(t, sqsfake.Fault{Status: 502}, status(502)) })
}

// Shutdown answers long polls at once instead of holding them to their wait
// time.
func TestShutdownEndsLongPolls(t *testing.T) {
	clock := sqsfake.NewManualClock(start)
	srv := sqsfake.New(func(o *sqsfake.Options) { o.Clock = clock })
	hs, err := sqsfake.NewHTTPServer(srv)
	if err != nil {
		t.Fatal(err)
	}
	client := hs.SDKClient()
	q, err := client.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String("q")})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		out, err := client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, WaitTimeSeconds: 20})
		if err == nil && len(out.Messages) != 0 {
			err = errors.New("expect no messages")
		}
		done <- err
	}()
	wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := clock.WaitForTimers(wctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := hs.Shutdown(wctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("expect an empty answer, got %v", err)
	}
}

// A request log names the operation, queue, status and duration, never a
// body.
func TestRequestLog(t *testing.T) {
	var buf bytes.Buffer
	srv := sqsfake.New(func(o *sqsfake.Options) { o.Logger = newTextLogger(&buf) })
	client := srv.Client()
	q, _ := client.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String("orders")})
	_, _ = client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("secret-body")})
	_, _ = client.GetQueueUrl(context.Background(), &sqs.GetQueueUrlInput{QueueName: aws.String("missing")})
	log := buf.String()
	for _, want := range []string{"op=SendMessage queue=orders status=200", "op=GetQueueUrl queue=missing status=400", "duration="} {
		if !strings.Contains(log, want) {
			t.Errorf("expect %q in the log:\n%s", want, log)
		}
	}
	if strings.Contains(log, "secret-body") {
		t.Errorf("expect no bodies in the log:\n%s", log)
	}
}

// A corrupted checksum fails the call in the SDK after it took effect, in
// process and over HTTP alike.
func TestFaultCorruptChecksum(t *testing.T) {
	for _, overHTTP := range []bool{false, true} {
		t.Run(fmt.Sprint("http=", overHTTP), func(t *testing.T) {
			ctx := context.Background()
			srv := sqsfake.New()
			client := srv.Client()
			if overHTTP {
				client = sqsfake.StartHTTP(t, srv).SDKClient(func(o *sqs.Options) { o.RetryMaxAttempts = 1 })
			}
			q, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("q")})
			if err != nil {
				t.Fatal(err)
			}
			srv.Inject(sqsfake.Fault{Op: "SendMessage", Times: 1, CorruptChecksum: true})
			_, err = client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("x")})
			if err == nil || !strings.Contains(err.Error(), "checksum") {
				t.Fatalf("expect the SDK's checksum error, got %v", err)
			}
			srv.Inject(sqsfake.Fault{Op: "ReceiveMessage", Times: 1, CorruptChecksum: true})
			if _, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl}); err == nil {
				t.Fatal("expect the receive to fail its checksum")
			}
			a, _ := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl, AttributeNames: []types.QueueAttributeName{"All"}})
			if a.Attributes["ApproximateNumberOfMessagesNotVisible"] != "1" {
				t.Fatalf("expect the send stored and the message in flight, got %v", a.Attributes)
			}
		})
	}
}

// Match narrows a fault to the calls whose input it picks.
func TestFaultMatch(t *testing.T) {
	ctx := context.Background()
	srv := sqsfake.New()
	client := srv.Client()
	q, _ := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("q")})
	h := srv.Inject(sqsfake.Fault{Op: "SendMessage", Match: func(op string, in any) bool {
		return aws.ToString(in.(*sqs.SendMessageInput).MessageBody) == "poison"
	}})
	for _, body := range []string{"fine", "poison", "also fine"} {
		_, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String(body)})
		if (err != nil) != (body == "poison") {
			t.Fatalf("%s: unexpected result %v", body, err)
		}
	}
	if h.Fired() != 1 {
		t.Fatalf("expect one firing, got %d", h.Fired())
	}
}
