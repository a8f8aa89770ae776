package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/replay"
	"github.com/sqskit/sqskit/sqsfake"
)

// dlqWorld is a main queue that dead-letters to a DLQ after one receive,
// and a spare queue, on sqsfake. Run it inside synctest.Test: time is
// the bubble's.
type dlqWorld struct {
	srv                    *sqsfake.Server
	api                    *sqs.Client
	main, dlq, spare       string
	fifo                   bool
	ids                    map[string]string // MessageId → body, for goldens
	bodies                 []string          // in send order
	mainName, dlqName, spn string
}

func newDLQWorld(t *testing.T, fifo bool) *dlqWorld {
	t.Helper()
	w := &dlqWorld{srv: sqsfake.New(), fifo: fifo, ids: map[string]string{}}
	w.api = w.srv.Client()
	suffix := ""
	if fifo {
		suffix = ".fifo"
	}
	w.dlqName, w.mainName, w.spn = "orders-dlq"+suffix, "orders"+suffix, "spare"+suffix
	w.dlq = w.create(t, w.dlqName, nil)
	w.main = w.create(t, w.mainName, map[string]string{
		"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:123456789012:` + w.dlqName + `","maxReceiveCount":1}`})
	w.spare = w.create(t, w.spn, nil)
	return w
}

func (w *dlqWorld) create(t *testing.T, name string, attrs map[string]string) string {
	t.Helper()
	if attrs == nil {
		attrs = map[string]string{}
	}
	if w.fifo {
		attrs["FifoQueue"] = "true"
		attrs["ContentBasedDeduplication"] = "true"
	}
	out, err := w.api.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.QueueUrl)
}

// dlqMsg is a message to dead-letter.
type dlqMsg struct {
	body, group string
	attrs       map[string]string
}

// deadLetter sends msgs to the main queue, one millisecond apart, and
// lets SQS move them to the DLQ (a receive, then another past
// maxReceiveCount).
func (w *dlqWorld) deadLetter(t *testing.T, msgs ...dlqMsg) {
	t.Helper()
	want := w.count(t, w.dlq) + len(msgs)
	for _, m := range msgs {
		w.sendTo(t, w.main, m)
		time.Sleep(time.Millisecond)
	}
	for got := 0; got < len(msgs); {
		out := w.receive(t, w.main, 1)
		if len(out) == 0 {
			t.Fatalf("expect %d messages to receive once, got %d", len(msgs), got)
		}
		got += len(out)
	}
	time.Sleep(2 * time.Second)
	for range 50 {
		w.receive(t, w.main, 1)
		if w.count(t, w.dlq) == want {
			break
		}
	}
	if n := w.count(t, w.dlq); n != want {
		t.Fatalf("expect %d messages in the DLQ, got %d", want, n)
	}
	// Learn their DLQ ids for the goldens, then make them visible again.
	for _, m := range w.receiveAll(t, w.dlq) {
		w.ids[aws.ToString(m.MessageId)] = aws.ToString(m.Body)
		if _, err := w.api.ChangeMessageVisibility(context.Background(), &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(w.dlq), ReceiptHandle: m.ReceiptHandle}); err != nil {
			t.Fatal(err)
		}
	}
}

func (w *dlqWorld) sendTo(t *testing.T, url string, m dlqMsg) string {
	t.Helper()
	in := &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(m.body)}
	if m.group != "" {
		in.MessageGroupId = aws.String(m.group)
	}
	if len(m.attrs) > 0 {
		in.MessageAttributes = map[string]types.MessageAttributeValue{}
		for k, v := range m.attrs {
			dt := "String"
			if k == replay.DefaultCounterAttribute {
				dt = "Number"
			}
			in.MessageAttributes[k] = types.MessageAttributeValue{DataType: aws.String(dt), StringValue: aws.String(v)}
		}
	}
	out, err := w.api.SendMessage(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	w.bodies = append(w.bodies, m.body)
	return aws.ToString(out.MessageId)
}

func (w *dlqWorld) receive(t *testing.T, url string, visibility int32) []types.Message {
	t.Helper()
	out, err := w.api.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: visibility,
		MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []types.MessageSystemAttributeName{"All"}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Messages
}

// receiveAll receives everything visible in url, keeping it invisible
// for an hour, in receive order.
func (w *dlqWorld) receiveAll(t *testing.T, url string) []types.Message {
	t.Helper()
	var all []types.Message
	for {
		got := w.receive(t, url, 3600)
		if len(got) == 0 {
			return all
		}
		all = append(all, got...)
	}
}

func (w *dlqWorld) bodiesIn(t *testing.T, url string) []string {
	t.Helper()
	var out []string
	for _, m := range w.receiveAll(t, url) {
		out = append(out, aws.ToString(m.Body))
	}
	return out
}

// count is the messages in url, visible or not.
func (w *dlqWorld) count(t *testing.T, url string) int {
	t.Helper()
	out, err := w.api.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{"All"}})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, k := range []string{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"} {
		var v int
		if err := json.Unmarshal([]byte(out.Attributes[k]), &v); err != nil {
			t.Fatal(err)
		}
		n += v
	}
	return n
}

func (w *dlqWorld) visible(t *testing.T, url string) int {
	t.Helper()
	out, err := w.api.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{"ApproximateNumberOfMessages"}})
	if err != nil {
		t.Fatal(err)
	}
	var v int
	_ = json.Unmarshal([]byte(out.Attributes["ApproximateNumberOfMessages"]), &v)
	return v
}

// normalize replaces message ids by their bodies, so outputs compare
// across runs; in tables padded to an id's width, so columns stay aligned.
func (w *dlqWorld) normalize(s string) string {
	pad := !strings.HasPrefix(s, "{")
	ids := make([]string, 0, len(w.ids))
	for id := range w.ids {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		name := "id(" + w.ids[id] + ")"
		if pad {
			name = fmt.Sprintf("%-*s", len(id), name)
		}
		s = strings.ReplaceAll(s, id, name)
	}
	return s
}

// replayMutating are the calls that change a queue.
var replayMutating = []string{"SendMessage", "SendMessageBatch", "DeleteMessage", "DeleteMessageBatch", "ChangeMessageVisibility",
	"ChangeMessageVisibilityBatch", "PurgeQueue", "StartMessageMoveTask", "CancelMessageMoveTask", "ReceiveMessage",
	"CreateQueue", "DeleteQueue", "SetQueueAttributes"}

// replayMutations counts the calls since before that change a queue (a receive
// counts: it raises ApproximateReceiveCount).
func replayMutations(before, after sqsfake.Calls) map[string]int {
	out := map[string]int{}
	for _, op := range replayMutating {
		if n := after.Op[op] - before.Op[op]; n > 0 {
			out[op] = n
		}
	}
	return out
}

// replayDecodeAll parses every JSON document in s into a generic value each.
func replayDecodeAll(t *testing.T, s string) []map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	var out []map[string]any
	for dec.More() {
		var v map[string]any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("output is not JSON: %v\n%s", err, s)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		t.Fatalf("expect JSON output, got %q", s)
	}
	return out
}

// takeAll receives and deletes everything in url, in delivery order (on a
// FIFO queue a group's next message comes only once the earlier is gone).
func (w *dlqWorld) takeAll(t *testing.T, url string) []types.Message {
	t.Helper()
	var all []types.Message
	for range 1000 {
		got := w.receive(t, url, 60)
		if len(got) == 0 {
			return all
		}
		for _, m := range got {
			if _, err := w.api.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
		all = append(all, got...)
	}
	t.Fatal("expect the queue to empty")
	return nil
}

func bodies(msgs []types.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = aws.ToString(m.Body)
	}
	return out
}

// mixed is a DLQ of six messages: three of tenant acme, one with a body
// mentioning "refund", two sent an hour earlier.
func mixed(t *testing.T, fifo bool) *dlqWorld {
	t.Helper()
	w := newDLQWorld(t, fifo)
	g := func(s string) string {
		if fifo {
			return s
		}
		return ""
	}
	w.deadLetter(t, dlqMsg{body: "old-1", group: g("g1"), attrs: map[string]string{"tenant": "acme"}},
		dlqMsg{body: "old-2", group: g("g2"), attrs: map[string]string{"tenant": "globex"}})
	time.Sleep(time.Hour)
	w.deadLetter(t, dlqMsg{body: "new-1", group: g("g1"), attrs: map[string]string{"tenant": "acme"}},
		dlqMsg{body: "new-2 refund", group: g("g2"), attrs: map[string]string{"tenant": "globex", replay.DefaultCounterAttribute: "2"}},
		dlqMsg{body: "new-3", group: g("g3"), attrs: map[string]string{"tenant": "acme"}},
		dlqMsg{body: "new-4", group: g("g3")})
	return w
}

func changeVisibility(url string, m types.Message) *sqs.ChangeMessageVisibilityInput {
	return &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}
}
