package consumer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/sqsfake"
)

// qfix is a queue on sqsfake, inside a synctest bubble (time is fake).
type qfix struct {
	srv    *sqsfake.Server
	client *sqs.Client
	url    string
}

func newQueue(t *testing.T, name string, attrs map[string]string) *qfix {
	t.Helper()
	srv := sqsfake.New()
	f := &qfix{srv: srv, client: srv.Client()}
	if attrs == nil {
		attrs = map[string]string{}
	}
	if len(name) > 5 && name[len(name)-5:] == ".fifo" {
		attrs["FifoQueue"] = "true"
		attrs["ContentBasedDeduplication"] = "true"
	}
	out, err := f.client.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		t.Fatal(err)
	}
	f.url = *out.QueueUrl
	return f
}

func (f *qfix) send(t *testing.T, group string, bodies ...string) {
	t.Helper()
	for _, b := range bodies {
		in := &sqs.SendMessageInput{QueueUrl: aws.String(f.url), MessageBody: aws.String(b)}
		if group != "" {
			in.MessageGroupId = aws.String(group)
		}
		if _, err := f.client.SendMessage(context.Background(), in); err != nil {
			t.Fatal(err)
		}
	}
}

// numbered returns the bodies "0" to "n-1".
func numbered(n int) []string {
	bodies := make([]string, n)
	for i := range bodies {
		bodies[i] = strconv.Itoa(i)
	}
	return bodies
}

// counts returns the visible and in-flight messages.
func (f *qfix) counts(t *testing.T) (visible, inFlight int) {
	t.Helper()
	out, err := f.client.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(f.url), AttributeNames: []types.QueueAttributeName{"All"}})
	if err != nil {
		t.Fatal(err)
	}
	visible, _ = strconv.Atoi(out.Attributes["ApproximateNumberOfMessages"])
	inFlight, _ = strconv.Atoi(out.Attributes["ApproximateNumberOfMessagesNotVisible"])
	return visible, inFlight
}

// started runs a consumer until stop is called; stop returns Run's error.
func started(t *testing.T, c *Consumer) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	return func() error { cancel(); return <-done }
}

// until waits, in fake time, for cond.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Hour)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func newConsumer(t *testing.T, f *qfix, h handler.Handler, fns ...func(*Options)) *Consumer {
	t.Helper()
	c, err := New(f.client, f.url, h, fns...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// recorder is a handler that records bodies and fails chosen ones a number
// of times.
type recorder struct {
	mu       sync.Mutex
	handled  []string
	attempts map[string]int
	failN    map[string]int
}

func (r *recorder) handle(_ context.Context, m *handler.Message) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.attempts == nil {
		r.attempts = map[string]int{}
	}
	r.attempts[m.Body]++
	if r.attempts[m.Body] <= r.failN[m.Body] {
		return errors.New("transient failure of " + m.Body)
	}
	r.handled = append(r.handled, m.Body)
	return nil
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.handled)
}

func TestConsumerHandlesAndDeletesEverything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		f.send(t, "", numbered(100)...)
		rec := &recorder{}
		c := newConsumer(t, f, rec.handle, func(o *Options) { o.Concurrency = 8 })
		stop := started(t, c)
		until(t, "100 deletes", func() bool { return c.Stats().Deleted == 100 })
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if v, fl := f.counts(t); v+fl != 0 {
			t.Fatalf("expect an empty queue, got %d visible and %d in flight", v, fl)
		}
		s := c.Stats()
		if s.Received != 100 || s.Handled != 100 || s.InFlight != 0 {
			t.Errorf("unexpected stats %+v", s)
		}
		calls := f.srv.Calls().Op
		if calls["DeleteMessageBatch"] > 15 {
			t.Errorf("expect batched deletes, got %d calls for 100 messages", calls["DeleteMessageBatch"])
		}
	})
}

// FIFO: at a failure the group's later messages are released in order, so
// each group is handled exactly in send order.
func TestConsumerFIFOOrderUnderFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs.fifo", nil)
		var sent []string
		for i := range 30 {
			g := fmt.Sprintf("g%d", i%3)
			b := fmt.Sprintf("%s-%02d", g, i)
			sent = append(sent, b)
			f.send(t, g, b)
		}
		rec := &recorder{failN: map[string]int{"g0-03": 2, "g1-07": 1, "g2-29": 1}}
		c := newConsumer(t, f, rec.handle, func(o *Options) { o.Concurrency = 3; o.OnFailure = ReleaseNow })
		stop := started(t, c)
		until(t, "30 handled", func() bool { return rec.count() == 30 })
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		per := map[string][]string{}
		for _, b := range rec.handled {
			per[b[:2]] = append(per[b[:2]], b)
		}
		for g, got := range per {
			for i := 1; i < len(got); i++ {
				if got[i] < got[i-1] {
					t.Fatalf("group %s handled out of order: %v", g, got)
				}
			}
		}
		once := map[string]int{}
		for _, b := range rec.handled {
			once[b]++
		}
		for _, b := range sent {
			if once[b] != 1 {
				t.Errorf("expect %s handled successfully once, got %d", b, once[b])
			}
		}
		if rec.attempts["g0-03"] != 3 {
			t.Errorf("expect g0-03 handled on its third attempt, got %d", rec.attempts["g0-03"])
		}
	})
}

