package sqsfake_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// deadLettered makes src → dlq with maxReceiveCount 1 and moves the given
// bodies (sent with group g on FIFO) into the DLQ.
func (f *fixture) deadLettered(t *testing.T, fifo bool, bodies ...string) (src, dlq string) {
	t.Helper()
	ctx := context.Background()
	suffix, attrs := "", map[string]string{}
	if fifo {
		suffix, attrs["FifoQueue"] = ".fifo", "true"
	}
	dlq = f.queue(t, "dlq"+suffix, attrs)
	srcAttrs := map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:123456789012:dlq` + suffix + `","maxReceiveCount":1}`}
	if fifo {
		srcAttrs["FifoQueue"] = "true"
	}
	src = f.queue(t, "src"+suffix, srcAttrs)
	for i, b := range bodies {
		in := &sqs.SendMessageInput{QueueUrl: aws.String(src), MessageBody: aws.String(b)}
		if fifo {
			in.MessageGroupId, in.MessageDeduplicationId = aws.String("g"), aws.String(strconv.Itoa(i))
		}
		if _, err := f.client.SendMessage(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	for range bodies {
		if out, err := f.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(src), VisibilityTimeout: 1}); err != nil || len(out.Messages) != 1 {
			t.Fatalf("receive: %v", err)
		}
		f.clock.Advance(2 * time.Second)
	}
	if out, _ := f.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(src), MaxNumberOfMessages: 10}); len(out.Messages) != 0 {
		t.Fatalf("expect every message moved, got %d", len(out.Messages))
	}
	return src, dlq
}

func (f *fixture) lastTask(t *testing.T, sourceArn string) types.ListMessageMoveTasksResultEntry {
	t.Helper()
	out, err := f.client.ListMessageMoveTasks(context.Background(), &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(sourceArn)})
	if err != nil || len(out.Results) != 1 {
		t.Fatalf("list tasks: %v", err)
	}
	return out.Results[0]
}

// A long poll on a move task's destination sleeps no later than the task's
// next move, so it wakes when the clock reaches it.
func TestMoveTaskWakesLongPollOnDestination(t *testing.T) {
	f := newFixture()
	ctx := context.Background()
	src, _ := f.deadLettered(t, false, "m")
	if _, err := f.client.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String("arn:aws:sqs:us-east-1:123456789012:dlq"), MaxNumberOfMessagesPerSecond: aws.Int32(1)}); err != nil {
		t.Fatal(err)
	}
	done := make(chan []types.Message, 1)
	go func() {
		out, _ := f.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(src), WaitTimeSeconds: 20})
		done <- out.Messages
	}()
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := f.clock.WaitForTimers(wctx, 1); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Second)
	if got := <-done; len(got) != 1 || aws.ToString(got[0].Body) != "m" {
		t.Fatalf("expect the moved message, got %v", got)
	}
}

// Without a DestinationArn a message that was never dead-lettered has nowhere
// to go: the task fails with a reason and leaves it in place.
func TestMoveTaskFailsForAMessageWithoutSource(t *testing.T) {
	f := newFixture()
	f.deadLettered(t, false)
	dlq := "https://sqs.us-east-1.amazonaws.com/123456789012/dlq"
	if err := f.send(dlq, "sent directly"); err != nil {
		t.Fatal(err)
	}
	arn := "arn:aws:sqs:us-east-1:123456789012:dlq"
	if _, err := f.client.StartMessageMoveTask(context.Background(), &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(arn)}); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Second)
	task := f.lastTask(t, arn)
	if aws.ToString(task.Status) != "FAILED" || !strings.Contains(aws.ToString(task.FailureReason), "DeadLetterQueueSourceArn") {
		t.Fatalf("expect FAILED with a reason, got %s %q", aws.ToString(task.Status), aws.ToString(task.FailureReason))
	}
	if got := f.visible(t, dlq); got != "1" {
		t.Fatalf("expect the message left in the DLQ, got %s", got)
	}
}

