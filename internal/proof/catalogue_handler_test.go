package proof

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sqskit/sqskit/consumer"
	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/sqsfake"
)

// failureLog collects the failures a consumer reports to Hooks.Failed. It
// is the catalogue's only use of hooks.
type failureLog struct {
	mu   sync.Mutex
	errs []error
}

func (f *failureLog) failed(_ context.Context, _ *handler.Message, err error) {
	f.mu.Lock()
	f.errs = append(f.errs, err)
	f.mu.Unlock()
}

func (f *failureLog) hooks() consumer.Hooks { return consumer.Hooks{Failed: f.failed} }

func (f *failureLog) lambdaHooks() handler.Hooks { return handler.Hooks{Failed: f.failed} }

// all checks that there were n failures and that each matches ok.
func (f *failureLog) all(n int, ok func(error) error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.errs) < n {
		return fmt.Errorf("expect %d failures reported, got %d: %v", n, len(f.errs), f.errs)
	}
	for _, err := range f.errs {
		if e := ok(err); e != nil {
			return e
		}
	}
	return nil
}

func isPanic(err error) error { _, e := isAs[*handler.PanicError](err); return e }

var errHandler = errors.New("handler failure")

// panickyError is an error whose Error method panics: what a handler
// returns when it returns a nil *T as an error.
type panickyError struct{ msg *string }

func (e *panickyError) Error() string { return *e.msg }

// lambdaHandlerCase is a hostile handler in a Lambda invocation of three
// messages, a, b and c.
type lambdaHandlerCase struct {
	name string
	// h or bh builds the handler; release is closed once Handle returned,
	// so a handler that hangs can end.
	h        func(release <-chan struct{}) handler.Handler
	bh       func(release <-chan struct{}) handler.BatchHandler
	fifo     bool
	deadline time.Duration // the invocation's; 0 for none
	failed   []string      // the ids the response must list
	want     func(error) error
}

func handlerRows() []row {
	panics := func(<-chan struct{}) handler.Handler {
		return func(context.Context, *handler.Message) error { panic("bug") }
	}
	batchPanics := func(<-chan struct{}) handler.BatchHandler {
		return func(context.Context, []*handler.Message) []error { panic("bug") }
	}
	all := []string{"a", "b", "c"}
	var rows []row
	for _, lc := range []lambdaHandlerCase{
		{name: "Lambda: panics", h: panics, failed: all, want: isPanic},
		{name: "Lambda: panics with nil", h: func(<-chan struct{}) handler.Handler {
			return func(context.Context, *handler.Message) error { panic(nil) }
		}, failed: all, want: isPanic},
		{name: "Lambda: calls runtime.Goexit", h: func(<-chan struct{}) handler.Handler {
			return func(context.Context, *handler.Message) error { runtime.Goexit(); return nil }
		}, failed: all, want: func(err error) error { return is(err, handler.ErrHandlerExited) }},
		{name: "Lambda: never returns within the invocation", h: hangUntil, deadline: time.Minute, failed: all,
			want: func(err error) error { return is(err, handler.ErrNotStarted) }},
		{name: "Lambda: returns RetryAfter with a negative delay", h: func(<-chan struct{}) handler.Handler {
			return func(context.Context, *handler.Message) error { return handler.RetryAfter(errHandler, -time.Hour) }
		}, failed: all, want: func(err error) error { return is(err, errHandler) }},
		{name: "Lambda: returns a typed-nil error whose Error panics", h: func(<-chan struct{}) handler.Handler {
			return func(context.Context, *handler.Message) error { var e *panickyError; return e }
		}, failed: all, want: isPanic},
		{name: "Lambda: rewrites its message and fails", h: func(<-chan struct{}) handler.Handler {
			return func(_ context.Context, m *handler.Message) error {
				m.ID, m.Attributes = "forged", nil
				return errHandler
			}
		}, failed: all, want: func(err error) error { return is(err, errHandler) }},
		{name: "batch Lambda: returns fewer results than messages", bh: func(<-chan struct{}) handler.BatchHandler {
			return func(_ context.Context, msgs []*handler.Message) []error { return make([]error, len(msgs)-1) }
		}, failed: []string{"c"}, want: func(err error) error {
			if err == nil {
				return errors.New("expect the message without a result failed")
			}
			return nil
		}},
		{name: "batch Lambda: returns more results than messages", bh: func(<-chan struct{}) handler.BatchHandler {
			return func(_ context.Context, msgs []*handler.Message) []error { return make([]error, len(msgs)+5) }
		}},
		{name: "batch Lambda: panics", bh: batchPanics, failed: all, want: isPanic},
		{name: "batch Lambda: calls runtime.Goexit", bh: func(<-chan struct{}) handler.BatchHandler {
			return func(context.Context, []*handler.Message) []error { runtime.Goexit(); return nil }
		}, failed: all, want: func(err error) error { return is(err, handler.ErrHandlerExited) }},
		{name: "batch Lambda: never returns within the invocation", bh: func(release <-chan struct{}) handler.BatchHandler {
			return func(context.Context, []*handler.Message) []error { <-release; return nil }
		}, deadline: time.Minute, failed: all, want: func(err error) error { return is(err, handler.ErrNotStarted) }},
		{name: "batch Lambda: reports success after a failure in its FIFO group", fifo: true, bh: func(<-chan struct{}) handler.BatchHandler {
			return func(_ context.Context, msgs []*handler.Message) []error {
				errs := make([]error, len(msgs))
				errs[0] = errHandler
				return errs
			}
		}, failed: all, want: func(err error) error {
			if !errors.Is(err, errHandler) && !errors.Is(err, handler.ErrHeldBack) {
				return fmt.Errorf("expect the handler's error or ErrHeldBack, got %v", err)
			}
			return nil
		}},
	} {
		rows = append(rows, row{cat: catHandler, name: lc.name, child: true, run: func(t *testing.T, _ *catWorld) error { return runLambdaHandler(t, lc) }})
	}
	poller := func(name string, h handler.Handler, want func(error) error) row {
		return row{cat: catHandler, name: "Consumer: " + name, child: true, calls: true, run: func(t *testing.T, _ *catWorld) error {
			return runPollerHandler(t, h, nil, want)
		}}
	}
	return append(rows,
		poller("panics", func(context.Context, *handler.Message) error { panic("bug") }, isPanic),
		poller("panics with nil", func(context.Context, *handler.Message) error { panic(nil) }, isPanic),
		poller("calls runtime.Goexit", func(context.Context, *handler.Message) error { runtime.Goexit(); return nil },
			func(err error) error { return is(err, handler.ErrHandlerExited) }),
		poller("outlives HandlerTimeout", func(ctx context.Context, _ *handler.Message) error { <-ctx.Done(); return ctx.Err() },
			func(err error) error { return is(err, handler.ErrHandlerTimeout) }),
		poller("returns RetryAfter(100h)", func(context.Context, *handler.Message) error { return handler.RetryAfter(errHandler, 100*time.Hour) },
			func(err error) error { return is(err, errHandler) }),
		poller("returns RetryAfter(-5s)", func(context.Context, *handler.Message) error { return handler.RetryAfter(errHandler, -5*time.Second) },
			func(err error) error { return is(err, errHandler) }),
		poller("returns a typed-nil error whose Error panics", func(context.Context, *handler.Message) error { var e *panickyError; return e }, isPanic),
		row{cat: catHandler, name: "Consumer: ignores its ctx and outlives shutdown", child: true, calls: true, run: runIgnoresShutdown},
		row{cat: catHandler, name: "Consumer: rewrites the message it was given, then succeeds", child: true, calls: true, run: runMutatesMessage},
		row{cat: catHandler, name: "Consumer batch: panics", child: true, calls: true, run: func(t *testing.T, _ *catWorld) error {
			return runPollerHandler(t, nil, batchPanics(nil), isPanic)
		}},
		row{cat: catHandler, name: "Consumer batch: returns no results", child: true, calls: true, run: func(t *testing.T, _ *catWorld) error {
			return runPollerHandler(t, nil, func(context.Context, []*handler.Message) []error { return nil }, func(err error) error {
				if err == nil {
					return errors.New("expect a failure for a message without a result")
				}
				return nil
			})
		}},
	)
}