// StopOnFirstFailure: the whole FIFO receive is one sequence, handled one
// message at a time in arrival order, and a failure gives up every message
// after it, whatever its group (without it, only the failed group stops and
// groups run in parallel).
func TestConsumerFIFOStopOnFirstFailure(t *testing.T) {
	for _, stopAll := range []bool{true, false} {
		t.Run(fmt.Sprint("StopOnFirstFailure ", stopAll), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newQueue(t, "jobs.fifo", nil)
				for _, gb := range []string{"a:a1", "b:b1", "a:a2", "b:b2"} {
					g, b, _ := strings.Cut(gb, ":")
					f.send(t, g, b)
				}
				var mu sync.Mutex
				running, most := 0, 0
				rec := &recorder{failN: map[string]int{"a1": 1}}
				c := newConsumer(t, f, func(ctx context.Context, m *handler.Message) error {
					mu.Lock()
					running++
					most = max(most, running)
					mu.Unlock()
					time.Sleep(time.Second)
					mu.Lock()
					running--
					mu.Unlock()
					return rec.handle(ctx, m)
				}, func(o *Options) { o.Concurrency = 4; o.OnFailure = ReleaseNow; o.StopOnFirstFailure = stopAll })
				stop := started(t, c)
				until(t, "4 handled", func() bool { return rec.count() == 4 })
				if err := stop(); err != nil {
					t.Fatal(err)
				}
				// The first receive took all four: a1 failed, and with
				// StopOnFirstFailure b1, a2 and b2 were given up unstarted.
				wantFailed, wantMost := int64(2), 2
				if stopAll {
					wantFailed, wantMost = 4, 1
				}
				if s := c.Stats(); s.Failed != wantFailed || most != wantMost {
					t.Fatalf("expect %d failures and %d handlers at once at most, got %+v, %d", wantFailed, wantMost, s, most)
				}
			})
		})
	}
}

// A five-minute handler on a queue with a 30 s visibility timeout: the
// heartbeat keeps the message invisible, so nobody else receives it, and it
// is received once and deleted.
func TestConsumerHeartbeatKeepsLongHandlerInvisible(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", map[string]string{"VisibilityTimeout": "30"})
		f.send(t, "", "slow")
		var handled int
		c := newConsumer(t, f, func(ctx context.Context, m *handler.Message) error {
			time.Sleep(5 * time.Minute)
			handled++
			return ctx.Err()
		})
		stop := started(t, c)
		time.Sleep(time.Minute)
		for range 8 { // another consumer keeps looking for 4 more minutes
			out, err := f.client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(f.url)})
			if err != nil || len(out.Messages) != 0 {
				t.Fatalf("expect the message to stay invisible, got %v, %v", out, err)
			}
			time.Sleep(30 * time.Second)
		}
		until(t, "the delete", func() bool { return c.Stats().Deleted == 1 })
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if handled != 1 || c.Stats().Extended < 10 || c.Stats().Received != 1 {
			t.Fatalf("expect one run kept alive by extensions, got %d runs, stats %+v", handled, c.Stats())
		}
	})
}

// When an extension fails for good, the handler's ctx is cancelled and the
// message is not deleted: SQS will deliver it again.
func TestConsumerLeaseLostCancelsHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		f.send(t, "", "m")
		f.srv.Inject(sqsfake.Fault{Op: "ChangeMessageVisibilityBatch", Entries: &sqsfake.EntryFault{Code: "ReceiptHandleIsInvalid", SenderFault: true}})
		var lost []error
		var handlerErr error
		c := newConsumer(t, f, func(ctx context.Context, m *handler.Message) error {
			<-ctx.Done()
			handlerErr = ctx.Err()
			return nil // claims success too late
		}, func(o *Options) {
			o.Hooks.LeaseLost = func(_ context.Context, _ *handler.Message, err error) { lost = append(lost, err) }
			o.OnFailure = LeaveToTimeout
		})
		stop := started(t, c)
		until(t, "the lease loss", func() bool { return c.Stats().LeaseLost == 1 && c.Stats().InFlight == 0 })
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if !errors.Is(handlerErr, context.Canceled) || len(lost) != 1 || !errors.Is(lost[0], ErrLeaseLost) {
			t.Fatalf("expect a cancelled handler and one ErrLeaseLost, got %v, %v", handlerErr, lost)
		}
		if c.Stats().Deleted != 0 {
			t.Fatal("expect no delete after a lost lease")
		}
		f.srv.ClearFaults()
		time.Sleep(time.Minute)
		if v, _ := f.counts(t); v != 1 {
			t.Fatalf("expect the message back on the queue, got %d visible", v)
		}
	})
}

// A delete whose answer comes back after the message's visibility lapsed
// may have landed after SQS delivered the message elsewhere, where on a
// standard queue it succeeds without deleting: it is reported as a lost
// lease (DeleteFailed with ErrLeaseLost), never as Deleted. The lapse was
// checked only when the call was built, so the consumer reported Deleted
// while another consumer held the message and SQS still had it.
func TestConsumerDeleteAnsweredAfterTheLapseIsNotDeleted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		f.send(t, "", "a")
		var mu sync.Mutex
		var events []string
		note := func(s string) { mu.Lock(); events = append(events, s); mu.Unlock() }
		var deleteFailure error
		c := newConsumer(t, f, func(context.Context, *handler.Message) error {
			time.Sleep(9 * time.Second)
			return nil
		}, func(o *Options) {
			o.VisibilityTimeout = 10 * time.Second
			o.Concurrency, o.MaxInFlight = 1, 1 // its own receives do not race the other consumer
			o.Hooks.LeaseLost = func(context.Context, *handler.Message, error) { note("lease lost") }
			o.Hooks.Deleted = func(context.Context, *handler.Message) { note("deleted") }
			o.Hooks.DeleteFailed = func(_ context.Context, _ *handler.Message, err error) { note("delete failed"); deleteFailure = err }
		})
		// The heartbeat's extensions are throttled; the delete is slow.
		f.srv.Inject(sqsfake.Fault{Op: "ChangeMessageVisibilityBatch", Err: sqsfake.ErrThrottled})
		f.srv.Inject(sqsfake.Fault{Op: "DeleteMessageBatch", Latency: 2 * time.Second})
		stop := started(t, c)
		// Another consumer of the queue (a second service instance) polls.
		time.Sleep(10*time.Second + 500*time.Millisecond)
		out, err := f.client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(f.url), VisibilityTimeout: 60})
		if err != nil || len(out.Messages) != 1 {
			t.Fatalf("expect the other consumer to get the message, got %v, %v", out, err)
		}
		time.Sleep(5 * time.Second)
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if s := c.Stats(); s.Deleted != 0 || s.DeleteFailed != 1 || s.LeaseLost != 1 || !errors.Is(deleteFailure, ErrLeaseLost) {
			t.Fatalf("expect the delete reported failed with ErrLeaseLost, got %+v, %v (events %v)", s, deleteFailure, events)
		}
		if _, inFlight := f.counts(t); inFlight != 1 {
			t.Fatalf("expect SQS to keep the message the other consumer holds, got %d in flight", inFlight)
		}
	})
}

