package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"go.uber.org/goleak"

	"github.com/sqskit/sqskit/replay"
	"github.com/sqskit/sqskit/sqsfake"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The recorded event and environment name this account, region and queues.
const (
	account  = "210987654321"
	region   = "eu-west-1"
	dlqName  = "orders-DeadLetterQueue-8XK2M4P1Q7ZA"
	mainName = "orders-MainQueue-3JD8S0QW9N2V"
)

// world is sqsfake with the recorded queues, and the function's logs.
type world struct {
	t        *testing.T
	srv      *sqsfake.Server
	api      *sqs.Client
	dlq      string
	main     string
	operator string
	env      map[string]string
	logs     *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newWorld creates the recorded queues (FIFO ones when fifo is set, the
// DLQ standard unless fifoDLQ) and loads the recorded environment.
func newWorld(t *testing.T, fifoMain, fifoDLQ bool) *world {
	t.Helper()
	srv := sqsfake.New(func(o *sqsfake.Options) { o.Region, o.AccountID = region, account })
	w := &world{t: t, srv: srv, api: srv.Client(), logs: &syncBuffer{}}
	w.dlq = w.queue(dlqName, fifoDLQ)
	w.main = w.queue(mainName, fifoMain)
	w.operator = w.queue("orders-operator", false)
	var env map[string]map[string]string
	read(t, "testdata/env.json", &env)
	w.env = env["ReplayFunction"]
	if fifoMain {
		w.env["SQS_MAIN_URL"] = w.main
	}
	if w.env["SQS_MAIN_URL"] != w.main {
		t.Fatalf("expect the recorded SQS_MAIN_URL to name the fake's main queue %s, got %s", w.main, w.env["SQS_MAIN_URL"])
	}
	return w
}

func (w *world) queue(name string, fifo bool) string {
	attrs := map[string]string{}
	if fifo {
		name += ".fifo"
		attrs["FifoQueue"] = "true"
		attrs["ContentBasedDeduplication"] = "true"
	}
	out, err := w.api.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		w.t.Fatal(err)
	}
	return *out.QueueUrl
}

func read(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

// handler builds the function as Lambda would at cold start, from the
// environment with the changes given.
func (w *world) handler(changes map[string]string) *handler {
	w.t.Helper()
	env := map[string]string{}
	for k, v := range w.env {
		env[k] = v
	}
	for k, v := range changes {
		env[k] = v
	}
	cfg, err := loadConfig(func(k string) string { return env[k] })
	if err != nil {
		w.t.Fatal(err)
	}
	return newHandler(w.api, cfg, slog.New(slog.NewJSONHandler(w.logs, &slog.HandlerOptions{Level: cfg.level})))
}

// deliver puts the recorded records (those at the indexes given, or all) in
// the DLQ and receives them, as the event source mapping would, and returns
// the recorded event with the fake's message ids, receipt handles and
// timestamps. group, when set, is each record's MessageGroupId (a FIFO
// DLQ).
func (w *world) deliver(group string, only ...int) events.SQSEvent {
	w.t.Helper()
	ctx := context.Background()
	var event events.SQSEvent
	read(w.t, "testdata/event.json", &event)
	if len(only) > 0 {
		var recs []events.SQSMessage
		for _, i := range only {
			recs = append(recs, event.Records[i])
		}
		event.Records = recs
	}
	arn := "arn:aws:sqs:" + region + ":" + account + ":" + dlqName
	if group != "" {
		arn += ".fifo"
	}
	for i := range event.Records {
		rec := &event.Records[i]
		attrs := map[string]types.MessageAttributeValue{}
		for name, v := range rec.MessageAttributes {
			attrs[name] = types.MessageAttributeValue{DataType: aws.String(v.DataType), StringValue: v.StringValue}
		}
		in := &sqs.SendMessageInput{QueueUrl: aws.String(w.dlq), MessageBody: aws.String(rec.Body), MessageAttributes: attrs}
		if group != "" {
			in.MessageGroupId = aws.String(group)
		}
		if _, err := w.api.SendMessage(ctx, in); err != nil {
			w.t.Fatal(err)
		}
		out, err := w.api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(w.dlq),
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}})
		if err != nil || len(out.Messages) != 1 {
			w.t.Fatalf("receive record %d: %v, %d messages", i, err, len(out.Messages))
		}
		m := out.Messages[0]
		rec.MessageId, rec.ReceiptHandle, rec.EventSourceARN = *m.MessageId, *m.ReceiptHandle, arn
		for _, k := range []string{"SentTimestamp", "ApproximateReceiveCount", "ApproximateFirstReceiveTimestamp", "MessageGroupId", "MessageDeduplicationId", "SequenceNumber"} {
			if v, ok := m.Attributes[k]; ok {
				rec.Attributes[k] = v
			}
		}
	}
	return event
}

