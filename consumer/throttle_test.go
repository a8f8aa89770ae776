package consumer

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/internal/throttle"
	"github.com/sqskit/sqskit/sqsfake"
)

// A throttled receive halves the receive target, once per round trip,
// and full receives then grow it by a fraction of a receiver per round
// trip, where they doubled it before any throttle. Before, a throttle took
// one receiver off and each full receive added one back, so the receives
// stayed above the quota with about half of them throttled.
func TestThrottledReceiveHalvesTheReceiveTarget(t *testing.T) {
	r := &run{o: &Options{Tuning: Tuning{ReceiveConcurrency: 1, MaxReceiveConcurrency: 24}}, intake: intake{recv: newReceiveState(1, 24)}}
	r.turnCond = sync.NewCond(&r.mu)
	full := func(n int) {
		for range n {
			r.mu.Lock()
			r.adaptLocked(10, 10)
			r.mu.Unlock()
		}
	}
	full(7)
	if r.recv.target != 8 {
		t.Fatalf("expect full receives to grow the target to 8, got %d", r.recv.target)
	}
	r.mu.Lock()
	before := r.recv.win.Start() // in flight through the wider window
	after := r.recv.win.Start()
	r.mu.Unlock()
	r.receiveFailed(after, sqsfake.ErrThrottled)
	if r.recv.target != 4 {
		t.Fatalf("expect a throttled receive to halve the target to 4, got %d", r.recv.target)
	}
	r.receiveFailed(before, sqsfake.ErrThrottled)
	if r.recv.target != 4 {
		t.Fatalf("expect a receive sent before the cut not to cut again, got %d", r.recv.target)
	}
	full(4)
	if r.recv.target != 4 {
		t.Errorf("expect a round trip of full receives to grow the target by less than one, got %d", r.recv.target)
	}
	full(int(5 / throttle.Increase))
	if r.recv.target != 5 {
		t.Errorf("expect %v round trips to grow it by one, got %d", 1/throttle.Increase, r.recv.target)
	}
	r.receiveFailed(r.recv.win.Start(), sqsfake.ErrInternal)
	if r.recv.target != 4 {
		t.Errorf("expect another error to take one receiver off, got %d", r.recv.target)
	}
}

// requestCounter counts the consumer's calls, each of which may be several
// requests when the SDK retries.
type requestCounter struct {
	API
	receives, deletes atomic.Int64
}

func (c *requestCounter) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	c.receives.Add(1)
	return c.API.ReceiveMessage(ctx, in, optFns...)
}

func (c *requestCounter) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	c.deletes.Add(1)
	return c.API.DeleteMessageBatch(ctx, in, optFns...)
}

// With the SDK's standard retryer, a throttled receive or delete comes
// back to the consumer at once, which paces itself: the SDK sends no
// request of its own (its wait of 0 to 2 s, then 0 to 4 s, would stack on
// the consumer's, holding places and FIFO groups, and spend its client's
// retry tokens). Every other error is still the SDK's to retry.
func TestThrottledCallsAreNotRetriedByTheSDK(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs.fifo", nil)
		f.send(t, "g", "m")
		client := f.srv.Client(func(o *sqs.Options) { o.Retryer = retry.NewStandard() })
		api := &requestCounter{API: client}
		f.srv.Inject(sqsfake.Fault{Op: "ReceiveMessage", Times: 1, Err: sqsfake.ErrThrottled})
		f.srv.Inject(sqsfake.Fault{Op: "DeleteMessageBatch", Times: 1, Err: sqsfake.ErrThrottled})
		f.srv.Inject(sqsfake.Fault{Op: "DeleteMessageBatch", Times: 1, Err: sqsfake.ErrInternal})
		c, err := New(api, f.url, func(context.Context, *handler.Message) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		f.srv.ResetCalls()
		stop := started(t, c)
		until(t, "the delete", func() bool { return c.Stats().Deleted == 1 })
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		requests := f.srv.Calls().Op
		if got, want := requests["ReceiveMessage"], int(api.receives.Load()); got != want {
			t.Errorf("expect one request per receive, got %d requests for %d receives", got, want)
		}
		// The throttled delete is the consumer's to retry (a call of its
		// own); the server error the SDK retries within the next call.
		if got, calls := requests["DeleteMessageBatch"], api.deletes.Load(); got != 3 || calls != 2 {
			t.Errorf("expect 3 delete requests in 2 calls, got %d in %d", got, calls)
		}
	})
}

// A throttled delete did nothing, so it is tried again however often it
// is throttled, while Run lasts, instead of counting against the attempts
// a failing delete gets (after which the message would come back and be
// handled again).
func TestThrottledDeleteIsRetriedBeyondSettleAttempts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		f.send(t, "", "m")
		fault := f.srv.Inject(sqsfake.Fault{Op: "DeleteMessageBatch", Times: 2 * settleAttempts, Err: sqsfake.ErrThrottled})
		var failed atomic.Int64
		c := newConsumer(t, f, func(context.Context, *handler.Message) error { return nil }, func(o *Options) {
			o.Hooks.DeleteFailed = func(context.Context, *handler.Message, error) { failed.Add(1) }
		})
		stop := started(t, c)
		until(t, "the delete", func() bool { return c.Stats().Deleted == 1 || failed.Load() > 0 })
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if fault.Fired() != 2*settleAttempts || failed.Load() != 0 || c.Stats().Deleted != 1 {
			t.Errorf("expect the message deleted after %d throttled deletes, got %d throttled, deleted %d, %d given up",
				2*settleAttempts, fault.Fired(), c.Stats().Deleted, failed.Load())
		}
	})
}
