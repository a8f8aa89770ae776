package consumer

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/internal/telemetry/telemetrytest"
	"github.com/sqskit/sqskit/sqsfake"
)

// outcomesHandler succeeds, fails, holds, parks or takes its time by body.
func outcomesHandler(ctx context.Context, m *handler.Message) error {
	if ctx.Done() == nil {
		panic("the handler's ctx lost its cancellation")
	}
	switch m.Body {
	case "bad":
		return handler.RetryAfter(errors.New("bad"), time.Hour)
	case "hold":
		return handler.Hold(time.Hour)
	case "park":
		return handler.Escalate("poison", errors.New("no"))
	case "slow":
		time.Sleep(10 * time.Second)
	}
	return nil
}

// logCount counts the lines of a log that name an extension.
type logCount struct {
	mu   sync.Mutex
	seen map[string]int
}

func (l *logCount) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen == nil {
		l.seen = map[string]int{}
	}
	if _, ext, ok := strings.Cut(string(p), "extension="); ok {
		ext, _, _ = strings.Cut(ext, " cause=")
		l.seen[ext]++
	}
	return len(p), nil
}

// Every hook may panic: each panic costs that hook's call, counted in
// Stats.ExtensionFailures and logged once per hook, never the process or a
// message's outcome.
func TestHookPanicsCostOnlyTheirSignal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		f.send(t, "", "ok", "ok", "bad", "hold", "park", "slow")
		var calls atomic.Int64
		boom := func() { calls.Add(1); panic("hook failure") }
		logs := &logCount{}
		c := newConsumer(t, f, outcomesHandler, func(o *Options) {
			o.VisibilityTimeout = 3 * time.Second
			o.Logger = slog.New(slog.NewTextHandler(logs, nil))
			o.Hooks = Hooks{
				Received:     func(context.Context, *handler.Message) { boom() },
				Handled:      func(context.Context, *handler.Message, time.Duration) { boom() },
				Failed:       func(context.Context, *handler.Message, error) { boom() },
				Deleted:      func(context.Context, *handler.Message) { boom() },
				DeleteFailed: func(context.Context, *handler.Message, error) { boom() },
				Extended:     func(context.Context, *handler.Message, time.Duration) { boom() },
				LeaseLost:    func(context.Context, *handler.Message, error) { boom() },
				Released:     func(context.Context, *handler.Message, time.Duration) { boom() },
				Held:         func(context.Context, *handler.Message, time.Duration) { boom() },
				Parked:       func(context.Context, *handler.Message, string) { boom() },
			}
		})
		c.parker = &fakeParker{}
		stop := started(t, c)
		until(t, "every outcome", func() bool {
			s := c.Stats()
			return s.Deleted == 3 && s.Parked == 1 && s.Held == 1 && s.Released == 1
		})
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		s := c.Stats()
		if s.Extended == 0 {
			t.Errorf("expect the slow message extended, got %+v", s)
		}
		if s.ExtensionFailures != calls.Load() || calls.Load() < 6+4+1+1+1+1+1 {
			t.Errorf("expect every hook call counted as a failure, got %d of %d calls", s.ExtensionFailures, calls.Load())
		}
		for _, hook := range []string{"Received", "Handled", "Failed", "Deleted", "Extended", "Released", "Held", "Parked"} {
			if n := logs.seen["Hooks."+hook]; n != 1 {
				t.Errorf("expect Hooks.%s's failure logged once, got %d", hook, n)
			}
		}

		// LeaseLost and DeleteFailed.
		g := newQueue(t, "more", nil)
		g.send(t, "", "quick", "slow")
		g.srv.Inject(sqsfake.Fault{Op: "ChangeMessageVisibilityBatch", Entries: &sqsfake.EntryFault{Code: "ReceiptHandleIsInvalid", SenderFault: true}})
		g.srv.Inject(sqsfake.Fault{Op: "DeleteMessageBatch", Entries: &sqsfake.EntryFault{Code: "ReceiptHandleIsInvalid", SenderFault: true}})
		calls.Store(0)
		c = newConsumer(t, g, outcomesHandler, func(o *Options) {
			o.VisibilityTimeout = 3 * time.Second
			o.Hooks.LeaseLost = func(context.Context, *handler.Message, error) { boom() }
			o.Hooks.DeleteFailed = func(context.Context, *handler.Message, error) { boom() }
		})
		stop = started(t, c)
		until(t, "a lost lease and a failed delete", func() bool { s := c.Stats(); return s.LeaseLost >= 1 && s.DeleteFailed >= 1 })
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if s := c.Stats(); s.ExtensionFailures != calls.Load() || calls.Load() < 2 {
			t.Errorf("expect each LeaseLost and DeleteFailed call counted, got %d of %d", s.ExtensionFailures, calls.Load())
		}
	})
}

// A TracerProvider, MeterProvider or handler.Propagator that panics, returns nil
// or typed nils, or detaches its ctx, costs its own signals: every message
// still ends as its handler said.
func TestTelemetryFailuresCostOnlyTheirSignal(t *testing.T) {
	quiet := map[string]bool{"typed-nil providers": true, "detached ctx": true} // nothing to count
	cases := map[string]func(*Options){
		"typed-nil providers": func(o *Options) {
			o.TracerProvider, o.MeterProvider = (*telemetrytest.Tracer)(nil), (*telemetrytest.Meter)(nil)
		},
	}
	for _, fault := range []telemetrytest.Fault{telemetrytest.PanicProvider, telemetrytest.PanicStart, telemetrytest.PanicUse, telemetrytest.NilResult, telemetrytest.Detached} {
		h := telemetrytest.Hostile{Fault: fault}
		cases[[...]string{"", "provider panics", "start panics", "use panics", "nil results", "detached ctx"}[fault]] = func(o *Options) {
			o.TracerProvider, o.MeterProvider, o.Propagator = h, h, h
		}
	}
	for name, opt := range cases {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newQueue(t, "jobs", nil)
				f.send(t, "", "ok", "bad", "slow")
				c := newConsumer(t, f, outcomesHandler, opt, func(o *Options) { o.VisibilityTimeout = 3 * time.Second })
				stop := started(t, c)
				until(t, "the outcomes", func() bool { s := c.Stats(); return s.Deleted == 2 && s.Released == 1 })
				if err := stop(); err != nil {
					t.Fatal(err)
				}
				if s := c.Stats(); s.Handled != 2 || s.Failed != 1 || s.LeaseLost != 0 || (s.ExtensionFailures == 0) != quiet[name] {
					t.Errorf("expect two handled and one failed, and failures counted unless %v, got %+v", quiet[name], s)
				}
			})
		})
	}
}