// A FIFO dead-letter queue moves back in group order, each message a new one.
func TestMoveTaskFIFOKeepsGroupOrder(t *testing.T) {
	f := newFixture()
	ctx := context.Background()
	src, _ := f.deadLettered(t, true, "1", "2", "3")
	if _, err := f.client.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String("arn:aws:sqs:us-east-1:123456789012:dlq.fifo")}); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Second)
	out, err := f.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(src), MaxNumberOfMessages: 10, MessageSystemAttributeNames: []types.MessageSystemAttributeName{"All"}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range out.Messages {
		got = append(got, aws.ToString(m.Body))
		if m.Attributes["MessageGroupId"] != "g" || m.Attributes["ApproximateReceiveCount"] != "1" || m.Attributes["MessageDeduplicationId"] != aws.ToString(m.MessageId) {
			t.Fatalf("expect the group kept, a fresh count and the MessageId as dedup id, got %v", m.Attributes)
		}
	}
	if strings.Join(got, ",") != "1,2,3" {
		t.Fatalf("expect 1,2,3 in order, got %v", got)
	}
}

// A task whose source is deleted fails.
func TestMoveTaskFailsWhenTheSourceIsDeleted(t *testing.T) {
	f := newFixture()
	ctx := context.Background()
	f.deadLettered(t, false, "a", "b")
	arn := "arn:aws:sqs:us-east-1:123456789012:dlq"
	if _, err := f.client.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(arn), MaxNumberOfMessagesPerSecond: aws.Int32(1)}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.client.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String("https://sqs.us-east-1.amazonaws.com/123456789012/dlq")}); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Second)
	// The history stays readable by ARN while the name is reserved.
	f.clock.Advance(61 * time.Second)
	f.queue(t, "dlq", nil)
	task := f.lastTask(t, arn)
	if aws.ToString(task.Status) != "FAILED" || task.ApproximateNumberOfMessagesMoved != 0 {
		t.Fatalf("expect FAILED with nothing moved, got %s, %d", aws.ToString(task.Status), task.ApproximateNumberOfMessagesMoved)
	}
}

// A longer FIFO queue delay also applies to messages already waiting.
func TestFIFODelayIncreaseIsRetroactive(t *testing.T) {
	f := newFixture()
	ctx := context.Background()
	url := f.queue(t, "q.fifo", map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"})
	if _, err := f.client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("m"), MessageGroupId: aws.String("g")}); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(10 * time.Second)
	if _, err := f.client.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: map[string]string{"DelaySeconds": "60"}}); err != nil {
		t.Fatal(err)
	}
	if out, _ := f.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url)}); len(out.Messages) != 0 {
		t.Fatal("expect the message delayed again, to 60 s after its send")
	}
	f.clock.Advance(50 * time.Second)
	if out, _ := f.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url)}); len(out.Messages) != 1 {
		t.Fatal("expect the message 60 s after its send")
	}
}

// A task with nothing movable (the FIFO dead-letter queue's group is locked
// by a message in flight, though another is visible behind it) lets a long
// poll on its destination park instead of spinning, and moves the messages
// once the group is free again.
func TestMoveTaskBehindScheduleDoesNotSpin(t *testing.T) {
	f := newFixture()
	ctx := context.Background()
	src, dlq := f.deadLettered(t, true, "1", "2")
	if out, _ := f.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(dlq), VisibilityTimeout: 60}); len(out.Messages) != 1 {
		t.Fatal("expect to hold the DLQ's first message")
	}
	if _, err := f.client.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String("arn:aws:sqs:us-east-1:123456789012:dlq.fifo")}); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Second) // the task is behind: nothing to move
	done := make(chan int, 1)
	go func() {
		out, _ := f.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(src), WaitTimeSeconds: 20})
		done <- len(out.Messages)
	}()
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := f.clock.WaitForTimers(wctx, 1); err != nil {
		t.Fatalf("expect the long poll parked on the clock: %v", err)
	}
	f.clock.Advance(20 * time.Second)
	if n := <-done; n != 0 {
		t.Fatalf("expect an empty poll while the message is in flight, got %d", n)
	}
	f.clock.Advance(40 * time.Second) // the DLQ's group is free again
	out, err := f.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(src), MaxNumberOfMessages: 10})
	if err != nil || len(out.Messages) != 2 || aws.ToString(out.Messages[0].Body) != "1" {
		t.Fatalf("expect both messages moved in order once the group is free, got %v, %v", out, err)
	}
}