// hangUntil is a handler that ignores its ctx until release is closed.
func hangUntil(release <-chan struct{}) handler.Handler {
	return func(context.Context, *handler.Message) error {
		<-release
		return nil
	}
}

// runLambdaHandler invokes a Lambda with messages a, b and c and the
// hostile handler: the response must list exactly lc.failed, the
// invocation must return within its deadline, and each failure reported
// must match lc.want.
func runLambdaHandler(t *testing.T, lc lambdaHandlerCase) (err error) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		defer close(release)
		var fails failureLog
		opts := func(o *handler.LambdaOptions) { o.Hooks = fails.lambdaHooks(); o.Concurrency = 3 }
		var l *handler.Lambda
		var e error
		if lc.h != nil {
			l, e = handler.NewLambda(lc.h(release), opts)
		} else {
			l, e = handler.NewBatchLambda(lc.bh(release), opts)
		}
		if e != nil {
			t.Fatal(e)
		}
		arn := "arn:aws:sqs:us-east-1:123456789012:q"
		if lc.fifo {
			arn += ".fifo"
		}
		var ev handler.Event
		for _, id := range []string{"a", "b", "c"} {
			ev.Records = append(ev.Records, recordFor(id, arn))
		}
		ctx := context.Background()
		if lc.deadline > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, lc.deadline)
			defer cancel()
		}
		start := time.Now()
		resp, e := l.Handle(ctx, ev)
		if lc.deadline > 0 && time.Since(start) > lc.deadline {
			err = fmt.Errorf("Handle returned %v after the invocation's deadline", time.Since(start)-lc.deadline)
			return
		}
		if e != nil {
			err = fmt.Errorf("expect a response, got %v", e)
			return
		}
		var got []string
		for _, f := range resp.BatchItemFailures {
			got = append(got, f.ItemIdentifier)
		}
		if fmt.Sprint(got) != fmt.Sprint(lc.failed) && !(len(got) == 0 && len(lc.failed) == 0) {
			err = fmt.Errorf("expect failures %v, got %v", lc.failed, got)
			return
		}
		if lc.want != nil {
			err = fails.all(len(lc.failed), lc.want)
		}
	})
	return err
}