// An extension that fails because the message's delete, in flight, got
// there first (its handle is no longer valid) is not a lost lease: the
// delete's answer decides. One message must never be reported both lost
// and deleted, nor lost when it was deleted.
func TestConsumerExtensionRacingTheDeleteIsNoLostLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		f.send(t, "", "a")
		c := newConsumer(t, f, func(context.Context, *handler.Message) error {
			time.Sleep(6500 * time.Millisecond) // the next beat, at 6.67 s, extends it
			return nil
		}, func(o *Options) { o.VisibilityTimeout = 10 * time.Second })
		f.srv.Inject(sqsfake.Fault{Op: "DeleteMessageBatch", Latency: time.Second})
		began := time.Now()
		f.srv.Inject(sqsfake.Fault{Op: "ChangeMessageVisibilityBatch", Entries: &sqsfake.EntryFault{Code: "ReceiptHandleIsInvalid", SenderFault: true},
			Match: func(string, any) bool { return time.Since(began) > 6*time.Second }}) // while the delete is on its way
		stop := started(t, c)
		until(t, "the delete", func() bool { s := c.Stats(); return s.Deleted+s.DeleteFailed > 0 })
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if s := c.Stats(); s.Deleted != 1 || s.LeaseLost != 0 {
			t.Fatalf("expect the message deleted and no lease lost, got %+v", s)
		}
		if v, fl := f.counts(t); v+fl != 0 {
			t.Fatalf("expect the queue empty, got %d visible, %d in flight", v, fl)
		}
	})
}

// A delete is never sent once the message's visibility has lapsed, nor so
// close to the lapse that the call would land after it: the message is
// reported as a lost lease and left to come back.
func TestConsumerNoDeleteAfterTheLapse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		f.send(t, "", "a")
		c := newConsumer(t, f, func(context.Context, *handler.Message) error {
			time.Sleep(10*time.Second - 100*time.Millisecond)
			return nil
		}, func(o *Options) { o.VisibilityTimeout = 10 * time.Second })
		f.srv.Inject(sqsfake.Fault{Op: "ChangeMessageVisibilityBatch", Err: sqsfake.ErrThrottled})
		stop := started(t, c)
		until(t, "the outcome", func() bool { s := c.Stats(); return s.Deleted+s.DeleteFailed+s.LeaseLost > 0 })
		time.Sleep(time.Second)
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if s, n := c.Stats(), f.srv.Calls().Op["DeleteMessageBatch"]; n != 0 || s.Deleted != 0 || s.LeaseLost == 0 || s.LeaseLost != s.Handled {
			t.Fatalf("expect no delete sent and the lease lost, got %d delete calls, %+v", n, s)
		}
	})
}

// Shutdown with a handler running, deletes buffered and messages not
// started: the running one finishes and is deleted, the buffered deletes are
// flushed, the unstarted ones are made visible at once. Nothing is lost and
// nothing stays invisible.
func TestConsumerGracefulShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		f.send(t, "", "fast-1", "fast-2", "slow", "w1", "w2", "w3")
		var mu sync.Mutex
		var done []string
		release := make(chan struct{})
		c := newConsumer(t, f, func(ctx context.Context, m *handler.Message) error {
			if m.Body == "slow" {
				<-release
				time.Sleep(10 * time.Second) // still within the shutdown timeout
			}
			mu.Lock()
			done = append(done, m.Body)
			mu.Unlock()
			return nil
		}, func(o *Options) {
			o.Concurrency = 1
			o.MaxInFlight = 6
			o.DeleteLinger = time.Second // deletes stay buffered until shutdown
		})
		stop := started(t, c)
		until(t, "the slow handler", func() bool { return c.Stats().Handled == 2 && c.Stats().Received == 6 })
		errc := make(chan error, 1)
		go func() { errc <- stop() }()
		time.Sleep(time.Second)
		close(release)
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		s := c.Stats()
		if s.Deleted != 3 || s.Released != 3 || s.InFlight != 0 {
			t.Fatalf("expect 3 deleted and 3 released, got %+v (done %v)", s, done)
		}
		v, fl := f.counts(t)
		if v != 3 || fl != 0 {
			t.Fatalf("expect the 3 unstarted messages visible at once, got %d visible, %d in flight", v, fl)
		}
	})
}

