package consumer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/sqsfake"
)

// spyClient records, per operation, the calls in flight now and at most,
// and the receives' inputs.
type spyClient struct {
	API
	mu       sync.Mutex
	now, max map[string]int
	receives []sqs.ReceiveMessageInput
	attrs    int
}

func newSpy(api API) *spyClient {
	return &spyClient{API: api, now: map[string]int{}, max: map[string]int{}}
}

func (s *spyClient) enter(op string) func() {
	s.mu.Lock()
	s.now[op]++
	s.max[op] = max(s.max[op], s.now[op])
	s.mu.Unlock()
	return func() { s.mu.Lock(); s.now[op]--; s.mu.Unlock() }
}

func (s *spyClient) peak(op string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.max[op]
}

func (s *spyClient) resetPeaks() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.max)
}

func (s *spyClient) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	defer s.enter("ReceiveMessage")()
	s.mu.Lock()
	s.receives = append(s.receives, *in)
	s.mu.Unlock()
	return s.API.ReceiveMessage(ctx, in, optFns...)
}

func (s *spyClient) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	defer s.enter("DeleteMessageBatch")()
	return s.API.DeleteMessageBatch(ctx, in, optFns...)
}

func (s *spyClient) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	defer s.enter("ChangeMessageVisibilityBatch")()
	return s.API.ChangeMessageVisibilityBatch(ctx, in, optFns...)
}

func (s *spyClient) GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	s.mu.Lock()
	s.attrs++
	s.mu.Unlock()
	return s.API.GetQueueAttributes(ctx, in, optFns...)
}

func TestDefaultsSizeMaxInFlightForTheCallsInFlight(t *testing.T) {
	f := newQueue(t, "jobs", nil)
	c, err := New(f.client, f.url, func(context.Context, *handler.Message) error { return nil }, func(o *Options) { o.Concurrency = 32 })
	if err != nil {
		t.Fatal(err)
	}
	o := c.opts
	if o.ReceiveConcurrency != 1 || o.MaxReceiveConcurrency != 24 || o.DeleteConcurrency != 24 {
		t.Fatalf("unexpected concurrency defaults %+v", o)
	}
	if want := 32 + 10*(24+24); o.MaxInFlight != want {
		t.Fatalf("expect MaxInFlight %d, got %d", want, o.MaxInFlight)
	}
	if o.HandlerTimeout != 15*time.Minute || o.DeleteLinger != 10*time.Millisecond || o.VisibilityTimeout != 0 {
		t.Fatalf("unexpected defaults %+v", o)
	}
}

