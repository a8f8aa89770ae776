package attempt

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqskit/sqskit/sqsfake"
)

// recordingClient keeps the attempt ids it was asked to send.
type recordingClient struct {
	ReceiveAPI
	mu  sync.Mutex
	ids []string
}

func (r *recordingClient) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	r.mu.Lock()
	r.ids = append(r.ids, aws.ToString(in.ReceiveRequestAttemptId))
	r.mu.Unlock()
	return r.ReceiveAPI.ReceiveMessage(ctx, in, optFns...)
}

type fixture struct {
	srv    *sqsfake.Server
	client *sqs.Client
	url    string
}

// newFixture is a queue on sqsfake: with a manual clock, or on the bubble's
// fake time inside synctest.Test when bubble is set.
func newFixture(t *testing.T, name string, bubble bool) *fixture {
	t.Helper()
	var srv *sqsfake.Server
	if bubble {
		srv = sqsfake.New()
	} else {
		clock := sqsfake.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		srv = sqsfake.New(func(o *sqsfake.Options) { o.Clock = clock })
	}
	attrs := map[string]string{}
	if strings.HasSuffix(name, ".fifo") {
		attrs["FifoQueue"] = "true"
	}
	client := srv.Client()
	out, err := client.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		t.Fatal(err)
	}
	srv.ResetCalls()
	return &fixture{srv: srv, client: client, url: *out.QueueUrl}
}

// sendGroup sends bodies to group "g" in order.
func (f *fixture) sendGroup(t *testing.T, bodies ...string) {
	t.Helper()
	for i, b := range bodies {
		if _, err := f.client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(f.url), MessageBody: aws.String(b),
			MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String(fmt.Sprint(i))}); err != nil {
			t.Fatal(err)
		}
	}
	f.srv.ResetCalls()
}

func newReceiver(t *testing.T, client ReceiveAPI, url string) *Receiver {
	t.Helper()
	r, err := New(client, url)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A receive whose response is lost in transit leaves its messages in
// flight; the retry with the same attempt id gets them back at once instead
// of waiting out the visibility timeout.
func TestRetryAfterTransitFailureReusesTheAttemptID(t *testing.T) {
	f := newFixture(t, "q.fifo", false)
	f.sendGroup(t, "1", "2")
	rec := &recordingClient{ReceiveAPI: f.client}
	r := newReceiver(t, rec, f.url)
	f.srv.Inject(sqsfake.Fault{Op: "ReceiveMessage", Times: 1, AfterApply: true})
	in := &sqs.ReceiveMessageInput{MaxNumberOfMessages: 10}
	if _, err := r.Receive(context.Background(), in); err == nil {
		t.Fatal("expect the injected transit failure")
	}
	if r.Pending() == "" {
		t.Fatal("expect the attempt id kept for the retry")
	}
	out, err := r.Receive(context.Background(), in)
	if err != nil || len(out.Messages) != 2 {
		t.Fatalf("expect the retry to return the 2 messages of the lost response, got %v, %v", out, err)
	}
	if rec.ids[0] == "" || rec.ids[0] != rec.ids[1] {
		t.Fatalf("expect the same attempt id on both calls, got %q", rec.ids)
	}
	if r.Pending() != "" {
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
func TestAttemptIDIsANewReceiveOnceAMessageOfItIsDeleted(t *testing.T) {
	f := newFixture(t, "q.fifo", false)
	f.sendGroup(t, "1", "2")
	r := newReceiver(t, f.client, f.url)
	r.newID = func() string { return "fixed-attempt" }
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

func TestAttemptIDRenewedNearItsFiveMinuteLife(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, "q.fifo", true)
		rec := &recordingClient{ReceiveAPI: f.client}
		r := newReceiver(t, rec, f.url)
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

func TestStandardQueuesNeverGetAnAttemptID(t *testing.T) {
	f := newFixture(t, "std", false)
	rec := &recordingClient{ReceiveAPI: f.client}
	r := newReceiver(t, rec, f.url)
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

func TestPermanentErrorDropsTheAttemptID(t *testing.T) {
	f := newFixture(t, "q.fifo", false)
	r := newReceiver(t, f.client, f.url)
	if _, err := f.client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(f.url)}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Receive(context.Background(), &sqs.ReceiveMessageInput{}); err == nil || r.Pending() != "" {
		t.Fatalf("expect an error and no id kept, got %v, %q", err, r.Pending())
	}
}

// The retry of a lost receive gets the first attempt's messages even when it
// asks for fewer: room must be kept for them.
func TestRetryReturnsTheFirstAttemptsMessagesWhateverItAsks(t *testing.T) {
	f := newFixture(t, "q.fifo", false)
	f.sendGroup(t, "1", "2", "3")
	r := newReceiver(t, f.client, f.url)
	f.srv.Inject(sqsfake.Fault{Op: "ReceiveMessage", Times: 1, AfterApply: true})
	if _, err := r.Receive(context.Background(), &sqs.ReceiveMessageInput{MaxNumberOfMessages: 10}); err == nil {
		t.Fatal("expect the injected transit failure")
	}
	out, err := r.Receive(context.Background(), &sqs.ReceiveMessageInput{MaxNumberOfMessages: 1})
	if err != nil || len(out.Messages) != 3 {
		t.Fatalf("expect the first attempt's 3 messages although 1 was asked, got %v, %v", out, err)
	}
}

// A nil input is the SDK's empty input, as for *sqs.Client: one receive
// from the Receiver's queue with SQS's defaults, no panic.
func TestNilInputIsAnEmptyReceive(t *testing.T) {
	f := newFixture(t, "q.fifo", false)
	f.sendGroup(t, "1")
	r := newReceiver(t, f.client, f.url)
	out, err := r.Receive(context.Background(), nil)
	if err != nil {
		t.Fatalf("expect a receive, got %v", err)
	}
	if len(out.Messages) != 1 || *out.Messages[0].Body != "1" {
		t.Fatalf("expect message 1, got %+v", out.Messages)
	}
	if calls := f.srv.Calls().Op["ReceiveMessage"]; calls != 1 {
		t.Fatalf("expect 1 ReceiveMessage call, got %d", calls)
	}
}

// A nil client, a nil *sqs.Client in the interface (whose first call would
// panic) and an empty queue URL are refused when the Receiver is made.
func TestNewRefusesNilClientsAndEmptyURL(t *testing.T) {
	const url = "https://sqs.us-east-1.amazonaws.com/123456789012/q.fifo"
	for name, mk := range map[string]func() (*Receiver, error){
		"nil client":       func() (*Receiver, error) { return New(nil, url) },
		"typed-nil client": func() (*Receiver, error) { return New((*sqs.Client)(nil), url) },
		"empty queue URL":  func() (*Receiver, error) { return New(sqsfake.New().Client(), "") },
	} {
		if r, err := mk(); !errors.Is(err, ErrConfig) || r != nil {
			t.Errorf("%s: expect ErrConfig and no Receiver, got %v, %v", name, r, err)
		}
	}
}