// At shutdown, messages received but not started are released at once, in
// one batch, while the running handlers finish and are deleted. Kept until
// the running handlers end, they would stay invisible (the heartbeat
// extending them) and out of every other consumer's reach for as long as
// the slowest handler runs.
func TestConsumerShutdownReleasesUnstartedMessagesAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		f.send(t, "", numbered(10)...)
		var running atomic.Int32
		c := newConsumer(t, f, func(ctx context.Context, m *handler.Message) error {
			running.Add(1)
			time.Sleep(10 * time.Second) // well within the 20 s shutdown timeout: at 20 s both fall due at one fake instant
			return nil
		}, func(o *Options) { o.Concurrency = 2 })
		stop := started(t, c)
		// Both handlers running: ten received is not enough, the second
		// worker may not have taken its message yet.
		until(t, "ten received, two running", func() bool { return c.Stats().Received == 10 && running.Load() == 2 })
		errc := make(chan error, 1)
		go func() { errc <- stop() }()
		time.Sleep(2 * time.Second)
		if v, _ := f.counts(t); v != 8 {
			t.Fatalf("expect the 8 unstarted messages visible 2 s after cancel, got %d", v)
		}
		if n := f.srv.Calls().Op["ChangeMessageVisibilityBatch"]; n != 1 {
			t.Errorf("expect the 8 released in one batch, got %d calls", n)
		}
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		if s := c.Stats(); s.Deleted != 2 || s.Released != 8 {
			t.Fatalf("expect the 2 running deleted and 8 released, got %+v", s)
		}
	})
}

// At the shutdown timeout a running handler's ctx is cancelled with the
// cause ErrShutdownTimeout, its message fails with it and is released.
func TestConsumerShutdownTimeoutCancelsHandlers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		f.send(t, "", "stuck")
		var cause, failure error
		c := newConsumer(t, f, func(ctx context.Context, m *handler.Message) error {
			<-ctx.Done()
			cause = context.Cause(ctx)
			return ctx.Err()
		}, func(o *Options) {
			o.ShutdownTimeout = 5 * time.Second
			o.OnFailure = ReleaseNow
			o.Hooks.Failed = func(_ context.Context, _ *handler.Message, err error) { failure = err }
		})
		stop := started(t, c)
		until(t, "the handler", func() bool { return c.Stats().Received == 1 })
		began := time.Now()
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(began); took < 5*time.Second || took > 6*time.Second {
			t.Errorf("expect shutdown after the 5 s timeout, took %v", took)
		}
		if cause != ErrShutdownTimeout || !errors.Is(failure, ErrShutdownTimeout) {
			t.Errorf("expect ErrShutdownTimeout as the ctx's cause and the failure, got %v, %v", cause, failure)
		}
		if v, _ := f.counts(t); v != 1 {
			t.Fatalf("expect the cancelled message released, got %d visible", v)
		}
	})
}

func TestConsumerPanicIsAFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		f.send(t, "", "boom", "fine")
		var failures []error
		c := newConsumer(t, f, func(_ context.Context, m *handler.Message) error {
			if m.Body == "boom" {
				panic("bad state")
			}
			return nil
		}, func(o *Options) {
			o.OnFailure = LeaveToTimeout
			o.Hooks.Failed = func(_ context.Context, _ *handler.Message, err error) { failures = append(failures, err) }
		})
		stop := started(t, c)
		until(t, "both settled", func() bool { s := c.Stats(); return s.Deleted == 1 && s.Failed == 1 })
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		var p *handler.PanicError
		if len(failures) != 1 || !errors.As(failures[0], &p) {
			t.Fatalf("expect one handler.PanicError, got %v", failures)
		}
	})
}

// A handler that calls runtime.Goexit (as t.FailNow does) instead of
// returning fails its message with handler.ErrHandlerExited, as a panic
// does: the message is settled by its failure policy (here it comes back
// after its visibility timeout) and the worker is replaced, so with
// Concurrency 1 the messages after it are still handled. A worker that
// vanished with its handler would hold the message and leave the consumer
// with no one to run the rest.
func TestConsumerGoexitIsAFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		f.send(t, "", "a", "exit", "b", "c")
		var mu sync.Mutex
		var failures []error
		c := newConsumer(t, f, func(_ context.Context, m *handler.Message) error {
			if m.Body == "exit" {
				runtime.Goexit()
			}
			return nil
		}, func(o *Options) {
			o.Concurrency = 1
			o.OnFailure = LeaveToTimeout
			o.Hooks.Failed = func(_ context.Context, _ *handler.Message, err error) {
				mu.Lock()
				failures = append(failures, err)
				mu.Unlock()
			}
		})
		stop := started(t, c)
		until(t, "three deletes and a failure", func() bool { s := c.Stats(); return s.Deleted == 3 && s.Failed == 1 })
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if len(failures) != 1 || !errors.Is(failures[0], handler.ErrHandlerExited) {
			t.Fatalf("expect one handler.ErrHandlerExited, got %v", failures)
		}
		time.Sleep(time.Minute)
		if v, _ := f.counts(t); v != 1 {
			t.Fatalf("expect the exited message back on the queue, got %d visible", v)
		}
	})
}

// A batch handler that calls runtime.Goexit fails every message of its
// batch: none is deleted and none stays held, so Run settles them all and
// returns.
func TestConsumerBatchGoexitFailsEveryMessage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		f.send(t, "", "a", "b")
		c, err := NewBatch(f.client, f.url, func(context.Context, []*handler.Message) []error { runtime.Goexit(); return nil }, func(o *Options) {
			o.OnFailure = LeaveToTimeout
		})
		if err != nil {
			t.Fatal(err)
		}
		stop := started(t, c)
		until(t, "two failures", func() bool { return c.Stats().Failed == 2 })
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if s := c.Stats(); s.Deleted != 0 || s.InFlight != 0 {
			t.Fatalf("expect nothing deleted and nothing held, got %+v", s)
		}
	})
}

// nilDerefError is the classic broken error: a handler declares
// `var err *nilDerefError` and returns it, a non-nil interface holding a nil
// pointer whose Error dereferences it.
type nilDerefError struct{ msg string }

func (e *nilDerefError) Error() string { return e.msg }

// nilUnwrapError prints as a nil pointer, but its Unwrap dereferences it:
// errors.Is and errors.As panic on it.
type nilUnwrapError struct{ err error }