// invoke runs the handler as the Lambda runtime does: JSON in, JSON out.
func invoke(t *testing.T, h *handler, event events.SQSEvent) (events.SQSEventResponse, error) {
	t.Helper()
	payload, err := json.Marshal(event)
	if err != nil {
		t.Fatal(err)
	}
	out, err := lambda.NewHandler(h.handle).Invoke(context.Background(), payload)
	var resp events.SQSEventResponse
	if err == nil {
		if jerr := json.Unmarshal(out, &resp); jerr != nil {
			t.Fatal(jerr)
		}
	}
	return resp, err
}

// drain receives every visible message of a queue, with its attributes.
func (w *world) drain(url string) []types.Message {
	w.t.Helper()
	out, err := w.api.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10,
		MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}})
	if err != nil {
		w.t.Fatal(err)
	}
	return out.Messages
}

// counts returns a queue's visible, in flight and delayed messages.
func (w *world) counts(url string) (visible, inFlight, delayed int) {
	w.t.Helper()
	out, err := w.api.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
	if err != nil {
		w.t.Fatal(err)
	}
	n := func(k string) int { v, _ := strconv.Atoi(out.Attributes[k]); return v }
	return n("ApproximateNumberOfMessages"), n("ApproximateNumberOfMessagesNotVisible"), n("ApproximateNumberOfMessagesDelayed")
}

func orderOf(m types.Message) string {
	var body struct {
		OrderID string `json:"orderId"`
	}
	_ = json.Unmarshal([]byte(aws.ToString(m.Body)), &body)
	return body.OrderID
}

func attr(m types.Message, name string) string {
	return aws.ToString(m.MessageAttributes[name].StringValue)
}

// checkNoBodies fails if a body, or a user attribute's value, was logged.
func (w *world) checkNoBodies() {
	w.t.Helper()
	for _, secret := range []string{"A-1001", "A-1002", "A-0999", "does-not-exist", "ZX-42", "globex"} {
		if strings.Contains(w.logs.String(), secret) {
			w.t.Errorf("expect no body or attribute value in the logs, found %q in:\n%s", secret, w.logs.String())
		}
	}
}

// The sample's contract, on its recorded event and environment: two records
// replayed to the main queue with the counter, the third (three replays
// already, MAX_ATTEMPS 3) not replayed: the invocation fails so the DLQ's
// redrive policy moves it on, and the two replayed ones are deleted first.
func TestRecordedEventAsTheSample(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, false, false)
		_, err := invoke(t, w.handler(nil), w.deliver(""))
		if err == nil || !strings.Contains(err.Error(), "1 of 3 left in the DLQ") {
			t.Fatalf("expect the invocation to fail for the third record, got %v", err)
		}
		time.Sleep(16 * time.Second) // the longest delay of a second replay: 2·2² s
		got := map[string]types.Message{}
		for _, m := range w.drain(w.main) {
			got[orderOf(m)] = m
		}
		if len(got) != 2 {
			t.Fatalf("expect 2 replays on the main queue, got %d", len(got))
		}
		for order, want := range map[string][2]string{"A-1001": {"1", "acme"}, "A-1002": {"3", "globex"}} {
			m := got[order]
			if c, tenant := attr(m, replay.DefaultCounterAttribute), attr(m, "tenant"); c != want[0] || tenant != want[1] {
				t.Errorf("%s: expect counter %s and tenant %s, got %s and %s", order, want[0], want[1], c, tenant)
			}
			if dt := aws.ToString(m.MessageAttributes[replay.DefaultCounterAttribute].DataType); dt != "Number" {
				t.Errorf("%s: expect the counter a Number, as the sample writes it, got %s", order, dt)
			}
		}
		if p := attr(got["A-1001"], "priority"); p != "5" {
			t.Errorf("expect the priority attribute kept, got %q", p)
		}
		if visible, inFlight, delayed := w.counts(w.dlq); visible+inFlight+delayed != 1 {
			t.Errorf("expect only the third record left in the DLQ, got %d visible, %d in flight, %d delayed", visible, inFlight, delayed)
		}
		if !strings.Contains(w.logs.String(), `"reason":"attempts-exhausted"`) {
			t.Errorf("expect the third record's reason logged, got:\n%s", w.logs.String())
		}
		w.checkNoBodies()
	})
}