// runPollerHandler runs a Consumer on one message with the hostile handler
// for 20 s of fake time, then stops it: Run must return, the failures
// must match want, the message must never be deleted and still be on the
// queue, and the Consumer must hold nothing.
func runPollerHandler(t *testing.T, h handler.Handler, bh handler.BatchHandler, want func(error) error) (err error) {
	synctest.Test(t, func(t *testing.T) {
		w := newCatWorld(t)
		w.send(t, w.std, "m", nil, "")
		// A real round trip: a handler that fails at once, released at
		// once, is received again one call later, not in a spin.
		w.srv.Inject(sqsfake.Fault{Latency: 10 * time.Millisecond})
		var fails failureLog
		opts := func(o *consumer.Options) {
			o.Hooks = fails.hooks()
			o.VisibilityTimeout, o.HandlerTimeout, o.ShutdownTimeout = 30*time.Second, 5*time.Second, 5*time.Second
		}
		var c *consumer.Consumer
		var e error
		if h != nil {
			c, e = consumer.New(w.api, w.std, h, opts)
		} else {
			c, e = consumer.NewBatch(w.api, w.std, bh, opts)
		}
		if e != nil {
			t.Fatal(e)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if e := c.Run(ctx); e != nil {
			err = fmt.Errorf("expect Run to return nil when stopped, got %v", e)
			return
		}
		st := c.Stats()
		switch {
		case st.Deleted != 0 || st.Handled != 0:
			err = fmt.Errorf("expect the message never handled nor deleted, got %+v", st)
		case st.InFlight != 0:
			err = fmt.Errorf("expect nothing held after Run, got %d", st.InFlight)
		case w.count(w.std) != 1:
			err = fmt.Errorf("expect the message still on the queue, got %d", w.count(w.std))
		default: // shutdown gives up a message received but not started
			err = fails.all(1, func(e error) error {
				if errors.Is(e, handler.ErrNotStarted) {
					return nil
				}
				return want(e)
			})
		}
	})
	return err
}

// runIgnoresShutdown: a handler that ignores its ctx does not hold Run past
// ShutdownTimeout and a second's grace; the message is not deleted.
func runIgnoresShutdown(t *testing.T, _ *catWorld) (err error) {
	synctest.Test(t, func(t *testing.T) {
		w := newCatWorld(t)
		w.send(t, w.std, "m", nil, "")
		release := make(chan struct{})
		started := make(chan struct{}, 1)
		c, e := consumer.New(w.api, w.std, func(context.Context, *handler.Message) error {
			started <- struct{}{}
			<-release
			return nil
		}, func(o *consumer.Options) {
			o.VisibilityTimeout, o.ShutdownTimeout, o.HandlerTimeout = 30*time.Second, 5*time.Second, time.Hour
		})
		if e != nil {
			t.Fatal(e)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx) }()
		<-started
		stopped := time.Now()
		cancel()
		select {
		case e = <-done:
		case <-time.After(time.Minute):
			err = errors.New("Run still running a minute after its ctx ended")
		}
		took := time.Since(stopped)
		close(release)
		if err != nil {
			<-done
			return
		}
		switch {
		case e != nil:
			err = fmt.Errorf("expect Run to return nil, got %v", e)
		case took > 7*time.Second:
			err = fmt.Errorf("expect Run back within ShutdownTimeout 5s and 1s of grace, took %v", took)
		case c.Stats().Deleted != 0:
			err = errors.New("expect the message not deleted")
		}
		time.Sleep(time.Second) // the handler's goroutine returns
		if n := w.count(w.std); err == nil && n != 1 {
			err = fmt.Errorf("expect the message still on the queue, got %d", n)
		}
	})
	return err
}

// runMutatesMessage: a handler that rewrites every field of its Message and
// succeeds still gets its message deleted, and the Consumer's accounting
// survives it.
func runMutatesMessage(t *testing.T, _ *catWorld) (err error) {
	synctest.Test(t, func(t *testing.T) {
		w := newCatWorld(t)
		for i := range 3 {
			w.send(t, w.std, fmt.Sprint("m", i), nil, "")
		}
		c, e := consumer.New(w.api, w.std, func(_ context.Context, m *handler.Message) error {
			m.ID, m.ReceiptHandle, m.Body = "forged-id", "forged-handle", ""
			m.Attributes, m.MessageAttributes = nil, nil
			return nil
		}, func(o *consumer.Options) { o.VisibilityTimeout = 30 * time.Second })
		if e != nil {
			t.Fatal(e)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if e := c.Run(ctx); e != nil {
			err = fmt.Errorf("expect Run to return nil, got %v", e)
			return
		}
		st := c.Stats()
		if st.Deleted != 3 || st.InFlight != 0 || w.count(w.std) != 0 {
			err = fmt.Errorf("expect all 3 deleted and nothing held, got %+v and %d on the queue", st, w.count(w.std))
		}
	})
	return err
}