func (e *nilUnwrapError) Error() string { return "wrapped" }
func (e *nilUnwrapError) Unwrap() error { return e.err }

// A handler error the consumer cannot read (its Error or Unwrap panics, as
// a typed nil's often does) is the message's failure, as a panic is: the
// consumer read it on a worker goroutine, to log and classify it, and
// crashed the process.
func TestConsumerBrokenErrorIsAFailure(t *testing.T) {
	for name, broken := range map[string]error{
		"typed nil, Error panics":  (*nilDerefError)(nil),
		"typed nil, Unwrap panics": (*nilUnwrapError)(nil),
	} {
		for _, batch := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, batch %v", name, batch), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					f := newQueue(t, "jobs", nil)
					f.send(t, "", "a")
					var failures []error
					opts := func(o *Options) {
						o.VisibilityTimeout = 30 * time.Second
						o.Hooks.Failed = func(_ context.Context, _ *handler.Message, err error) { failures = append(failures, err) }
					}
					var c *Consumer
					var err error
					if batch {
						c, err = NewBatch(f.client, f.url, func(context.Context, []*handler.Message) []error { return []error{broken} }, opts)
					} else {
						c, err = New(f.client, f.url, func(context.Context, *handler.Message) error { return broken }, opts)
					}
					if err != nil {
						t.Fatal(err)
					}
					stop := started(t, c)
					until(t, "the failure", func() bool { return c.Stats().Failed == 1 })
					if err := stop(); err != nil {
						t.Fatal(err)
					}
					var p *handler.PanicError
					if len(failures) != 1 || !errors.As(failures[0], &p) || c.Stats().Deleted != 0 {
						t.Fatalf("expect one handler.PanicError and nothing deleted, got %v, %+v", failures, c.Stats())
					}
				})
			})
		}
	}
}

// A handler may write to the handler.Message it gets: the consumer keeps its own
// id, group, receive count and receipt handle. It read the handler's copy
// after the handler returned, so a handler that rewrote m.ID left a phantom
// held message (its place never freed: with MaxInFlight 1 the consumer
// stopped receiving), and one that deleted MessageGroupId left its FIFO
// group running for good, the group's next message never started.
func TestConsumerHandlerMutatingItsMessage(t *testing.T) {
	for _, c := range []struct {
		name, queue string
		batch       bool
		mutate      func(m *handler.Message)
	}{
		{"id", "jobs", false, func(m *handler.Message) { m.ID = "seen:" + m.ID; m.ReceiptHandle = "" }},
		{"id, batch", "jobs", true, func(m *handler.Message) { m.ID = "seen:" + m.ID }},
		{"group", "jobs.fifo", false, func(m *handler.Message) { delete(m.Attributes, "MessageGroupId") }},
		{"group, batch", "jobs.fifo", true, func(m *handler.Message) { m.Attributes = nil }},
		{"receive count", "jobs", false, func(m *handler.Message) { m.Attributes["ApproximateReceiveCount"] = "999999999" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newQueue(t, c.queue, nil)
				f.send(t, "g", "1", "2", "3")
				opts := func(o *Options) {
					o.VisibilityTimeout = 30 * time.Second
					o.Concurrency, o.MaxInFlight = 1, 1
					o.RedeliveryBackoff = backoff.Exponential{Base: time.Second, Cap: 12 * time.Hour}
				}
				var calls int
				h := func(_ context.Context, m *handler.Message) error {
					calls++
					first := m.ReceiveCount() == 1
					c.mutate(m)
					if first && m.Body == "1" {
						return errors.New("once") // comes back after the backoff's 1 s, not after a capped huge delay
					}
					return nil
				}
				var cons *Consumer
				var err error
				if c.batch {
					cons, err = NewBatch(f.client, f.url, func(ctx context.Context, msgs []*handler.Message) []error {
						errs := make([]error, len(msgs))
						for i, m := range msgs {
							errs[i] = h(ctx, m)
						}
						return errs
					}, opts)
				} else {
					cons, err = New(f.client, f.url, h, opts)
				}
				if err != nil {
					t.Fatal(err)
				}
				stop := started(t, cons)
				deadline := time.Now().Add(10 * time.Minute)
				for cons.Stats().Deleted < 3 && time.Now().Before(deadline) {
					time.Sleep(time.Second)
				}
				s := cons.Stats()
				if err := stop(); err != nil {
					t.Fatal(err)
				}
				if s.Deleted != 3 || s.InFlight != 0 || calls != 4 {
					t.Fatalf("after 10 min: %+v, %d handler calls; expect 3 deleted after 4 calls, nothing held", s, calls)
				}
			})
		})
	}
}

// A handler that rewrites every field of its handler.Message (id, receipt
// handle, body, FIFO group, receive count) rewrites only its own copy: the
// consumer deletes all three messages, holds nothing, and Run returns when
// its ctx ends. Were the handler's copy the consumer's record, the rewritten
// ids would never be freed (the consumer stops receiving once MaxInFlight
// leak) and the rewritten FIFO group would keep Run from returning.
func TestConsumerHandlerRewritingItsMessageLeaksNothing(t *testing.T) {
	rewrite := func(m *handler.Message) {
		m.ID, m.ReceiptHandle, m.Body = "forged", "forged", ""
		m.Attributes["MessageGroupId"] = "forged"
		m.Attributes["ApproximateReceiveCount"] = "999"
	}
	t.Run("Consumer", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := newQueue(t, "q.fifo", nil)
			q.send(t, "g", "1", "2", "3")
			c, err := New(q.client, q.url, func(_ context.Context, m *handler.Message) error { rewrite(m); return nil },
				func(o *Options) { o.VisibilityTimeout = 30 * time.Second })
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- c.Run(ctx) }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(time.Hour):
				t.Fatalf("Run still running an hour after its ctx ended: %+v", c.Stats())
			}
			visible, inFlight := q.counts(t)
			if st := c.Stats(); st.Deleted != 3 || st.InFlight != 0 || visible+inFlight != 0 {
				t.Fatalf("expect all three deleted and nothing held, got %+v, %d left on the queue", st, visible+inFlight)
			}
		})
	})
}

