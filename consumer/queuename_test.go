package consumer

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/sqsfake"
)

// apiOnly is a user's small wrapper: the calls of API and ParkerAPI, no
// GetQueueUrl.
type apiOnly struct{ c *sqs.Client }

func (a apiOnly) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	return a.c.ReceiveMessage(ctx, in, optFns...)
}

func (a apiOnly) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	return a.c.DeleteMessageBatch(ctx, in, optFns...)
}

func (a apiOnly) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	return a.c.ChangeMessageVisibilityBatch(ctx, in, optFns...)
}

func (a apiOnly) GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	return a.c.GetQueueAttributes(ctx, in, optFns...)
}

func (a apiOnly) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	return a.c.SendMessageBatch(ctx, in, optFns...)
}

func (a apiOnly) ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	return a.c.ChangeMessageVisibility(ctx, in, optFns...)
}

func TestRunResolvesAQueueNameOnce(t *testing.T) {
	w := newParkWorld(t, "orders.fifo", "parked")
	ctx := context.Background()
	for _, body := range []string{"a", "bad", "c"} {
		if _, err := w.client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(w.queue), MessageBody: aws.String(body),
			MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String(body)}); err != nil {
			t.Fatal(err)
		}
	}
	w.srv.ResetCalls()
	var handled atomic.Int32
	c, err := New(w.client, "orders.fifo", func(_ context.Context, m *handler.Message) error {
		defer handled.Add(1)
		if m.Body == "bad" {
			return handler.Escalate("invalid", errors.New("bad body"))
		}
		return nil
	}, func(o *Options) { o.ParkingQueue = "parked"; o.WaitTime = time.Second })
	if err != nil {
		t.Fatal(err)
	}
	if !c.fifo {
		t.Error("expect a name ending .fifo to make a FIFO consumer")
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(runCtx) }()
	deadline := time.Now().Add(10 * time.Second)
	for (handled.Load() < 3 || c.Stats().Deleted+c.Stats().Parked < 3) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("expect Run to end cleanly, got %v", err)
	}
	if s := c.Stats(); s.Deleted != 2 || s.Parked != 1 {
		t.Errorf("expect 2 deleted and 1 parked, got %+v", s)
	}
	parked := w.parked(t)
	if len(parked) != 1 {
		t.Fatalf("expect one parked message, got %d", len(parked))
	}
	if md := metadataOf(t, parked[0]); md.From != w.queue {
		t.Errorf("expect the metadata's From to be the resolved URL %q, got %q", w.queue, md.From)
	}
	// The consumer, its Parker's source and its parking queue's sender.
	if got := w.srv.Calls().Op["GetQueueUrl"]; got != 3 {
		t.Errorf("expect 3 GetQueueUrl calls (one per queue reference), got %d", got)
	}

	// A second Run has the URL already.
	w.srv.ResetCalls()
	runCtx, cancel = context.WithCancel(ctx)
	cancel()
	if err := c.Run(runCtx); err != nil {
		t.Fatal(err)
	}
	if got := w.srv.Calls().Op["GetQueueUrl"]; got != 0 {
		t.Errorf("expect no GetQueueUrl call on a second Run, got %d", got)
	}
}

func TestRunRefusesANameItCannotResolve(t *testing.T) {
	w := newParkWorld(t, "orders", "parked")
	w.srv.ResetCalls()
	noop := func(context.Context, *handler.Message) error { return nil }
	cases := []struct {
		name   string
		client API
		queue  string
		want   string
	}{
		{name: "client without GetQueueUrl", client: apiOnly{w.client}, queue: "orders",
			want: `queue name "orders" needs a client with GetQueueUrl to resolve it; pass the queue URL`},
		{name: "missing queue", client: w.client, queue: "nope", want: `queue name "nope": GetQueueUrl:`},
		{name: "neither URL nor name", client: w.client, queue: "sqs.us-east-1.amazonaws.com/000000000000/orders", want: "is neither a queue URL"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(tc.client, tc.queue, noop)
			if err != nil {
				t.Fatalf("expect New to accept the name, got %v", err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err = c.Run(ctx)
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("expect ErrConfig saying %q, got %v", tc.want, err)
			}
		})
	}
	if got := w.srv.Calls().Op["ReceiveMessage"]; got != 0 {
		t.Errorf("expect no receive with an unresolved name, got %d", got)
	}
}

func TestRunRetriesATransientResolutionFailure(t *testing.T) {
	w := newParkWorld(t, "orders", "parked")
	fault := w.srv.Inject(sqsfake.Fault{Op: "GetQueueUrl"})
	c, err := New(w.client, "orders", func(context.Context, *handler.Message) error { return nil }, func(o *Options) { o.WaitTime = time.Second })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	deadline := time.Now().Add(5 * time.Second)
	for fault.Fired() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	fault.Remove()
	for w.srv.Calls().Op["ReceiveMessage"] == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("expect Run to outlast a failing GetQueueUrl, got %v", err)
	}
	if w.srv.Calls().Op["ReceiveMessage"] == 0 {
		t.Error("expect receives once the name resolved")
	}
}

func TestNewParkerComparesNamesAndURLs(t *testing.T) {
	w := newParkWorld(t, "orders", "parked")
	for _, tc := range []struct{ queue, parking string }{
		{"orders", w.queue}, {w.queue, "orders"}, {"orders", "orders"},
	} {
		if _, err := NewParker(w.client, tc.queue, tc.parking); !errors.Is(err, ErrConfig) {
			t.Errorf("NewParker(%q, %q): expect ErrConfig (the queue itself), got %v", tc.queue, tc.parking, err)
		}
	}
	for _, tc := range []struct{ queue, parking string }{
		{"orders", "parked"}, {"orders", w.parking}, {w.queue, "parked"},
	} {
		p, err := NewParker(w.client, tc.queue, tc.parking)
		if err != nil {
			t.Fatalf("NewParker(%q, %q): %v", tc.queue, tc.parking, err)
		}
		if err := p.Park(context.Background(), &handler.Message{ID: "m", Body: tc.queue}, "r", nil); err != nil {
			t.Errorf("Park with %q → %q: %v", tc.queue, tc.parking, err)
		}
	}
	if got := len(w.parked(t)); got != 3 {
		t.Errorf("expect 3 parked, got %d", got)
	}

	p, err := NewParker(apiOnly{w.client}, "orders", "parked")
	if err != nil {
		t.Fatal(err)
	}
	m := &handler.Message{ID: "m", Body: "x", ReceiptHandle: "rh"}
	if err := p.Park(context.Background(), m, "r", nil); !errors.Is(err, ErrConfig) {
		t.Errorf("expect Park to fail with ErrConfig without GetQueueUrl, got %v", err)
	}
	if err := p.Hold(context.Background(), m, time.Second); !errors.Is(err, ErrConfig) {
		t.Errorf("expect Hold to fail with ErrConfig without GetQueueUrl, got %v", err)
	}
	p, err = NewParker(apiOnly{w.client}, w.queue, "parked")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Park(context.Background(), m, "r", nil); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), `"parked"`) {
		t.Errorf("expect the parking queue's name refused with ErrConfig, got %v", err)
	}
}