// With 10 ms per call and a backlog, receives grow toward
// MaxReceiveConcurrency and deletes run concurrently; when the queue is
// idle again, one long poll per floor receiver is all it costs.
func TestReceivesAdaptToBacklogAndIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		f.send(t, "", numbered(3000)...)
		f.srv.Inject(sqsfake.Fault{Latency: 10 * time.Millisecond})
		spy := newSpy(f.client)
		c, err := New(spy, f.url, func(context.Context, *handler.Message) error { return nil }, func(o *Options) { o.Concurrency = 32 })
		if err != nil {
			t.Fatal(err)
		}
		stop := started(t, c)
		began := time.Now()
		for c.Stats().Deleted < 3000 { // to the millisecond, so the log shows the drain time
			if time.Since(began) > time.Hour {
				t.Fatalf("3000 deletes not done after an hour of fake time: %+v", c.Stats())
			}
			time.Sleep(time.Millisecond)
		}
		took := time.Since(began)
		if r := spy.peak("ReceiveMessage"); r < 12 || r > 24 {
			t.Errorf("expect receives to grow toward 24 in flight, peaked at %d", r)
		}
		if d := spy.peak("DeleteMessageBatch"); d < 6 || d > 24 {
			t.Errorf("expect up to 24 concurrent deletes, peaked at %d", d)
		}
		// 3,000 messages at ten per call and 24 calls in flight each way
		// take about 20 round trips; one call at a time would take 600.
		if took > time.Second {
			t.Errorf("expect the backlog drained in well under a second of fake time, took %v", took)
		}
		calls := f.srv.Calls().Op
		t.Logf("calls %v in %v", calls, took)
		// The floor is 0.2 (a receive and a delete batch per ten); one
		// empty receive per receiver as the queue runs dry adds 0.008, and
		// how partial delete batches fall depends on goroutine scheduling
		// (0.208 to 0.214 here); the benchmark measures 0.21 or less.
		if per := float64(calls["ReceiveMessage"]+calls["DeleteMessageBatch"]) / 3000; per > 0.22 {
			t.Errorf("expect about 0.21 calls per message, got %.3f (%v)", per, calls)
		}

		time.Sleep(time.Minute) // the burst's extra receivers see empty polls and retire
		f.srv.ResetCalls()
		spy.resetPeaks()
		time.Sleep(10 * time.Minute)
		if n := f.srv.Calls().Op["ReceiveMessage"]; n > 31 {
			t.Errorf("expect one 20 s long poll at a time on an idle queue (30 in 10 min), got %d", n)
		}
		if r := spy.peak("ReceiveMessage"); r != 1 {
			t.Errorf("expect one receive in flight when idle, got %d", r)
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestIdleQueueCostsOneLongPollPerFloorReceiver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		c := newConsumer(t, f, func(context.Context, *handler.Message) error { return nil }, func(o *Options) { o.ReceiveConcurrency = 3 })
		stop := started(t, c)
		time.Sleep(10*time.Minute - time.Millisecond)
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if n := f.srv.Calls().Op["ReceiveMessage"]; n != 3*30 {
			t.Fatalf("expect 3 receivers × 30 long polls of 20 s, got %d", n)
		}
	})
}

// A delete batch stuck in a slow call, or retrying, holds up no other.
func TestSlowDeleteBlocksNoOther(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		f.send(t, "", numbered(100)...)
		f.srv.Inject(sqsfake.Fault{Op: "DeleteMessageBatch", Times: 1, Latency: time.Minute})
		f.srv.Inject(sqsfake.Fault{Op: "DeleteMessageBatch", Times: 3, Entries: &sqsfake.EntryFault{Match: func(i int, _ string) bool { return i == 0 }}})
		c := newConsumer(t, f, func(context.Context, *handler.Message) error { return nil })
		stop := started(t, c)
		began := time.Now()
		until(t, "all but the slow batch deleted", func() bool { return c.Stats().Deleted >= 90 })
		if took := time.Since(began); took > 5*time.Second {
			t.Fatalf("expect the other deletes done while one call hangs, took %v", took)
		}
		until(t, "every delete", func() bool { return c.Stats().Deleted == 100 })
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if s := c.Stats(); s.DeleteFailed != 0 {
			t.Fatalf("expect retried entries deleted in the end, got %+v", s)
		}
	})
}

func TestVisibilityTimeoutFromTheQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", map[string]string{"VisibilityTimeout": "120"})
		f.send(t, "", "slow")
		spy := newSpy(f.client)
		c, err := New(spy, f.url, func(ctx context.Context, m *handler.Message) error {
			time.Sleep(5 * time.Minute)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		stop := started(t, c)
		until(t, "the delete", func() bool { return c.Stats().Deleted == 1 })
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if spy.attrs != 1 {
			t.Fatalf("expect one GetQueueAttributes, got %d", spy.attrs)
		}
		// The first receive goes while the attributes are read, and leaves
		// the visibility to the queue; the next ones ask for what was read.
		if v := spy.receives[len(spy.receives)-1].VisibilityTimeout; v != 120 {
			t.Fatalf("expect receives to ask for the queue's 120 s, got %d", v)
		}
		// A 40 s heartbeat extends a 5-minute handler at every beat, 7
		// times (with a 30 s visibility it would have taken 30).
		if n := c.Stats().Extended; n < 6 || n > 8 {
			t.Fatalf("expect extensions every 40 s, got %d", n)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		spy := newSpy(f.client)
		c, err := New(spy, f.url, func(context.Context, *handler.Message) error { return nil }, func(o *Options) { o.VisibilityTimeout = time.Minute })
		if err != nil {
			t.Fatal(err)
		}
		stop := started(t, c)
		time.Sleep(time.Second)
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if spy.attrs != 0 || spy.receives[0].VisibilityTimeout != 60 {
			t.Fatalf("expect the option used without asking the queue, got %d reads and %d s", spy.attrs, spy.receives[0].VisibilityTimeout)
		}
	})
}

func TestVisibilityTimeoutReadFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		f.send(t, "", "m")
		f.srv.Inject(sqsfake.Fault{Op: "GetQueueAttributes", Times: 2})
		c := newConsumer(t, f, func(context.Context, *handler.Message) error { return nil })
		stop := started(t, c)
		until(t, "the delete after two failed reads", func() bool { return c.Stats().Deleted == 1 })
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		c := newConsumer(t, f, func(context.Context, *handler.Message) error { return nil })
		if _, err := f.client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: &f.url}); err != nil {
			t.Fatal(err)
		}
		var missing *types.QueueDoesNotExist
		if err := c.Run(context.Background()); !errors.As(err, &missing) {
			t.Fatalf("expect QueueDoesNotExist from Run, got %v", err)
		}
	})
}

// A handler past HandlerTimeout: its ctx is cancelled with the cause
// handler.ErrHandlerTimeout, and its message fails and is released at once, even
// when the handler ignores its ctx and goes on running.
func TestHandlerTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		f.send(t, "", "polite", "deaf")
		deaf := make(chan struct{})
		var mu sync.Mutex
		var causes, failures []error
		c := newConsumer(t, f, func(ctx context.Context, m *handler.Message) error {
			if m.Body == "deaf" {
				<-deaf
				return nil
			}
			<-ctx.Done()
			mu.Lock()
			causes = append(causes, context.Cause(ctx))
			mu.Unlock()
			return ctx.Err()
		}, func(o *Options) {
			o.HandlerTimeout = 5 * time.Second
			o.OnFailure = LeaveToTimeout
			o.Hooks.Failed = func(_ context.Context, _ *handler.Message, err error) {
				mu.Lock()
				failures = append(failures, err)
				mu.Unlock()
			}
		})
		stop := started(t, c)
		began := time.Now()
		until(t, "both failed", func() bool { return c.Stats().Failed == 2 && c.Stats().InFlight == 0 })
		if took := time.Since(began); took < 5*time.Second || took > 6*time.Second {
			t.Fatalf("expect both failed at the 5 s timeout, took %v", took)
		}
		until(t, "the polite handler's return", func() bool { mu.Lock(); defer mu.Unlock(); return len(causes) == 1 })
		mu.Lock()
		gotCauses, gotFailures := causes, failures
		mu.Unlock()
		if !errors.Is(gotCauses[0], handler.ErrHandlerTimeout) {
			t.Fatalf("expect the polite handler's ctx cancelled with handler.ErrHandlerTimeout, got %v", gotCauses)
		}
		for _, err := range gotFailures {
			if !errors.Is(err, handler.ErrHandlerTimeout) {
				t.Fatalf("expect handler.ErrHandlerTimeout failures, got %v", gotFailures)
			}
		}
		close(deaf) // returns nil, too late: nothing is deleted
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if c.Stats().Deleted != 0 {
			t.Fatal("expect nothing deleted after a timeout")
		}
	})
}