// A tracer whose span ctx is detached from its parent cannot detach the
// handler from shutdown: at ShutdownTimeout its ctx is cancelled, and Run
// returns within ShutdownTimeout + 1 s; the handler still sees the span
// ctx's values.
func TestDetachedSpanCtxKeepsTheShutdownBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		f.send(t, "", "stuck")
		var cause error
		var detached bool
		c := newConsumer(t, f, func(ctx context.Context, m *handler.Message) error {
			detached = telemetrytest.InDetachedCtx(ctx)
			<-ctx.Done()
			cause = context.Cause(ctx)
			return ctx.Err()
		}, func(o *Options) {
			o.TracerProvider = telemetrytest.Hostile{Fault: telemetrytest.Detached}
			o.ShutdownTimeout = time.Second
		})
		stop := started(t, c)
		until(t, "the handler", func() bool { return c.Stats().Received == 1 })
		began := time.Now()
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(began); took > 2*time.Second {
			t.Errorf("expect Run to return within ShutdownTimeout + 1 s, took %v", took)
		}
		if !detached || cause != ErrShutdownTimeout {
			t.Errorf("expect the span ctx's values and ErrShutdownTimeout as the cause, got %v, %v", detached, cause)
		}
	})
}

// A hook that is slow, or blocks for good, costs its own signals: other
// messages keep their leases and are deleted, and Run returns within its
// shutdown bound. No hook runs under the consumer's lock.
func TestSlowHooksCostOnlyTheirSignal(t *testing.T) {
	for name, hook := range map[string]func(release <-chan struct{}) func(context.Context, *handler.Message, time.Duration){
		"slow": func(<-chan struct{}) func(context.Context, *handler.Message, time.Duration) {
			return func(context.Context, *handler.Message, time.Duration) { time.Sleep(3 * time.Second) }
		},
		"blocked": func(release <-chan struct{}) func(context.Context, *handler.Message, time.Duration) {
			return func(context.Context, *handler.Message, time.Duration) { <-release }
		},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				release := make(chan struct{})
				defer close(release)
				f := newQueue(t, "jobs", nil)
				f.send(t, "", "slow", "slow", "slow")
				c := newConsumer(t, f, outcomesHandler, func(o *Options) {
					o.VisibilityTimeout = 2 * time.Second
					o.ShutdownTimeout = time.Second
					o.Hooks.Extended = hook(release)
				})
				stop := started(t, c)
				until(t, "the deletes", func() bool { return c.Stats().Deleted == 3 })
				f.send(t, "", "ok")
				until(t, "one more delete", func() bool { return c.Stats().Deleted == 4 })
				began := time.Now()
				if err := stop(); err != nil {
					t.Fatal(err)
				}
				if took := time.Since(began); took > 2*time.Second {
					t.Errorf("expect Run to return within ShutdownTimeout + 1 s, took %v", took)
				}
				if s := c.Stats(); s.LeaseLost != 0 || s.Handled != 4 {
					t.Errorf("expect every lease kept, got %+v", s)
				}
				time.Sleep(5 * time.Second) // the slow hook Run left behind returns
			})
		})
	}
}

// blockingPropagator's Extract, for the message "late", waits (up to a
// minute) for another message's visibility to be extended.
type blockingPropagator struct {
	c  **Consumer
	ok *atomic.Bool
}

func (blockingPropagator) Inject(context.Context, handler.Carrier) {}

func (p blockingPropagator) Extract(ctx context.Context, c handler.Carrier) context.Context {
	if c.Get("late") == "" {
		return ctx
	}
	for range 600 {
		if (*p.c).Stats().Extended > 0 {
			p.ok.Store(true)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return ctx
}

// Extract runs outside the consumer's lock: while it waits, the heartbeat
// extends the other message it holds.
func TestExtractRunsOutsideTheLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		f.send(t, "", "slow")
		var c *Consumer
		var ok atomic.Bool
		c = newConsumer(t, f, outcomesHandler, func(o *Options) {
			o.VisibilityTimeout = 2 * time.Second
			o.Propagator = blockingPropagator{c: &c, ok: &ok}
		})
		stop := started(t, c)
		until(t, "the first receive", func() bool { return c.Stats().Received == 1 })
		f.sendAttr(t, "late", "late")
		until(t, "both deleted", func() bool { return c.Stats().Deleted == 2 })
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if !ok.Load() {
			t.Error("expect the heartbeat to extend while Extract ran")
		}
	})
}

// sendAttr sends body with a String message attribute named key.
func (f *qfix) sendAttr(t *testing.T, body, key string) {
	t.Helper()
	_, err := f.client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(f.url), MessageBody: aws.String(body),
		MessageAttributes: map[string]types.MessageAttributeValue{key: {DataType: aws.String("String"), StringValue: aws.String("1")}}})
	if err != nil {
		t.Fatal(err)
	}
}
