package fifo_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqskit/sqskit/fifo"
	"github.com/sqskit/sqskit/sqsfake"
)

// recordingClient keeps the attempt ids it was asked to send.
type recordingClient struct {
	fifo.ReceiveAPI
	mu  sync.Mutex
	ids []string
}

func (r *recordingClient) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	r.mu.Lock()
	r.ids = append(r.ids, aws.ToString(in.ReceiveRequestAttemptId))
	r.mu.Unlock()
	return r.ReceiveAPI.ReceiveMessage(ctx, in, optFns...)
}

func sendGroup(t *testing.T, f *fixture, bodies ...string) {
	t.Helper()
	s := f.sender(t)
	for _, b := range bodies {
		if _, err := s.Send(context.Background(), fifo.Message{Body: b, GroupID: "g"}); err != nil {
			t.Fatal(err)
		}
	}
}

// A receive whose response is lost in transit leaves its messages in
// flight; the retry with the same attempt id gets them back at once instead
// of waiting out the visibility timeout.
func TestReceiverReusesAttemptIDAfterTransitFailure(t *testing.T) {
	f := newFixture(t, "q.fifo", nil)
	sendGroup(t, f, "1", "2")
	rec := &recordingClient{ReceiveAPI: f.client}
	r, err := fifo.NewReceiver(rec, f.url)
	if err != nil {
		t.Fatal(err)
	}
	f.srv.Inject(sqsfake.Fault{Op: "ReceiveMessage", Times: 1, AfterApply: true})
	in := &sqs.ReceiveMessageInput{MaxNumberOfMessages: 10}
	if _, err := r.Receive(context.Background(), in); err == nil {
		t.Fatal("expect the injected transit failure")
	}
	if r.AttemptID() == "" {
		t.Fatal("expect the attempt id kept for the retry")
	}
	out, err := r.Receive(context.Background(), in)
	if err != nil || len(out.Messages) != 2 {
		t.Fatalf("expect the retry to return the 2 messages of the lost response, got %v, %v", out, err)
	}
	if rec.ids[0] == "" || rec.ids[0] != rec.ids[1] {
		t.Fatalf("expect the same attempt id on both calls, got %q", rec.ids)
	}
	if r.AttemptID() != "" {
		t.Error("expect a successful response to drop the attempt id")
	}
	if _, err := r.Receive(context.Background(), in); err != nil || rec.ids[2] == rec.ids[1] {
		t.Errorf("expect a fresh attempt id for the next logical receive, got %q", rec.ids)
	}
	if in.ReceiveRequestAttemptId != nil {
		t.Error("expect the caller's input untouched")
	}
}

// Once a message of an attempt is deleted, SQS treats the id as a new
// receive: the Receiver must not count on the old messages coming back.
func TestReceiverAttemptInvalidAfterDelete(t *testing.T) {
	f := newFixture(t, "q.fifo", nil)
	sendGroup(t, f, "1", "2")
	r, _ := fifo.NewReceiver(f.client, f.url, func(o *fifo.ReceiverOptions) {
		o.NewAttemptID = func() string { return "fixed-attempt" }
	})
	first, err := r.Receive(context.Background(), &sqs.ReceiveMessageInput{MaxNumberOfMessages: 1})
	if err != nil || len(first.Messages) != 1 {
		t.Fatal(err)
	}
	if _, err := f.client.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(f.url), ReceiptHandle: first.Messages[0].ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	second, err := r.Receive(context.Background(), &sqs.ReceiveMessageInput{MaxNumberOfMessages: 1})
	if err != nil || len(second.Messages) != 1 || *second.Messages[0].Body != "2" {
		t.Fatalf("expect message 2 from a fresh receive, got %v, %v", second, err)
	}
}

func TestReceiverRenewsIDNearItsFiveMinuteLife(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newBubbleFixture(t, "q.fifo", nil)
		rec := &recordingClient{ReceiveAPI: f.client}
		r, _ := fifo.NewReceiver(rec, f.url)
		f.srv.Inject(sqsfake.Fault{Op: "ReceiveMessage", Times: 3, Err: sqsfake.ErrInternal})
		_, _ = r.Receive(context.Background(), &sqs.ReceiveMessageInput{})
		time.Sleep(4*time.Minute + 29*time.Second)
		_, _ = r.Receive(context.Background(), &sqs.ReceiveMessageInput{})
		time.Sleep(2 * time.Second)
		_, _ = r.Receive(context.Background(), &sqs.ReceiveMessageInput{})
		if rec.ids[0] != rec.ids[1] {
			t.Fatalf("expect the id kept within 4m30s, got %q", rec.ids)
		}
		if rec.ids[1] == rec.ids[2] {
			t.Fatalf("expect a new id past 4m30s, got %q", rec.ids)
		}
	})
}

func TestReceiverNeverSendsAttemptIDToStandardQueues(t *testing.T) {
	f := newFixture(t, "std", nil)
	rec := &recordingClient{ReceiveAPI: f.client}
	r, _ := fifo.NewReceiver(rec, f.url)
	f.srv.Inject(sqsfake.Fault{Op: "ReceiveMessage", Times: 1, Err: sqsfake.ErrInternal})
	for range 2 {
		_, _ = r.Receive(context.Background(), &sqs.ReceiveMessageInput{ReceiveRequestAttemptId: aws.String("caller-set")})
	}
	for _, id := range rec.ids {
		if id != "" {
			t.Fatalf("expect no attempt id on a standard queue, got %q", rec.ids)
		}
	}
}

func TestReceiverDropsIDAfterNonTransientError(t *testing.T) {
	f := newFixture(t, "q.fifo", nil)
	r, _ := fifo.NewReceiver(f.client, f.url)
	if _, err := f.client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(f.url)}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Receive(context.Background(), &sqs.ReceiveMessageInput{}); err == nil || r.AttemptID() != "" {
		t.Fatalf("expect an error and no id kept, got %v, %q", err, r.AttemptID())
	}
}

// The retry of a lost receive gets the first attempt's messages even when it
// asks for fewer: room must be kept for them.
func TestReceiverRetryReturnsTheFirstAttemptsMessages(t *testing.T) {
	f := newFixture(t, "q.fifo", nil)
	sendGroup(t, f, "1", "2", "3")
	r, err := fifo.NewReceiver(f.client, f.url)
	if err != nil {
		t.Fatal(err)
	}
	f.srv.Inject(sqsfake.Fault{Op: "ReceiveMessage", Times: 1, AfterApply: true})
	if _, err := r.Receive(context.Background(), &sqs.ReceiveMessageInput{MaxNumberOfMessages: 10}); err == nil {
		t.Fatal("expect the injected transit failure")
	}
	out, err := r.Receive(context.Background(), &sqs.ReceiveMessageInput{MaxNumberOfMessages: 1})
	if err != nil || len(out.Messages) != 3 {
		t.Fatalf("expect the first attempt's 3 messages although 1 was asked, got %v, %v", out, err)
	}
}