// Run returns after the shutdown timeout even when a handler ignores its
// cancelled ctx; that message is released, not deleted.
func TestShutdownDoesNotWaitForADeafHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		f.send(t, "", "deaf")
		deaf := make(chan struct{})
		c := newConsumer(t, f, func(context.Context, *handler.Message) error { <-deaf; return nil }, func(o *Options) {
			o.ShutdownTimeout = 3 * time.Second
		})
		stop := started(t, c)
		until(t, "the handler", func() bool { return c.Stats().Received == 1 })
		began := time.Now()
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(began); took > 5*time.Second {
			t.Fatalf("expect Run back soon after the 3 s timeout, took %v", took)
		}
		if v, _ := f.counts(t); v != 1 {
			t.Fatalf("expect the message released, got %d visible", v)
		}
		close(deaf)
	})
}

// Run returns at most ShutdownTimeout + 1 s after its ctx is done whatever
// SQS calls hang: a delete, a release or a heartbeat extension that never
// answers is given up at that bound (its message comes back), and nothing
// Run started outlives it. The settle calls ran on a ctx nothing cancelled
// until Run returned, so one hung call held Run for as long as it hung.
func TestShutdownBoundedWhenACallHangs(t *testing.T) {
	for _, c := range []struct {
		name, op string
		fail     bool // the handler fails: its release hangs
		slow     bool // the handler outlives the shutdown timeout
	}{
		{"delete", "DeleteMessageBatch", false, false},
		{"release", "ChangeMessageVisibilityBatch", true, false},
		{"extension", "ChangeMessageVisibilityBatch", false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newQueue(t, "jobs", nil)
				f.send(t, "", "a")
				cons := newConsumer(t, f, func(ctx context.Context, m *handler.Message) error {
					if c.slow {
						<-ctx.Done()
					}
					if c.fail {
						return errors.New("boom")
					}
					return nil
				}, func(o *Options) {
					o.VisibilityTimeout = 30 * time.Second
					o.ShutdownTimeout = 5 * time.Second
					o.OnFailure = ReleaseNow
				})
				f.srv.Inject(sqsfake.Fault{Op: c.op, Latency: 24 * time.Hour}) // honours ctx, as the SDK does
				stop := started(t, cons)
				time.Sleep(11 * time.Second) // the call is on its way (a beat at 10 s for the extension)
				began := time.Now()
				if err := stop(); err != nil {
					t.Fatal(err)
				}
				if took := time.Since(began); took > 6*time.Second {
					t.Fatalf("expect Run back within ShutdownTimeout (5 s) + 1 s, took %v", took)
				}
				if s := cons.Stats(); s.InFlight != 0 {
					t.Fatalf("expect nothing held after Run returned, got %+v", s)
				}
			})
		})
	}
}

// A HandlerTimeout that fires while Run shuts down releases its message
// before Run returns. Its timer was never joined: its release could be
// queued after the settler had drained, and was sent after Run returned on
// a cancelled ctx, so InFlight stayed 1 and the message came back only after
// its visibility timeout.
func TestHandlerTimeoutDuringShutdownIsJoined(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		f.send(t, "", "a")
		c := newConsumer(t, f, func(ctx context.Context, m *handler.Message) error {
			<-ctx.Done()
			return ctx.Err()
		}, func(o *Options) {
			o.VisibilityTimeout = 30 * time.Second
			o.HandlerTimeout = 2 * time.Second
			o.OnFailure = ReleaseNow
			o.Hooks.Failed = func(context.Context, *handler.Message, error) { time.Sleep(time.Millisecond) } // a hook that writes a metric
		})
		stop := started(t, c)
		time.Sleep(time.Second)
		if err := stop(); err != nil { // the handler times out at 2 s, during the shutdown
			t.Fatal(err)
		}
		s := c.Stats()
		if visible, _ := f.counts(t); s.InFlight != 0 || s.Released != 1 || visible != 1 {
			t.Fatalf("expect the timed-out message released before Run returned, got %+v, %d visible", s, visible)
		}
	})
}

func TestNewBatchHandsEachReceiveToTheHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		f.send(t, "", numbered(25)...)
		var mu sync.Mutex
		var sizes []int
		attempts := map[string]int{}
		c, err := NewBatch(f.client, f.url, func(_ context.Context, msgs []*handler.Message) []error {
			mu.Lock()
			defer mu.Unlock()
			sizes = append(sizes, len(msgs))
			errs := make([]error, len(msgs))
			for i, m := range msgs {
				attempts[m.Body]++
				if m.Body == "7" && attempts[m.Body] == 1 {
					errs[i] = errors.New("not yet")
				}
			}
			if len(msgs) > 1 && attempts["short"] == 0 {
				attempts["short"]++
				return errs[:len(errs)-1] // the last one gets no result: it fails
			}
			return errs
		}, func(o *Options) { o.OnFailure = ReleaseNow })
		if err != nil {
			t.Fatal(err)
		}
		stop := started(t, c)
		until(t, "25 deletes", func() bool { return c.Stats().Deleted == 25 })
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if s := c.Stats(); s.Failed != 2 || s.Handled != 25 {
			t.Fatalf("expect the failed and the unanswered message retried, got %+v", s)
		}
		for _, n := range sizes {
			if n < 1 || n > 10 {
				t.Fatalf("expect batches of one receive (1 to 10), got %v", sizes)
			}
		}
		if slices.Max(sizes) < 2 {
			t.Fatalf("expect several messages per call, got %v", sizes)
		}
	})
}

// With a handler.BatchHandler on a FIFO queue, a message after a failed one of its
// group is not deleted even if the handler reported it done: the group's
// first successes stay in send order.
func TestNewBatchFIFOHoldsBackAfterAFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs.fifo", nil)
		f.send(t, "a", "a1", "a2", "a3")
		f.send(t, "b", "b1", "b2")
		var mu sync.Mutex
		var firstDone []string
		done := map[string]bool{}
		failedOnce := false
		var held []error
		c, err := NewBatch(f.client, f.url, func(_ context.Context, msgs []*handler.Message) []error {
			errs := make([]error, len(msgs))
			for i, m := range msgs {
				if m.Body == "a2" && !failedOnce {
					failedOnce = true
					errs[i] = errors.New("a2 fails once")
				}
			}
			return errs
		}, func(o *Options) {
			o.OnFailure = ReleaseNow
			// Handled, not Deleted: deletes of different batches may
			// complete in any order; the guarantee is the order of first
			// successful handlings.
			o.Hooks.Handled = func(_ context.Context, m *handler.Message, _ time.Duration) {
				mu.Lock()
				defer mu.Unlock()
				if !done[m.Body] {
					done[m.Body] = true
					firstDone = append(firstDone, m.Body)
				}
			}
			o.Hooks.Failed = func(_ context.Context, _ *handler.Message, err error) {
				if errors.Is(err, handler.ErrHeldBack) {
					mu.Lock()
					held = append(held, err)
					mu.Unlock()
				}
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		stop := started(t, c)
		until(t, "5 deletes", func() bool { return c.Stats().Deleted == 5 })
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		var a []string
		for _, b := range firstDone {
			if strings.HasPrefix(b, "a") {
				a = append(a, b)
			}
		}
		if !slices.Equal(a, []string{"a1", "a2", "a3"}) || len(held) == 0 {
			t.Fatalf("expect group a handled in order with a3 held back once, got %v (held %d)", firstDone, len(held))
		}
	})
}