// Logs never carry a message's body or attribute values, whatever happens
// to it: handled, failed, panicked, timed out, delete failed, redelivered.
func TestConsumerLogsCarryNoBodies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		for i := range 5 {
			in := &sqs.SendMessageInput{QueueUrl: aws.String(f.url), MessageBody: aws.String(fmt.Sprintf("SECRETBODY-%d", i)),
				MessageAttributes: map[string]types.MessageAttributeValue{"k": {DataType: aws.String("String"), StringValue: aws.String("SECRETATTR")}}}
			if _, err := f.client.SendMessage(context.Background(), in); err != nil {
				t.Fatal(err)
			}
		}
		f.srv.Inject(sqsfake.Fault{Op: "DeleteMessageBatch", Times: 1, Entries: &sqsfake.EntryFault{Code: "ReceiptHandleIsInvalid", SenderFault: true}})
		var logs bytes.Buffer
		var mu sync.Mutex
		c := newConsumer(t, f, func(ctx context.Context, m *handler.Message) error {
			switch m.Body {
			case "SECRETBODY-0":
				return errors.New("boom")
			case "SECRETBODY-1":
				panic("bad state")
			case "SECRETBODY-2":
				<-ctx.Done() // HandlerTimeout
				return ctx.Err()
			case "SECRETBODY-3":
				return handler.RetryAfter(errors.New("later"), time.Minute)
			}
			return nil
		}, func(o *Options) {
			o.VisibilityTimeout = 10 * time.Second
			o.HandlerTimeout = 15 * time.Second // past the visibility: extended
			o.Logger = slog.New(slog.NewJSONHandler(lockedWriter{&mu, &logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
		})
		stop := started(t, c)
		time.Sleep(time.Minute)
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if s := logs.String(); !strings.Contains(s, "message failed") || strings.Contains(s, "SECRET") {
			t.Fatalf("expect failures logged without bodies or attribute values, got:\n%s", s)
		}
	})
}

// lockedWriter serialises a log's writes.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestConsumerEndsOnMissingQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		c := newConsumer(t, f, func(context.Context, *handler.Message) error { return nil })
		if _, err := f.client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(f.url)}); err != nil {
			t.Fatal(err)
		}
		err := c.Run(context.Background())
		var missing *types.QueueDoesNotExist
		if !errors.As(err, &missing) {
			t.Fatalf("expect Run to end with QueueDoesNotExist, got %v", err)
		}
	})
}

// A delete or visibility change that fails for good (access denied, the
// queue gone) ends Run with that error, as a receive's does: the consumer
// cannot do its job, and handling messages it can never delete would only
// repeat their side effects until they reach the dead-letter queue. Run
// went on, every message handled again and again, never deleted.
func TestConsumerEndsWhenSettlingIsDenied(t *testing.T) {
	denied := &smithy.GenericAPIError{Code: "AccessDenied", Message: "not authorized to perform sqs:DeleteMessage", Fault: smithy.FaultClient}
	for _, c := range []struct {
		op   string
		fail bool // the handler fails: its release is what is denied
	}{{"DeleteMessageBatch", false}, {"ChangeMessageVisibilityBatch", true}} {
		t.Run(c.op, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newQueue(t, "jobs", nil)
				f.send(t, "", "a")
				f.srv.Inject(sqsfake.Fault{Op: c.op, Err: denied})
				cons := newConsumer(t, f, func(context.Context, *handler.Message) error {
					if c.fail {
						return errors.New("boom")
					}
					return nil
				}, func(o *Options) { o.VisibilityTimeout = 30 * time.Second; o.OnFailure = ReleaseNow })
				done := make(chan error, 1)
				go func() { done <- cons.Run(context.Background()) }()
				var err error
				select {
				case err = <-done:
				case <-time.After(time.Hour):
					t.Fatal("expect Run to end when settling is denied; it went on for an hour")
				}
				var apiErr smithy.APIError
				if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "AccessDenied" || cons.Stats().Received != 1 {
					t.Fatalf("expect Run to end with AccessDenied after one message, got %v, %+v", err, cons.Stats())
				}
			})
		})
	}
}

func TestConsumerBacksOffOnReceiveErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		f.send(t, "", "m")
		fault := f.srv.Inject(sqsfake.Fault{Op: "ReceiveMessage", Times: 4, Err: &types.RequestThrottled{Message: aws.String("slow down")}})
		c := newConsumer(t, f, func(context.Context, *handler.Message) error { return nil })
		began := time.Now()
		stop := started(t, c)
		until(t, "the delete", func() bool { return c.Stats().Deleted == 1 })
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if fault.Fired() != 4 || time.Since(began) < 100*time.Millisecond {
			t.Fatalf("expect 4 throttled receives with waits between, fired %d in %v", fault.Fired(), time.Since(began))
		}
	})
}