// With OPERATOR_QUEUE_URL the third record goes to the operator queue with
// its reason, and the invocation succeeds.
func TestRecordedEventWithOperatorQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, false, false)
		resp, err := invoke(t, w.handler(map[string]string{"OPERATOR_QUEUE_URL": w.operator}), w.deliver(""))
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("expect success, got %v, %v", resp.BatchItemFailures, err)
		}
		esc := w.drain(w.operator)
		if len(esc) != 1 || orderOf(esc[0]) != "A-0999" {
			t.Fatalf("expect A-0999 in the operator queue, got %v", esc)
		}
		var md replay.Metadata
		if err := json.Unmarshal([]byte(attr(esc[0], replay.MetadataAttribute)), &md); err != nil || md.Reason != replay.AttemptsExhausted {
			t.Errorf("expect the reason attempts-exhausted, got %+v, %v", md, err)
		}
		w.checkNoBodies()
	})
}

// With REPORT_BATCH_ITEM_FAILURES the third record is reported alone, and
// Lambda deletes the others: the function deletes nothing itself.
func TestRecordedEventReportingBatchItemFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, false, false)
		event := w.deliver("")
		resp, err := invoke(t, w.handler(map[string]string{"REPORT_BATCH_ITEM_FAILURES": "true"}), event)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != event.Records[2].MessageId {
			t.Errorf("expect the third record reported, got %v", resp.BatchItemFailures)
		}
		if _, inFlight, _ := w.counts(w.dlq); inFlight != 3 {
			t.Errorf("expect the 3 records still in the DLQ for Lambda to settle, got %d", inFlight)
		}
	})
}

// MAX_ATTEMPS 0: never replayed, as in the sample.
func TestMaxAttemptsZero(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, false, false)
		_, err := invoke(t, w.handler(map[string]string{"MAX_ATTEMPS": "0"}), w.deliver(""))
		if !errors.Is(err, errNotReplayed) || !strings.Contains(err.Error(), "3 of 3") {
			t.Fatalf("expect all three records failed, got %v", err)
		}
		time.Sleep(time.Minute)
		if got := w.drain(w.main); len(got) != 0 {
			t.Errorf("expect nothing replayed, got %d", len(got))
		}
	})
}

// The sample's first defect: a delay above 900 s, which SendMessage
// refuses. Here the message waits in the DLQ until due, then goes.
func TestDelaysAbove900sWaitInTheDLQ(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, false, false)
		h := w.handler(map[string]string{"BACKOFF_RATE": "3600", "OPERATOR_QUEUE_URL": w.operator})
		event := w.deliver("", 1) // A-1002, counter 2: replay 3 waits up to 8 h
		m := fromRecord(event.Records[0])
		d := h.policy.Decide(&m, time.Now())
		if d.Action != replay.Replay || d.Delay <= 900*time.Second {
			t.Fatalf("expect a replay after more than 900 s for this message, got %v after %v", d.Action, d.Delay)
		}
		if _, err := invoke(t, h, event); !errors.Is(err, errNotReplayed) {
			t.Fatalf("expect the held record to stay in the DLQ (a failed record), got %v", err)
		}
		if visible, inFlight, delayed := w.counts(w.main); visible+inFlight+delayed != 0 {
			t.Fatalf("expect nothing on the main queue before the delay, got %d", visible+inFlight+delayed)
		}
		time.Sleep(d.Delay - time.Minute)
		if got := w.drain(w.dlq); len(got) != 0 {
			t.Fatalf("expect the message held in the DLQ until due, got it visible %v early", time.Minute)
		}
		time.Sleep(2 * time.Minute)
		event = events.SQSEvent{Records: []events.SQSMessage{toRecord(t, w.drain(w.dlq), event.Records[0])}}
		if _, err := invoke(t, h, event); err != nil {
			t.Fatalf("expect the due message replayed, got %v", err)
		}
		got := w.drain(w.main)
		if len(got) != 1 || attr(got[0], replay.DefaultCounterAttribute) != "3" {
			t.Fatalf("expect replay 3 on the main queue, got %v", got)
		}
	})
}