func TestFIFOGuardSizesReceives(t *testing.T) {
	now := time.Unix(0, 0)
	g := newFIFOGuard(true, 2)
	if n, w := g.size(0, now, 10, 20*time.Second); n != 10 || w != 20*time.Second {
		t.Fatalf("expect a full receive with nothing suspect, got %d, %v", n, w)
	}
	// Receiver 0 waits until 21 s: a head failing now with a 1 s delay comes
	// back only after that poll can no longer take its group-mates.
	d := g.failed("g", now, time.Second, time.Time{})
	if d < 21*time.Second || d > 23*time.Second {
		t.Fatalf("expect the release delayed past the 20 s poll, got %v", d)
	}
	if n, w := g.size(1, now, 10, 20*time.Second); n != 10 || w != 20*time.Second {
		t.Fatalf("expect a poll ending before the head is due to stay full, got %d, %v", n, w)
	}
	if n, w := g.size(1, now.Add(15*time.Second), 10, 20*time.Second); n != 10 || w >= 7*time.Second {
		t.Fatalf("expect a shorter poll that ends before the head is due, got %d, %v", n, w)
	}
	if n, _ := g.size(1, now.Add(22*time.Second), 10, 20*time.Second); n != 1 {
		t.Fatalf("expect one message per receive while the head is due, got %d", n)
	}
	g.received(1, []*inflight{{group: "g"}})
	if n, w := g.size(1, now.Add(23*time.Second), 10, 20*time.Second); n != 10 || w != busyWait {
		t.Fatalf("expect full receives, with the busy wait, once the head is back, got %d, %v", n, w)
	}
	std := newFIFOGuard(false, 2)
	if d := std.failed("g", now, time.Second, time.Time{}); d != time.Second {
		t.Fatalf("expect no change on standard queues, got %v", d)
	}
}