// On a standard queue a message can come back while its handler still runs
// (its visibility lapsed). The handler is not run twice, and the delete uses
// the newest receipt handle, so the message really goes.
func TestConsumerRedeliveryWhileHandling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		f.send(t, "", "m")
		f.srv.Inject(sqsfake.Fault{Op: "ChangeMessageVisibilityBatch", Err: sqsfake.ErrInternal}) // extensions fail in transit
		runs := 0
		c := newConsumer(t, f, func(ctx context.Context, m *handler.Message) error {
			runs++
			time.Sleep(45 * time.Second) // past the 30 s visibility
			return nil
		}, func(o *Options) { o.HeartbeatInterval = 29 * time.Second })
		stop := started(t, c)
		until(t, "the delete", func() bool { return c.Stats().Deleted == 1 })
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if runs != 1 {
			t.Fatalf("expect one run, got %d", runs)
		}
		f.srv.ClearFaults()
		time.Sleep(10 * time.Minute)
		if v, fl := f.counts(t); v+fl != 0 {
			t.Fatalf("expect the message deleted with its newest handle, got %d visible, %d in flight", v, fl)
		}
	})
}

// A release asks SQS for at most 12 h minus the time since the message's
// receive (SQS's cap, counted from the receive, refuses more): handler.RetryAfter's
// documented 12 h, after a handler that took 2 s, holds the message for
// almost 12 h. The consumer clamped to MaxExtension only; SQS refused the
// release, and the message came back after its 30 s visibility timeout.
func TestConsumerReleaseClampedToTwelveHoursFromTheReceive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		f.send(t, "", "a")
		var calls atomic.Int64
		var released time.Duration
		c := newConsumer(t, f, func(ctx context.Context, m *handler.Message) error {
			if calls.Add(1) == 1 {
				time.Sleep(2 * time.Second)
				return handler.RetryAfter(errors.New("downstream closed until tomorrow"), 12*time.Hour)
			}
			return nil
		}, func(o *Options) {
			o.VisibilityTimeout = 30 * time.Second
			o.Hooks.Released = func(_ context.Context, _ *handler.Message, d time.Duration) { released = d }
		})
		stop := started(t, c)
		until(t, "the failure", func() bool { return c.Stats().Failed == 1 })
		time.Sleep(10 * time.Minute)
		n := calls.Load()
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if n != 1 || released < 12*time.Hour-time.Minute || released > 12*time.Hour-2*time.Second {
			t.Fatalf("expect one call and a release of almost 12 h, got %d calls, released %v", n, released)
		}
	})
}

func TestConsumerFailurePolicies(t *testing.T) {
	cases := []struct {
		name    string
		policy  FailurePolicy
		err     error
		visible time.Duration // when the message is visible again
	}{
		{"release now", ReleaseNow, errors.New("x"), 0},
		{"leave to timeout", LeaveToTimeout, errors.New("x"), 30 * time.Second},
		{"retry after overrides", LeaveToTimeout, handler.RetryAfter(errors.New("x"), 2*time.Minute), 2 * time.Minute},
		{"backoff keyed by receive count", RetryWithBackoff, errors.New("x"), 7 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newQueue(t, "jobs", nil)
				f.send(t, "", "m")
				failed := make(chan struct{})
				var once sync.Once
				c := newConsumer(t, f, func(context.Context, *handler.Message) error { return tc.err }, func(o *Options) {
					o.OnFailure = tc.policy
					o.RedeliveryBackoff = fixedDelay(7 * time.Second)
					o.Hooks.Failed = func(context.Context, *handler.Message, error) { once.Do(func() { close(failed) }) }
				})
				stop := started(t, c)
				<-failed // with ReleaseNow the consumer never idles, so fake time stands still
				failedAt := time.Now()
				if err := stop(); err != nil {
					t.Fatal(err)
				}
				if tc.visible > 0 {
					time.Sleep(tc.visible - time.Since(failedAt) - time.Second)
					if v, _ := f.counts(t); v != 0 {
						t.Fatalf("expect the message hidden just before %v", tc.visible)
					}
					time.Sleep(2 * time.Second)
				}
				if v, _ := f.counts(t); v != 1 {
					t.Fatalf("expect the message visible at %v", tc.visible)
				}
			})
		})
	}
}

type fixedDelay time.Duration

func (d fixedDelay) Delay(int, time.Duration) time.Duration { return time.Duration(d) }

func TestConsumerRetriesFailedDeleteEntries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		f.send(t, "", "m")
		f.srv.Inject(sqsfake.Fault{Op: "DeleteMessageBatch", Times: 2, Entries: &sqsfake.EntryFault{Code: "InternalError"}})
		c := newConsumer(t, f, func(context.Context, *handler.Message) error { return nil })
		stop := started(t, c)
		until(t, "the delete", func() bool { return c.Stats().Deleted == 1 })
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if n := f.srv.Calls().Op["DeleteMessageBatch"]; n != 3 {
			t.Fatalf("expect 2 failed attempts and a third that worked, got %d calls", n)
		}
	})
}

// blankAnswers answers DeleteMessageBatch and ChangeMessageVisibilityBatch
// with 200 and an empty body while on, as a proxy or gateway that swallows
// the call might (the SDK decodes no entry in Successful, none in Failed):
// nothing reaches SQS.
type blankAnswers struct {
	API
	on atomic.Bool
}

func (b *blankAnswers) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, fns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	if b.on.Load() {
		return &sqs.DeleteMessageBatchOutput{}, nil
	}
	return b.API.DeleteMessageBatch(ctx, in, fns...)
}

func (b *blankAnswers) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, fns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	if b.on.Load() {
		return &sqs.ChangeMessageVisibilityBatchOutput{}, nil
	}
	return b.API.ChangeMessageVisibilityBatch(ctx, in, fns...)
}