// The sample's second defect: on a FIFO main queue it drops a message with
// no MessageGroupId (sends nothing, succeeds, and Lambda deletes it). Here
// its record fails, or with an operator queue it is escalated.
func TestFIFOMainQueueMessageWithoutGroupID(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, true, false) // a standard DLQ: its messages have no group id
		event := w.deliver("", 0)
		if _, err := invoke(t, w.handler(nil), event); !errors.Is(err, errNotReplayed) {
			t.Fatalf("expect the record failed, not dropped, got %v", err)
		}
		if !strings.Contains(w.logs.String(), `"reason":"not-routable"`) {
			t.Errorf("expect the reason logged, got:\n%s", w.logs.String())
		}
		if _, inFlight, _ := w.counts(w.dlq); inFlight != 1 {
			t.Errorf("expect the message still in the DLQ, got %d in flight", inFlight)
		}
		resp, err := invoke(t, w.handler(map[string]string{"OPERATOR_QUEUE_URL": w.operator}), event)
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("expect an escalation, got %v, %v", resp, err)
		}
		if esc := w.drain(w.operator); len(esc) != 1 || !strings.Contains(attr(esc[0], replay.MetadataAttribute), string(replay.NotRoutable)) {
			t.Errorf("expect the message in the operator queue as not-routable, got %v", esc)
		}
	})
}

// On a FIFO main queue the sample sends at once, whatever the delay; here a
// replay waits in the DLQ for its delay, and keeps its group.
func TestFIFOReplaysWaitTheirDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, true, true)
		h := w.handler(nil)
		event := w.deliver("acme", 0) // A-1001: replay 1 waits 0 to 3 s
		m := fromRecord(event.Records[0])
		d := h.policy.Decide(&m, time.Now())
		if d.Delay == 0 {
			t.Skip("this message's replay 1 waits 0 s") // sqsfake's ids are fixed, so this is stable
		}
		if _, err := invoke(t, h, event); !errors.Is(err, errNotReplayed) {
			t.Fatalf("expect the record held in the DLQ, got %v", err)
		}
		time.Sleep(d.Delay)
		event = events.SQSEvent{Records: []events.SQSMessage{toRecord(t, w.drain(w.dlq), event.Records[0])}}
		if _, err := invoke(t, h, event); err != nil {
			t.Fatalf("expect the due message replayed, got %v", err)
		}
		got := w.drain(w.main)
		if len(got) != 1 || got[0].Attributes["MessageGroupId"] != "acme" {
			t.Fatalf("expect the replay on the FIFO main queue in group acme, got %v", got)
		}
	})
}

// Without an operator queue, an escalation the replayer decides while
// sending (SQS would refuse the replay as it is) is refused before any call,
// and its record fails: nothing is sent anywhere, nothing is lost.
func TestWithoutOperatorQueueNothingIsEscalated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, false, false)
		event := w.deliver("", 0)
		event.Records[0].MessageAttributes["priority"] = events.SQSMessageAttribute{DataType: "Number", StringValue: aws.String("not a number")}
		h := w.handler(map[string]string{"REPORT_BATCH_ITEM_FAILURES": "true"})
		resp, err := invoke(t, h, event)
		if err != nil || len(resp.BatchItemFailures) != 1 {
			t.Fatalf("expect the record failed, got %v, %v", resp, err)
		}
		if n := w.srv.Calls().Op["SendMessageBatch"]; n != 0 {
			t.Errorf("expect no send at all, got %d SendMessageBatch calls", n)
		}
		time.Sleep(time.Minute)
		for _, q := range []string{w.main, w.operator} {
			if visible, inFlight, delayed := w.counts(q); visible+inFlight+delayed != 0 {
				t.Errorf("expect nothing sent to %s, got %d", q, visible+inFlight+delayed)
			}
		}
	})
}