// On a FIFO queue a head that always fails (a poison message) is
// dead-lettered alone, and its group-mates are each handled once, in order,
// after it. SQS hands the mates out with the head and releases them with it
// at each failure; unless the head comes back alone (the fifoGuard's job),
// each failure costs each mate a receive, and behind a poison message they
// reach maxReceiveCount (3 here) unhandled and are dead-lettered with it.
func TestFIFOPoisonHeadIsDeadLetteredAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sqsfake.New()
		client := srv.Client()
		ctx := context.Background()
		dlq, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("jobs-dlq.fifo"), Attributes: map[string]string{"FifoQueue": "true"}})
		if err != nil {
			t.Fatal(err)
		}
		arn, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: dlq.QueueUrl, AttributeNames: []types.QueueAttributeName{"QueueArn"}})
		if err != nil {
			t.Fatal(err)
		}
		q, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("jobs.fifo"), Attributes: map[string]string{
			"FifoQueue": "true", "ContentBasedDeduplication": "true",
			"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":3}`, arn.Attributes["QueueArn"]),
		}})
		if err != nil {
			t.Fatal(err)
		}
		f := &qfix{srv: srv, client: client, url: *q.QueueUrl}
		f.send(t, "g", "poison", "m1", "m2", "m3", "m4", "m5")
		f.send(t, "h", "h1", "h2")
		var mu sync.Mutex
		var handled []string
		c := newConsumer(t, f, func(_ context.Context, m *handler.Message) error {
			if m.Body == "poison" {
				return errors.New("cannot handle")
			}
			mu.Lock()
			handled = append(handled, m.Body)
			mu.Unlock()
			return nil
		})
		stop := started(t, c)
		until(t, "every good message handled", func() bool { mu.Lock(); defer mu.Unlock(); return len(handled) == 7 })
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: dlq.QueueUrl, MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		var dead []string
		for _, m := range out.Messages {
			dead = append(dead, aws.ToString(m.Body))
		}
		if !slices.Equal(dead, []string{"poison"}) {
			t.Fatalf("expect only the poison message dead-lettered, got %v", dead)
		}
		var g []string
		for _, b := range handled {
			if b[0] == 'm' {
				g = append(g, b)
			}
		}
		if !slices.Equal(g, []string{"m1", "m2", "m3", "m4", "m5"}) {
			t.Fatalf("expect the group's messages handled once each, in order, got %v", g)
		}
	})
}

// leaseOf fails the heartbeat's extensions of the messages it names (by
// receipt handle), in a retryable way: their leases lapse while others'
// hold.
type leaseOf struct {
	API
	mu      sync.Mutex
	refused map[string]bool
}

func (l *leaseOf) refuse(handle string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refused[handle] = true
}

func (l *leaseOf) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, fns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	l.mu.Lock()
	pass := *in
	pass.Entries = nil
	var refused []types.BatchResultErrorEntry
	for _, e := range in.Entries {
		if l.refused[aws.ToString(e.ReceiptHandle)] {
			refused = append(refused, types.BatchResultErrorEntry{Id: e.Id, Code: aws.String("InternalError"), Message: aws.String("refused"), SenderFault: false})
		} else {
			pass.Entries = append(pass.Entries, e)
		}
	}
	l.mu.Unlock()
	out := &sqs.ChangeMessageVisibilityBatchOutput{}
	if len(pass.Entries) > 0 {
		var err error
		if out, err = l.API.ChangeMessageVisibilityBatch(ctx, &pass, fns...); err != nil {
			return nil, err
		}
	}
	out.Failed = append(out.Failed, refused...)
	return out, nil
}

// A handler.BatchHandler's message whose lease was lost keeps its FIFO group-mates
// later in the same call from being deleted, as a failure does: the lease
// loss was decided after the hold-back rule ran on the handler's results,
// so a later message the handler reported done was deleted while the lost
// one came back, and the group's order broke.
func TestNewBatchFIFOHoldsBackAfterALostLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs.fifo", nil)
		f.send(t, "a", "a1", "a2")
		api := &leaseOf{API: f.client, refused: map[string]bool{}}
		var mu sync.Mutex
		var firstDone []string
		done := map[string]bool{}
		calls := 0
		c, err := NewBatch(api, f.url, func(_ context.Context, msgs []*handler.Message) []error {
			calls++
			if calls == 1 {
				time.Sleep(15 * time.Second) // past a1's 10 s visibility, which is not extended
			}
			return make([]error, len(msgs))
		}, func(o *Options) {
			o.VisibilityTimeout = 10 * time.Second
			o.OnFailure = ReleaseNow
			o.Hooks.Received = func(_ context.Context, m *handler.Message) {
				if m.Body == "a1" && m.ReceiveCount() == 1 {
					api.refuse(m.ReceiptHandle)
				}
			}
			o.Hooks.Handled = func(_ context.Context, m *handler.Message, _ time.Duration) {
				mu.Lock()
				defer mu.Unlock()
				if !done[m.Body] {
					done[m.Body] = true
					firstDone = append(firstDone, m.Body)
				}
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		stop := started(t, c)
		until(t, "2 deletes", func() bool { return c.Stats().Deleted == 2 })
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if s := c.Stats(); !slices.Equal(firstDone, []string{"a1", "a2"}) || s.LeaseLost != 1 {
			t.Fatalf("expect a1's lease lost, a2 held back, then both handled in order, got %v, %+v", firstDone, s)
		}
	})
}

// stuckAttributes never answers GetQueueAttributes before its ctx ends.
type stuckAttributes struct{ API }

func (stuckAttributes) GetQueueAttributes(ctx context.Context, _ *sqs.GetQueueAttributesInput, _ ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// Run cancelled while it still reads the queue's visibility returns nil,
// like any cancelled Run, and leaves what it received visible.
func TestCancelWhileReadingVisibility(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		f.send(t, "", "m")
		c, err := New(stuckAttributes{f.client}, f.url, func(context.Context, *handler.Message) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := c.Run(ctx); err != nil {
			t.Fatalf("expect nil from a cancelled Run, got %v", err)
		}
		if v, _ := f.counts(t); v != 1 || c.Stats().InFlight != 0 {
			t.Fatalf("expect the message visible and nothing held, got %d visible, %+v", v, c.Stats())
		}
	})
}