// An entry of a batch answer in neither Successful nor Failed is
// unconfirmed (package fifo's rule): a delete is retried and, if never
// confirmed, reported failed; an extension does not extend the lease (SQS
// delivers the message again, here to this consumer, which takes the new
// handle); a release is not reported done. Such an answer was read as success for
// every entry: Deleted for messages still in the queue, and a lease
// believed extended, so a later delete went out after it had lapsed.
func TestConsumerUnconfirmedBatchEntries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		f.send(t, "", "slow", "fails")
		api := &blankAnswers{API: f.client}
		api.on.Store(true)
		c, err := New(api, f.url, func(_ context.Context, m *handler.Message) error {
			if m.Body == "fails" {
				return errors.New("boom")
			}
			time.Sleep(15 * time.Second) // past the 10 s visibility: needs an extension
			return nil
		}, func(o *Options) {
			o.VisibilityTimeout = 10 * time.Second
			o.OnFailure = ReleaseNow
		})
		if err != nil {
			t.Fatal(err)
		}
		stop := started(t, c)
		time.Sleep(30 * time.Second)
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		s := c.Stats()
		if s.Deleted != 0 || s.Extended != 0 || s.Released != 0 {
			t.Fatalf("expect nothing reported deleted, extended or released, got %+v", s)
		}
		if s.DeleteFailed == 0 || s.DeleteFailed != s.Handled {
			t.Fatalf("expect each handled message's delete reported failed, got %+v", s)
		}
	})
}

func TestConsumerOptions(t *testing.T) {
	f := newQueue(t, "jobs", nil)
	h := func(context.Context, *handler.Message) error { return nil }
	bad := []func(*Options){
		func(o *Options) { o.WaitTime = 21 * time.Second },
		func(o *Options) { o.VisibilityTimeout = 1500 * time.Millisecond },
		func(o *Options) { o.HeartbeatInterval = 30 * time.Second; o.VisibilityTimeout = 30 * time.Second },
		func(o *Options) { o.Concurrency = 10; o.MaxInFlight = 5 },
		func(o *Options) { o.Concurrency = -1 },
		func(o *Options) { o.MaxExtension = 13 * time.Hour },
		func(o *Options) { o.OnFailure = 9 },
		func(o *Options) { o.RedeliveryBackoff = backoff.Constant{D: -1} },
	}
	for i, fn := range bad {
		if _, err := New(f.client, f.url, h, fn); !errors.Is(err, ErrConfig) {
			t.Errorf("case %d: expect ErrConfig, got %v", i, err)
		}
	}
	if _, err := New(nil, f.url, h); !errors.Is(err, ErrConfig) {
		t.Error("expect a nil client to be refused")
	}
	if _, err := New(f.client, "", h); !errors.Is(err, ErrConfig) {
		t.Error("expect an empty URL to be refused")
	}
	if _, err := New(f.client, f.url, nil); !errors.Is(err, ErrConfig) {
		t.Error("expect a nil handler to be refused")
	}
}

// A nil option function (what `var opt func(*Options)` leaves when a
// condition did not set it) is skipped, as handler.Chain skips a nil
// middleware: it made New and NewBatch panic.
func TestNilOptionFuncIsSkipped(t *testing.T) {
	f := newQueue(t, "jobs", nil)
	var unset func(*Options)
	c, err := New(f.client, f.url, func(context.Context, *handler.Message) error { return nil }, unset, func(o *Options) { o.Concurrency = 3 })
	if err != nil || c.opts.Concurrency != 3 {
		t.Fatalf("expect the nil option skipped and the next applied, got %v", err)
	}
	if _, err := NewBatch(f.client, f.url, func(context.Context, []*handler.Message) []error { return nil }, unset); err != nil {
		t.Fatalf("expect the nil option skipped, got %v", err)
	}
}

// A FIFO receive whose response is lost after SQS handed out the messages:
// the retry reuses the ReceiveRequestAttemptId, gets the same messages back
// at once, and they are handled long before their visibility timeout.
func TestConsumerFIFOReceiveLostInTransit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs.fifo", nil)
		f.send(t, "g", "a", "b")
		lost := f.srv.Inject(sqsfake.Fault{Op: "ReceiveMessage", Times: 1, AfterApply: true})
		c := newConsumer(t, f, func(context.Context, *handler.Message) error { return nil }, func(o *Options) {
			o.VisibilityTimeout = 5 * time.Minute
		})
		began := time.Now()
		stop := started(t, c)
		until(t, "both deleted", func() bool { return c.Stats().Deleted == 2 })
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if lost.Fired() != 1 {
			t.Fatal("expect the lost response injected")
		}
		if took := time.Since(began); took > time.Minute {
			t.Fatalf("expect the retry to get the messages back at once, took %v (visibility is 5 min)", took)
		}
	})
}

// At the extension cap the heartbeat can extend no further: before the
// visibility lapses the lease is lost, the handler's ctx is cancelled, and
// the message is not deleted.
func TestConsumerLeaseLostAtExtensionCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		f.send(t, "", "endless")
		var lostErr error
		var cancelledAfter time.Duration
		began := time.Now()
		c := newConsumer(t, f, func(ctx context.Context, m *handler.Message) error {
			<-ctx.Done()
			cancelledAfter = time.Since(began)
			return nil
		}, func(o *Options) {
			o.MaxExtension = 2 * time.Minute
			o.OnFailure = LeaveToTimeout
			o.Hooks.LeaseLost = func(_ context.Context, _ *handler.Message, err error) { lostErr = err }
		})
		stop := started(t, c)
		until(t, "the lease loss", func() bool { return c.Stats().LeaseLost == 1 && c.Stats().InFlight == 0 })
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if !errors.Is(lostErr, ErrLeaseLost) || !strings.Contains(lostErr.Error(), "cap") {
			t.Fatalf("expect a lease lost at the cap, got %v", lostErr)
		}
		if cancelledAfter < 90*time.Second || cancelledAfter > 2*time.Minute {
			t.Fatalf("expect the handler cancelled shortly before the 2 min cap, after %v", cancelledAfter)
		}
		if c.Stats().Deleted != 0 || c.Stats().Extended == 0 {
			t.Fatalf("expect extensions up to the cap and no delete, got %+v", c.Stats())
		}
	})
}
