package replay_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/internal/fauxqs"
	"github.com/sqskit/sqskit/replay"
)

// emulatorQueues creates uniquely named queues on the emulator.
func emulatorQueues(t *testing.T, api *sqs.Client, fifo bool, names ...string) []string {
	t.Helper()
	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)
	var urls []string
	for _, name := range names {
		in := &sqs.CreateQueueInput{QueueName: aws.String(name + "-" + suffix)}
		if fifo {
			in.QueueName = aws.String(*in.QueueName + ".fifo")
			in.Attributes = map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"}
		}
		out, err := api.CreateQueue(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		urls = append(urls, *out.QueueUrl)
	}
	return urls
}

// queueCount is every message a queue holds: visible, in flight and
// delayed. It reads the queue's counters, which fauxqs keeps exactly, so
// counting never hides messages the way a receive does.
func queueCount(t *testing.T, api *sqs.Client, url string) map[string]int {
	t.Helper()
	out, err := api.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{"All"}})
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, a := range []string{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"} {
		counts[a], _ = strconv.Atoi(out.Attributes[a])
	}
	return counts
}

// receiveDistinct receives until it has seen want distinct messages, in the
// order the queue gives them, deleting each. Receives ask for a short
// visibility timeout: a receive whose response is lost (and retried by the
// SDK) hides its messages for seconds, not for the queue's 30 s.
func receiveDistinct(t *testing.T, api *sqs.Client, url string, want int) []types.Message {
	t.Helper()
	seen := map[string]bool{}
	var msgs []types.Message
	for deadline := time.Now().Add(30 * time.Second); len(msgs) < want; {
		if time.Now().After(deadline) {
			t.Fatalf("expect %d messages on %s, got %d", want, url, len(msgs))
		}
		out, err := api.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
			VisibilityTimeout: 2, MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []types.MessageSystemAttributeName{"All"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			if !seen[*m.MessageId] {
				seen[*m.MessageId] = true
				msgs = append(msgs, m)
			}
			if _, err := api.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return msgs
}

// TestEmulatorEndToEnd runs a replay pass over HTTP against the fauxqs
// emulator: dead-lettered messages go back to the main queue with the
// counter and provenance, and one with spent attempts to the operator queue.
//
// It counts the main queue with the queue's counters and receives by
// distinct MessageId, not by receiving until a receive comes back empty:
// messages can be out of sight for a moment (a receive whose response is
// lost and retried by the SDK hides ten for the queue's 30 s visibility
// timeout), and such a count ends early ("expect 24 messages on main, got
// 14"). The replayer gives a standard target the policy's delay (here 0)
// as DelaySeconds without comparing the emulator's SentTimestamp with its
// own clock, so clocks that disagree delay no batch.
func TestEmulatorEndToEnd(t *testing.T) {
	api := fauxqs.StartT(t).Client()
	ctx := context.Background()
	q := emulatorQueues(t, api, false, "dlq", "main", "operator")
	dlq, main, operator := q[0], q[1], q[2]
	for i := range 25 {
		in := &sqs.SendMessageInput{QueueUrl: aws.String(dlq), MessageBody: aws.String(fmt.Sprintf("m%02d", i)),
			MessageAttributes: map[string]types.MessageAttributeValue{"bin": {DataType: aws.String("Binary"), BinaryValue: []byte{byte(i), 0xff}}}}
		if i == 24 {
			in.MessageAttributes[replay.DefaultCounterAttribute] = types.MessageAttributeValue{DataType: aws.String("Number"), StringValue: aws.String("3")}
		}
		if _, err := api.SendMessage(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	r, err := replay.New(api, dlq, operator, func(o *replay.Options) {
		o.Target = main
		o.Policy = replay.Policy{MaxAttempts: 3, Backoff: backoff.Constant{}}
	})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := r.Drain(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Replayed != 24 || rep.Escalated != 1 || rep.Failed != 0 {
		t.Fatalf("expect 24 replayed and 1 escalated, got %+v", rep)
	}
	if got := queueCount(t, api, main); got["ApproximateNumberOfMessages"] != 24 || got["ApproximateNumberOfMessagesDelayed"] != 0 {
		t.Fatalf("expect 24 messages visible on main at once, got %v", got)
	}
	for _, m := range receiveDistinct(t, api, main, 24) {
		if n := aws.ToString(m.MessageAttributes[replay.DefaultCounterAttribute].StringValue); n != "1" {
			t.Errorf("%s: expect counter 1, got %q", *m.Body, n)
		}
		if b := m.MessageAttributes["bin"].BinaryValue; len(b) != 2 || b[1] != 0xff {
			t.Errorf("%s: expect the binary attribute intact, got %v", *m.Body, b)
		}
		if _, ok := m.MessageAttributes[replay.MetadataAttribute]; !ok {
			t.Errorf("%s: expect provenance", *m.Body)
		}
	}
	escalated := receiveDistinct(t, api, operator, 1)
	if md := metadataOf(t, escalated[0]); md.Reason != replay.AttemptsExhausted {
		t.Fatalf("expect m24 escalated as attempts exhausted, got %+v", md)
	}
	if got := queueCount(t, api, dlq); got["ApproximateNumberOfMessages"]+got["ApproximateNumberOfMessagesNotVisible"] != 0 {
		t.Fatalf("expect the DLQ empty, got %v", got)
	}
}

// TestEmulatorFIFOEndToEnd replays a FIFO DLQ over HTTP: groups keep their
// order on the FIFO target, each replay carries a deduplication id, and a
// forged counter at a group's head goes to the operator queue without
// holding the rest of its group.
func TestEmulatorFIFOEndToEnd(t *testing.T) {
	api := fauxqs.StartT(t).Client()
	ctx := context.Background()
	q := emulatorQueues(t, api, true, "dlq", "main", "operator")
	dlq, main, operator := q[0], q[1], q[2]
	for i := range 12 {
		g := fmt.Sprintf("g%d", i%3)
		in := &sqs.SendMessageInput{QueueUrl: aws.String(dlq), MessageBody: aws.String(fmt.Sprintf("%s:%d", g, i/3)), MessageGroupId: aws.String(g)}
		if i == 1 {
			in.MessageAttributes = map[string]types.MessageAttributeValue{replay.DefaultCounterAttribute: {DataType: aws.String("String"), StringValue: aws.String("x")}}
		}
		if _, err := api.SendMessage(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	r, err := replay.New(api, dlq, operator, func(o *replay.Options) {
		o.Target = main
		o.Policy = replay.Policy{Backoff: backoff.Constant{}}
	})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := r.Drain(ctx)
	if err != nil || rep.Replayed != 11 || rep.Escalated != 1 {
		t.Fatalf("expect 11 replayed and 1 escalated, got %+v, %v", rep, err)
	}
	last := map[string]int{}
	for _, m := range receiveDistinct(t, api, main, 11) {
		g, seq, _ := strings.Cut(*m.Body, ":")
		n, _ := strconv.Atoi(seq)
		if prev, ok := last[g]; ok && n < prev {
			t.Errorf("group %s: %s after %s:%d", g, *m.Body, g, prev)
		}
		last[g] = n
	}
	if got := receiveDistinct(t, api, operator, 1); *got[0].Body != "g1:0" || metadataOf(t, got[0]).Reason != replay.InvalidCounter {
		t.Fatalf("expect g1:0 escalated as InvalidCounter, got %s", *got[0].Body)
	}
}