// An event source that is not an SQS queue ARN fails its records, logged.
func TestUnknownEventSource(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, false, false)
		event := w.deliver("")
		for i := range event.Records {
			event.Records[i].EventSourceARN = "arn:aws:kinesis:eu-west-1:210987654321:stream/orders"
		}
		resp, err := invoke(t, w.handler(map[string]string{"REPORT_BATCH_ITEM_FAILURES": "true"}), event)
		if err != nil || len(resp.BatchItemFailures) != 3 {
			t.Fatalf("expect every record failed, got %v, %v", resp, err)
		}
		if !strings.Contains(w.logs.String(), "not an SQS queue ARN") {
			t.Errorf("expect the reason logged, got:\n%s", w.logs.String())
		}
	})
}

// An OPERATOR_QUEUE_URL naming the DLQ the function reads, however it is
// spelled, fails every record from that DLQ, with the variable named in the
// log: escalating into the DLQ would bring each escalation back to be
// escalated again.
func TestOperatorQueueThatIsTheDLQFailsItsRecords(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, false, false)
		event := w.deliver("")
		dlq, err := queueURL(event.Records[0].EventSourceARN)
		if err != nil {
			t.Fatal(err)
		}
		sameDLQ := strings.Replace(dlq, "https://sqs."+region+".", "https://"+region+".queue.", 1) + "/"
		if sameDLQ == dlq+"/" {
			t.Fatalf("expect the DLQ URL %s spelled another way", dlq)
		}
		resp, err := invoke(t, w.handler(map[string]string{"OPERATOR_QUEUE_URL": sameDLQ, "REPORT_BATCH_ITEM_FAILURES": "true"}), event)
		if err != nil || len(resp.BatchItemFailures) != len(event.Records) {
			t.Fatalf("expect every record failed, got %v, %v", resp, err)
		}
		if !strings.Contains(w.logs.String(), "OPERATOR_QUEUE_URL is the DLQ this function reads") {
			t.Errorf("expect the variable named in the log, got:\n%s", w.logs.String())
		}
		if esc := w.drain(w.operator); len(esc) != 0 {
			t.Errorf("expect nothing escalated, got %d", len(esc))
		}
	})
}

func TestQueueURL(t *testing.T) {
	for arn, want := range map[string]string{
		"arn:aws:sqs:eu-west-1:210987654321:orders-dlq":            "https://sqs.eu-west-1.amazonaws.com/210987654321/orders-dlq",
		"arn:aws-cn:sqs:cn-north-1:210987654321:orders-dlq.fifo":   "https://sqs.cn-north-1.amazonaws.com.cn/210987654321/orders-dlq.fifo",
		"arn:aws-us-gov:sqs:us-gov-west-1:210987654321:orders-dlq": "https://sqs.us-gov-west-1.amazonaws.com/210987654321/orders-dlq",
		"arn:aws:sns:eu-west-1:210987654321:topic":                 "",
		"arn:aws-iso:sqs:us-iso-east-1:210987654321:q":             "",
		"not an arn": "",
	} {
		got, err := queueURL(arn)
		if got != want || (want == "") != (err != nil) {
			t.Errorf("%s: expect %q, got %q, %v", arn, want, got, err)
		}
	}
}

// fromRecord is the message the replayer sees for a record.
func fromRecord(rec events.SQSMessage) types.Message {
	m := types.Message{MessageId: aws.String(rec.MessageId), Body: aws.String(rec.Body), Attributes: rec.Attributes,
		MessageAttributes: map[string]types.MessageAttributeValue{}}
	for k, v := range rec.MessageAttributes {
		m.MessageAttributes[k] = types.MessageAttributeValue{DataType: aws.String(v.DataType), StringValue: v.StringValue}
	}
	return m
}

// toRecord turns the one message received back from the DLQ into a record
// like rec.
func toRecord(t *testing.T, msgs []types.Message, rec events.SQSMessage) events.SQSMessage {
	t.Helper()
	if len(msgs) != 1 {
		t.Fatalf("expect the message back in the DLQ, got %d messages", len(msgs))
	}
	m := msgs[0]
	rec.MessageId, rec.ReceiptHandle, rec.Attributes = *m.MessageId, *m.ReceiptHandle, m.Attributes
	rec.MessageAttributes = map[string]events.SQSMessageAttribute{}
	for k, v := range m.MessageAttributes {
		rec.MessageAttributes[k] = events.SQSMessageAttribute{DataType: aws.ToString(v.DataType), StringValue: v.StringValue}
	}
	return rec
}
