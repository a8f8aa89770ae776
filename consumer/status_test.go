package consumer

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/sqsfake"
)

func TestStateString(t *testing.T) {
	for s, want := range map[State]string{StateNotStarted: "not started", StateStarting: "starting", StateReceiving: "receiving",
		StatePaused: "paused", StateDraining: "draining", StateStopped: "stopped", State(-1): "unknown", State(99): "unknown"} {
		if got := s.String(); got != want {
			t.Errorf("expect %q, got %q", want, got)
		}
	}
}

// The consumer is ready once its first call, GetQueueAttributes, has
// answered: one round trip, not the first 20 s long poll on an idle queue.
func TestReadyWithinOneRoundTripOfStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		f.srv.Inject(sqsfake.Fault{Latency: 10 * time.Millisecond})
		c := newConsumer(t, f, func(context.Context, *handler.Message) error { return nil })
		if s := c.Status(); s.State != StateNotStarted || s.Ready || s.NotReady != "not started" {
			t.Fatalf("expect not started, got %+v", s)
		}
		stop := started(t, c)
		synctest.Wait()
		if s := c.Status(); s.State != StateStarting || s.Ready || s.Started.IsZero() {
			t.Fatalf("expect starting, not ready, got %+v", s)
		}
		time.Sleep(15 * time.Millisecond)
		s := c.Status()
		if s.State != StateReceiving || !s.Ready || !s.LastReceive.IsZero() {
			t.Fatalf("expect ready one round trip after start, the first long poll still on its way, got %+v", s)
		}
		time.Sleep(21 * time.Second)
		if s := c.Status(); s.LastReceive.IsZero() || !s.Ready {
			t.Errorf("expect the empty long poll recorded, got %+v", s)
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	})
}

// A consumer whose VisibilityTimeout is set makes no first call: it is
// ready at once.
func TestReadyAtOnceWithVisibilityTimeoutSet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		c := newConsumer(t, f, func(context.Context, *handler.Message) error { return nil }, func(o *Options) { o.VisibilityTimeout = time.Minute })
		stop := started(t, c)
		synctest.Wait()
		if s := c.Status(); !s.Ready || s.State != StateReceiving {
			t.Fatalf("expect ready, got %+v", s)
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	})
}

// Readiness turns false while receives keep failing (three in a row), with
// the last error as the reason, and true again at the next successful
// receive; a throttled receive is no failure.
func TestNotReadyWhileReceivesKeepFailing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		c := newConsumer(t, f, func(context.Context, *handler.Message) error { return nil })
		stop := started(t, c)
		time.Sleep(time.Second)
		throttled := f.srv.Inject(sqsfake.Fault{Op: "ReceiveMessage", Times: 5, Err: sqsfake.ErrThrottled})
		time.Sleep(21 * time.Second) // the long poll on its way ends, then five throttled receives
		if s := c.Status(); throttled.Fired() != 5 || !s.Ready || !s.Throttled || s.FailedReceives != 0 {
			t.Fatalf("expect throttled receives to leave it ready and show throttled, got %d fired, %+v", throttled.Fired(), s)
		}
		failing := f.srv.Inject(sqsfake.Fault{Op: "ReceiveMessage", Err: sqsfake.ErrInternal})
		// Ready through the first failures; not ready once the third is in
		// (several receivers may fail within one step of the poll).
		until(t, "three failed receives", func() bool {
			ready := c.Status().Ready // before Fired, which only grows
			if fired := failing.Fired(); fired < notReadyAfter && !ready {
				t.Fatalf("expect ready until the %dth failure, not ready after %d", notReadyAfter, fired)
			}
			return failing.Fired() >= notReadyAfter
		})
		synctest.Wait() // the consumer has taken in the failures
		s := c.Status()
		if s.Ready || s.FailedReceives < notReadyAfter || s.LastError == nil || !strings.Contains(s.NotReady, "SQS is failing") || s.State != StateReceiving {
			t.Fatalf("expect not ready after %d failed receives, with the error, got %+v", notReadyAfter, s)
		}
		failing.Remove()
		until(t, "ready again", func() bool { return c.Status().Ready })
		if s := c.Status(); s.LastReceive.Before(s.LastErrorAt) || s.LastError == nil {
			t.Errorf("expect a receive after the last error, and the error kept, got %+v", s)
		}
		time.Sleep(throttledFor)
		if c.Status().Throttled {
			t.Error("expect Throttled to clear 10 s after the last throttle")
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	})
}

// A queue that does not exist stops Run with its error: Status says
// stopped, with the error, and not ready.
func TestStatusAfterRunFailed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		c := newConsumer(t, f, func(context.Context, *handler.Message) error { return nil })
		if _, err := f.client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: &f.url}); err != nil {
			t.Fatal(err)
		}
		err := c.Run(context.Background())
		s := c.Status()
		if err == nil || s.State != StateStopped || s.RunError == nil || s.Ready || !strings.HasPrefix(s.NotReady, "stopped: ") {
			t.Fatalf("expect stopped with Run's error, got %v, %+v", err, s)
		}
	})
}

// A receive SQS stops answering (no error, no answer) makes the consumer
// not ready 30 s past its long poll, and ready again once it is answered.
func TestNotReadyWhileAReceiveGoesUnanswered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		c := newConsumer(t, f, func(context.Context, *handler.Message) error { return nil })
		stop := started(t, c)
		time.Sleep(time.Second)
		f.srv.Inject(sqsfake.Fault{Op: "ReceiveMessage", Times: 1, Latency: 5 * time.Minute})
		time.Sleep(19*time.Second + 20*time.Second + unansweredAfter) // the next receive's long poll, and 30 s
		if s := c.Status(); !s.Ready {
			t.Fatalf("expect ready up to 30 s past the long poll, got %s", s.NotReady)
		}
		time.Sleep(time.Second)
		if s := c.Status(); s.Ready || !strings.HasPrefix(s.NotReady, "SQS is not answering: a receive has waited ") {
			t.Fatalf("expect not ready, SQS not answering, got %+v", s)
		}
		time.Sleep(5 * time.Minute)
		if s := c.Status(); !s.Ready {
			t.Fatalf("expect ready once the receive is answered, got %s", s.NotReady)
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	})
}

// A probe may ask for Status while Run resolves the queue's name: it reads
// the name until Run has the URL, then the URL, without a data race (the
// race detector fails this test when Status reads the field Run writes).
func TestStatusQueueWhileRunResolvesAName(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		c, err := New(f.client, "jobs", func(context.Context, *handler.Message) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		probed := make(chan struct{})
		go func() {
			defer close(probed)
			for range 100 {
				if q := c.Status().Queue; q != "jobs" && q != f.url {
					t.Errorf("expect the name or the URL, got %q", q)
				}
				time.Sleep(time.Millisecond)
			}
		}()
		stop := started(t, c)
		<-probed
		until(t, "ready", func() bool { return c.Status().Ready })
		if q := c.Status().Queue; q != f.url {
			t.Errorf("expect the resolved URL once ready, got %q", q)
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	})
}
