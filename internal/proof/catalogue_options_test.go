package proof

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/consumer"
	"github.com/sqskit/sqskit/fifo"
	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/replay"
	"github.com/sqskit/sqskit/sqsfake"
)

// ptrStrategy is a strategy behind a pointer: a typed nil of it is a nil
// strategy that a plain == nil check misses.
type ptrStrategy struct{ d time.Duration }

func (s *ptrStrategy) Delay(int, time.Duration) time.Duration { return s.d }

// panickyStrategy panics on every call, as a buggy custom strategy would.
type panickyStrategy struct{}

func (panickyStrategy) Delay(int, time.Duration) time.Duration { panic("strategy bug") }

// Bad strategies every option that takes one must refuse.
var (
	typedNilStrategy backoff.Strategy = (*ptrStrategy)(nil)
	nilBackOff                        = backoff.FromBackOff(nil)
)

func okHandler(context.Context, *handler.Message) error { return nil }

func okBatchHandler(_ context.Context, msgs []*handler.Message) []error {
	return make([]error, len(msgs))
}

func optionRows() []row {
	var rows []row
	rows = append(rows, consumerOptionRows()...)
	rows = append(rows, fifoOptionRows()...)
	rows = append(rows, replayOptionRows()...)
	rows = append(rows, backoffRows()...)
	return rows
}

func consumerOptionRows() []row {
	opt := func(name string, fn func(*consumer.Options)) row {
		return row{cat: catOptions, name: "consumer.New: " + name, run: func(t *testing.T, w *catWorld) error {
			c, err := consumer.New(w.api, w.std, okHandler, fn)
			if c != nil {
				return fmt.Errorf("expect no Consumer, got one (err %v)", err)
			}
			return is(err, consumer.ErrConfig)
		}}
	}
	rows := []row{
		opt("Concurrency -1", func(o *consumer.Options) { o.Concurrency = -1 }),
		opt("Concurrency 120,001 (above the in-flight quota)", func(o *consumer.Options) { o.Concurrency = 120_001 }),
		opt("Concurrency MaxInt", func(o *consumer.Options) { o.Concurrency = math.MaxInt }),
		opt("MaxInFlight -1", func(o *consumer.Options) { o.MaxInFlight = -1 }),
		opt("MaxInFlight 120,001", func(o *consumer.Options) { o.MaxInFlight = 120_001 }),
		opt("MaxInFlight below Concurrency", func(o *consumer.Options) { o.Concurrency, o.MaxInFlight = 20, 10 }),
		opt("ReceiveConcurrency -1", func(o *consumer.Options) { o.ReceiveConcurrency = -1 }),
		opt("ReceiveConcurrency above MaxReceiveConcurrency", func(o *consumer.Options) { o.ReceiveConcurrency, o.MaxReceiveConcurrency = 5, 2 }),
		opt("MaxReceiveConcurrency 1,001", func(o *consumer.Options) { o.MaxReceiveConcurrency = 1001 }),
		opt("MaxReceiveConcurrency -1", func(o *consumer.Options) { o.MaxReceiveConcurrency = -1 }),
		opt("DeleteConcurrency -1", func(o *consumer.Options) { o.DeleteConcurrency = -1 }),
		opt("DeleteConcurrency 1,000,000", func(o *consumer.Options) { o.DeleteConcurrency = 1_000_000 }),
		opt("WaitTime -1s", func(o *consumer.Options) { o.WaitTime = -time.Second }),
		opt("WaitTime 1ns", func(o *consumer.Options) { o.WaitTime = time.Nanosecond }),
		opt("WaitTime 1.5s (SQS counts whole seconds)", func(o *consumer.Options) { o.WaitTime = 1500 * time.Millisecond }),
		opt("WaitTime 21s", func(o *consumer.Options) { o.WaitTime = 21 * time.Second }),
		opt("VisibilityTimeout -1s", func(o *consumer.Options) { o.VisibilityTimeout = -time.Second }),
		opt("VisibilityTimeout 1ns", func(o *consumer.Options) { o.VisibilityTimeout = time.Nanosecond }),
		opt("VisibilityTimeout 12h1s", func(o *consumer.Options) { o.VisibilityTimeout = 12*time.Hour + time.Second }),
		opt("VisibilityTimeout MaxInt64", func(o *consumer.Options) { o.VisibilityTimeout = math.MaxInt64 }),
		opt("HeartbeatInterval 1ns", func(o *consumer.Options) { o.HeartbeatInterval = time.Nanosecond }),
		opt("HeartbeatInterval equal to VisibilityTimeout", func(o *consumer.Options) { o.VisibilityTimeout, o.HeartbeatInterval = 30*time.Second, 30*time.Second }),
		opt("MaxExtension -1", func(o *consumer.Options) { o.MaxExtension = -1 }),
		opt("MaxExtension 13h", func(o *consumer.Options) { o.MaxExtension = 13 * time.Hour }),
		opt("HandlerTimeout 1ns", func(o *consumer.Options) { o.HandlerTimeout = time.Nanosecond }),
		opt("HandlerTimeout -1s", func(o *consumer.Options) { o.HandlerTimeout = -time.Second }),
		opt("HandlerTimeout 13h", func(o *consumer.Options) { o.HandlerTimeout = 13 * time.Hour }),
		opt("OnFailure 99", func(o *consumer.Options) { o.OnFailure = 99 }),
		opt("OnFailure -1", func(o *consumer.Options) { o.OnFailure = -1 }),
		opt("RedeliveryBackoff typed nil", func(o *consumer.Options) { o.RedeliveryBackoff = typedNilStrategy }),
		opt("RedeliveryBackoff FromBackOff(nil)", func(o *consumer.Options) { o.RedeliveryBackoff = nilBackOff }),
		opt("RedeliveryBackoff negative base", func(o *consumer.Options) { o.RedeliveryBackoff = backoff.Exponential{Base: -time.Second} }),
		opt("RedeliveryBackoff that panics", func(o *consumer.Options) { o.RedeliveryBackoff = panickyStrategy{} }),
		opt("ReceiveBackoff zero-base FullJitter (never waits)", func(o *consumer.Options) { o.ReceiveBackoff = backoff.FullJitter{} }),
		opt("ReceiveBackoff Constant 0", func(o *consumer.Options) { o.ReceiveBackoff = backoff.Constant{} }),
		opt("ReceiveBackoff NaN jitter factor", func(o *consumer.Options) {
			o.ReceiveBackoff = backoff.Randomized{Initial: time.Second, Factor: math.NaN()}
		}),
		opt("ReceiveBackoff infinite multiplier", func(o *consumer.Options) {
			o.ReceiveBackoff = backoff.Randomized{Initial: time.Second, Multiplier: math.Inf(1)}
		}),
		opt("ReceiveBackoff typed nil", func(o *consumer.Options) { o.ReceiveBackoff = typedNilStrategy }),
		opt("DeleteLinger -1", func(o *consumer.Options) { o.DeleteLinger = -1 }),
		opt("DeleteLinger 2s", func(o *consumer.Options) { o.DeleteLinger = 2 * time.Second }),
		opt("ShutdownTimeout -1", func(o *consumer.Options) { o.ShutdownTimeout = -1 }),
		opt("ShutdownTimeout 13h", func(o *consumer.Options) { o.ShutdownTimeout = 13 * time.Hour }),
		{cat: catOptions, name: "consumer.New: nil client", run: func(t *testing.T, w *catWorld) error {
			_, err := consumer.New(nil, w.std, okHandler)
			return is(err, consumer.ErrConfig)
		}},
		{cat: catOptions, name: "consumer.New: typed-nil client", run: func(t *testing.T, w *catWorld) error {
			_, err := consumer.New((*sqs.Client)(nil), w.std, okHandler)
			return is(err, consumer.ErrConfig)
		}},
		{cat: catOptions, name: "consumer.New: empty queue URL", run: func(t *testing.T, w *catWorld) error {
			_, err := consumer.New(w.api, "", okHandler)
			return is(err, consumer.ErrConfig)
		}},
		{cat: catOptions, name: "consumer.New: nil handler", run: func(t *testing.T, w *catWorld) error {
			_, err := consumer.New(w.api, w.std, nil)
			return is(err, consumer.ErrConfig)
		}},
		{cat: catOptions, name: "consumer.NewBatch: nil batch handler", run: func(t *testing.T, w *catWorld) error {
			_, err := consumer.NewBatch(w.api, w.std, nil)
			return is(err, consumer.ErrConfig)
		}},
		{cat: catOptions, name: "consumer.NewBatch: typed-nil client", run: func(t *testing.T, w *catWorld) error {
			_, err := consumer.NewBatch((*sqs.Client)(nil), w.std, okBatchHandler)
			return is(err, consumer.ErrConfig)
		}},
		{cat: catOptions, name: "handler.NewLambda: nil handler", run: func(t *testing.T, w *catWorld) error {
			_, err := handler.NewLambda(nil)
			return is(err, handler.ErrConfig)
		}},
		{cat: catOptions, name: "handler.NewBatchLambda: nil batch handler", run: func(t *testing.T, w *catWorld) error {
			_, err := handler.NewBatchLambda(nil)
			return is(err, handler.ErrConfig)
		}},
		{cat: catOptions, name: "handler.NewLambda: Concurrency -1", run: func(t *testing.T, w *catWorld) error {
			_, err := handler.NewLambda(okHandler, func(o *handler.LambdaOptions) { o.Concurrency = -1 })
			return is(err, handler.ErrConfig)
		}},
		{cat: catOptions, name: "handler.NewLambda: DeadlineMargin -1ns", run: func(t *testing.T, w *catWorld) error {
			_, err := handler.NewLambda(okHandler, func(o *handler.LambdaOptions) { o.DeadlineMargin = -1 })
			return is(err, handler.ErrConfig)
		}},
		{cat: catOptions, name: "handler.NewLambda: BatchMiddleware with a Handler", run: func(t *testing.T, w *catWorld) error {
			_, err := handler.NewLambda(okHandler, func(o *handler.LambdaOptions) {
				o.BatchMiddleware = []handler.BatchMiddleware{func(b handler.BatchHandler) handler.BatchHandler { return b }}
			})
			return is(err, handler.ErrConfig)
		}},
		{cat: catOptions, name: "handler.NewBatchLambda: Middleware with a BatchHandler", run: func(t *testing.T, w *catWorld) error {
			_, err := handler.NewBatchLambda(func(context.Context, []*handler.Message) []error { return nil }, func(o *handler.LambdaOptions) {
				o.Middleware = []handler.Middleware{func(h handler.Handler) handler.Handler { return h }}
			})
			return is(err, handler.ErrConfig)
		}},
		{cat: catOptions, name: "consumer.Run: HeartbeatInterval longer than the queue's visibility timeout", calls: true, run: runHeartbeatTooLong},
		{cat: catOptions, name: "consumer.Run: a second Run while one runs", calls: true, child: true, run: runTwice},
	}
	return rows
}

// runHeartbeatTooLong: the heartbeat fits no visibility timeout of 1 s,
// which Run learns from the queue: it returns ErrConfig, and the message
// stays on the queue.
func runHeartbeatTooLong(t *testing.T, _ *catWorld) (err error) {
	synctest.Test(t, func(t *testing.T) {
		w := newCatWorld(t)
		if _, e := w.api.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(w.std), Attributes: map[string]string{"VisibilityTimeout": "1"}}); e != nil {
			t.Fatal(e)
		}
		w.send(t, w.std, "m", nil, "")
		handled := false
		c, e := consumer.New(w.api, w.std, func(context.Context, *handler.Message) error { handled = true; return nil },
			func(o *consumer.Options) { o.HeartbeatInterval = 2 * time.Second })
		if e != nil {
			err = fmt.Errorf("expect New to accept a heartbeat it cannot check yet, got %v", e)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		if err = is(c.Run(ctx), consumer.ErrConfig); err != nil {
			return
		}
		time.Sleep(2 * time.Second) // past the receive's visibility
		if n := w.count(w.std); handled || n != 1 {
			err = fmt.Errorf("expect the message kept and unhandled, got handled=%v, %d on the queue", handled, n)
		}
	})
	return err
}

// runTwice: a second Run of one Consumer returns ErrRunning; the first goes
// on and returns nil when cancelled.
func runTwice(t *testing.T, _ *catWorld) (err error) {
	synctest.Test(t, func(t *testing.T) {
		w := newCatWorld(t)
		c, e := consumer.New(w.api, w.std, okHandler, func(o *consumer.Options) { o.VisibilityTimeout = 30 * time.Second })
		if e != nil {
			err = e
			return
		}
		ctx, cancel := context.WithCancel(context.Background())
		first := make(chan error, 1)
		go func() { first <- c.Run(ctx) }()
		synctest.Wait()
		err = is(c.Run(context.Background()), consumer.ErrRunning)
		cancel()
		if e := <-first; e != nil && err == nil {
			err = fmt.Errorf("expect the first Run to return nil, got %v", e)
		}
	})
	return err
}

func fifoOptionRows() []row {
	sender := func(name string, fn func(*fifo.SenderOptions)) row {
		return row{cat: catOptions, name: "fifo.NewSender: " + name, run: func(t *testing.T, w *catWorld) error {
			s, err := fifo.NewSender(w.api, w.fifo, fn)
			if s != nil {
				return fmt.Errorf("expect no Sender, got one (err %v)", err)
			}
			return is(err, fifo.ErrConfig)
		}}
	}
	batcher := func(name string, fn func(*fifo.BatcherOptions)) row {
		return row{cat: catOptions, name: "fifo.NewBatcher: " + name, run: func(t *testing.T, w *catWorld) error {
			s, err := fifo.NewSender(w.api, w.fifo)
			if err != nil {
				return err
			}
			b, err := s.NewBatcher(fn)
			if b != nil {
				_ = b.Close(context.Background())
				return fmt.Errorf("expect no Batcher, got one (err %v)", err)
			}
			return is(err, fifo.ErrConfig)
		}}
	}
	return []row{
		{cat: catOptions, name: "fifo.NewSender: nil client", run: func(t *testing.T, w *catWorld) error {
			_, err := fifo.NewSender(nil, w.fifo)
			return is(err, fifo.ErrConfig)
		}},
		{cat: catOptions, name: "fifo.NewSender: typed-nil client", run: func(t *testing.T, w *catWorld) error {
			_, err := fifo.NewSender((*sqs.Client)(nil), w.fifo)
			return is(err, fifo.ErrConfig)
		}},
		{cat: catOptions, name: "fifo.NewSender: empty queue URL", run: func(t *testing.T, w *catWorld) error {
			_, err := fifo.NewSender(w.api, "")
			return is(err, fifo.ErrConfig)
		}},
		sender("SendMaxAttempts -1", func(o *fifo.SenderOptions) { o.SendMaxAttempts = -1 }),
		sender("SendBackoff negative base", func(o *fifo.SenderOptions) { o.SendBackoff = backoff.FullJitter{Base: -1} }),
		sender("SendBackoff cap below base", func(o *fifo.SenderOptions) {
			o.SendBackoff = backoff.FullJitter{Base: time.Second, Cap: time.Millisecond}
		}),
		sender("SendBackoff typed nil", func(o *fifo.SenderOptions) { o.SendBackoff = typedNilStrategy }),
		sender("SendBackoff FromBackOff(nil)", func(o *fifo.SenderOptions) { o.SendBackoff = nilBackOff }),
		sender("SendBackoff MaxAttempts around a nil strategy", func(o *fifo.SenderOptions) { o.SendBackoff = backoff.MaxAttempts{N: 3} }),
		sender("DedupWindow -1", func(o *fifo.SenderOptions) { o.DedupWindow = -1 }),
		sender("DedupWindow 6m (SQS forgets after 5m)", func(o *fifo.SenderOptions) { o.DedupWindow = 6 * time.Minute }),
		sender("SendConcurrency -1", func(o *fifo.SenderOptions) { o.SendConcurrency = -1 }),
		sender("MaxBatchBytes -1", func(o *fifo.SenderOptions) { o.MaxBatchBytes = -1 }),
		sender("MaxBatchBytes 2 MiB", func(o *fifo.SenderOptions) { o.MaxBatchBytes = 2 << 20 }),
		sender("MaxMessageBytes -1", func(o *fifo.SenderOptions) { o.MaxMessageBytes = -1 }),
		sender("MaxMessageBytes 2 MiB", func(o *fifo.SenderOptions) { o.MaxMessageBytes = 2 << 20 }),
		batcher("Linger -1ns", func(o *fifo.BatcherOptions) { o.Linger = -1 }),
		batcher("SendConcurrency -1", func(o *fifo.BatcherOptions) { o.SendConcurrency = -1 }),
		{cat: catOptions, name: "fifo.NewSender: zero-base SendBackoff against a failing queue stops at SendMaxAttempts", calls: true, run: zeroBaseSendBackoff},
	}
}

func replayOptionRows() []row {
	opt := func(name string, fn func(w *catWorld, o *replay.Options)) row {
		return row{cat: catOptions, name: "replay.New: " + name, run: func(t *testing.T, w *catWorld) error {
			r, err := replay.New(w.api, w.dlq, w.operator, func(o *replay.Options) {
				o.Target = w.main
				fn(w, o)
			})
			if r != nil {
				return fmt.Errorf("expect no Replayer, got one (err %v)", err)
			}
			return is(err, replay.ErrConfig)
		}}
	}
	policy := func(name string, p replay.Policy) row {
		return opt("Policy "+name, func(_ *catWorld, o *replay.Options) { o.Policy = p })
	}
	return []row{
		{cat: catOptions, name: "replay.New: nil client", run: func(t *testing.T, w *catWorld) error {
			_, err := replay.New(nil, w.dlq, w.operator, func(o *replay.Options) { o.Target = w.main })
			return is(err, replay.ErrConfig)
		}},
		{cat: catOptions, name: "replay.New: typed-nil client", run: func(t *testing.T, w *catWorld) error {
			_, err := replay.New((*sqs.Client)(nil), w.dlq, w.operator, func(o *replay.Options) { o.Target = w.main })
			return is(err, replay.ErrConfig)
		}},
		{cat: catOptions, name: "replay.New: empty DLQ URL", run: func(t *testing.T, w *catWorld) error {
			_, err := replay.New(w.api, "", w.operator, func(o *replay.Options) { o.Target = w.main })
			return is(err, replay.ErrConfig)
		}},
		{cat: catOptions, name: "replay.New: empty operator queue URL", run: func(t *testing.T, w *catWorld) error {
			_, err := replay.New(w.api, w.dlq, "", func(o *replay.Options) { o.Target = w.main })
			return is(err, replay.ErrConfig)
		}},
		{cat: catOptions, name: "replay.New: operator queue is the DLQ", run: func(t *testing.T, w *catWorld) error {
			_, err := replay.New(w.api, w.dlq, w.dlq, func(o *replay.Options) { o.Target = w.main })
			return is(err, replay.ErrConfig)
		}},
		opt("neither Target nor Sources", func(_ *catWorld, o *replay.Options) { o.Target = "" }),
		opt("both Target and Sources", func(w *catWorld, o *replay.Options) {
			o.Sources = map[string]string{"arn:aws:sqs:us-east-1:123456789012:main": w.main}
		}),
		opt("Target is the DLQ", func(w *catWorld, o *replay.Options) { o.Target = w.dlq }),
		opt("Target is the operator queue", func(w *catWorld, o *replay.Options) { o.Target = w.operator }),
		opt("Sources with an empty ARN", func(w *catWorld, o *replay.Options) { o.Target, o.Sources = "", map[string]string{"": w.main} }),
		opt("Sources with an empty URL", func(w *catWorld, o *replay.Options) {
			o.Target, o.Sources = "", map[string]string{"arn:aws:sqs:us-east-1:123456789012:main": ""}
		}),
		opt("Sources routing to the DLQ", func(w *catWorld, o *replay.Options) {
			o.Target, o.Sources = "", map[string]string{"arn:aws:sqs:us-east-1:123456789012:main": w.dlq}
		}),
		opt("Sources routing to the operator queue", func(w *catWorld, o *replay.Options) {
			o.Target, o.Sources = "", map[string]string{"arn:aws:sqs:us-east-1:123456789012:main": w.operator}
		}),
		policy("MaxAttempts -2", replay.Policy{MaxAttempts: -2}),
		policy("MaxAttempts 1,000,001", replay.Policy{MaxAttempts: 1_000_001}),
		policy("MaxBackoff -1", replay.Policy{MaxBackoff: -1}),
		policy("MaxBackoff 13h", replay.Policy{MaxBackoff: 13 * time.Hour}),
		policy("MaxMessageBytes 100 (below 1 KiB)", replay.Policy{MaxMessageBytes: 100}),
		policy("MaxMessageBytes 2 MiB", replay.Policy{MaxMessageBytes: 2 << 20}),
		policy("CounterAttribute is the metadata attribute", replay.Policy{CounterAttribute: replay.MetadataAttribute}),
		policy("CounterAttribute with a space", replay.Policy{CounterAttribute: "replay count"}),
		policy("CounterAttribute with a reserved prefix", replay.Policy{CounterAttribute: "AWS.count"}),
		policy("Backoff negative base", replay.Policy{Backoff: backoff.EqualJitter{Base: -time.Minute}}),
		policy("Backoff typed nil", replay.Policy{Backoff: typedNilStrategy}),
		policy("Backoff FromBackOff(nil)", replay.Policy{Backoff: nilBackOff}),
		policy("Backoff Capped around a nil strategy", replay.Policy{Backoff: backoff.Capped{Cap: time.Hour}}),
		opt("RateLimit NaN", func(_ *catWorld, o *replay.Options) { o.RateLimit = math.NaN() }),
		opt("RateLimit +Inf", func(_ *catWorld, o *replay.Options) { o.RateLimit = math.Inf(1) }),
		opt("RateLimit -1", func(_ *catWorld, o *replay.Options) { o.RateLimit = -1 }),
		opt("Concurrency -1", func(_ *catWorld, o *replay.Options) { o.Concurrency = -1 }),
		opt("Concurrency 101", func(_ *catWorld, o *replay.Options) { o.Concurrency = 101 }),
		opt("WaitTime 1ns", func(_ *catWorld, o *replay.Options) { o.WaitTime = time.Nanosecond }),
		opt("WaitTime 21s", func(_ *catWorld, o *replay.Options) { o.WaitTime = 21 * time.Second }),
		opt("WaitTime 1.5s (SQS counts whole seconds)", func(_ *catWorld, o *replay.Options) { o.WaitTime = 1500 * time.Millisecond }),
		opt("ReceiveBackoff Constant 0 (never waits: the consumer's rule)", func(_ *catWorld, o *replay.Options) { o.ReceiveBackoff = backoff.Constant{} }),
		opt("VisibilityTimeout 1ns", func(_ *catWorld, o *replay.Options) { o.VisibilityTimeout = time.Nanosecond }),
		opt("VisibilityTimeout 13h", func(_ *catWorld, o *replay.Options) { o.VisibilityTimeout = 13 * time.Hour }),
		opt("ReceiveBackoff NaN jitter factor", func(_ *catWorld, o *replay.Options) {
			o.ReceiveBackoff = backoff.Randomized{Initial: time.Second, Factor: math.NaN()}
		}),
		opt("ReceiveBackoff typed nil", func(_ *catWorld, o *replay.Options) { o.ReceiveBackoff = typedNilStrategy }),
	}
}

// zeroBaseSendBackoff: a SendBackoff that never waits, against a queue
// that always fails, makes SendMaxAttempts calls and returns the error.
func zeroBaseSendBackoff(t *testing.T, _ *catWorld) (err error) {
	synctest.Test(t, func(t *testing.T) {
		w := newCatWorld(t)
		w.srv.Inject(sqsfake.Fault{Op: "SendMessage"})
		s, e := fifo.NewSender(w.api, w.std, func(o *fifo.SenderOptions) { o.SendBackoff = backoff.FullJitter{} })
		if e != nil {
			err = e
			return
		}
		res, e := s.Send(context.Background(), fifo.Message{Body: "b"})
		if calls := w.srv.Calls().Op["SendMessage"]; e == nil || res.Attempts != 3 || calls != 3 {
			err = fmt.Errorf("expect the failure after 3 calls, got %v after %d attempts, %d calls", e, res.Attempts, calls)
		}
	})
	return err
}

func backoffRows() []row {
	retry := func(name string, s backoff.Strategy) row {
		return row{cat: catOptions, name: "backoff.Retry: " + name, run: func(t *testing.T, w *catWorld) error {
			called := false
			err := backoff.Retry(context.Background(), s, func(context.Context) error { called = true; return errors.New("fails") })
			if called {
				return fmt.Errorf("expect op not called with an invalid strategy, got %v", err)
			}
			_, e := isAs[*backoff.ConfigError](err)
			return e
		}}
	}
	budget := func(capacity, cost, refund int) row {
		return row{cat: catOptions, name: fmt.Sprintf("backoff.NewBudget(%d, %d, %d)", capacity, cost, refund), run: func(t *testing.T, w *catWorld) error {
			b, err := backoff.NewBudget(capacity, cost, refund)
			if b != nil {
				return fmt.Errorf("expect no Budget, got one (err %v)", err)
			}
			_, e := isAs[*backoff.ConfigError](err)
			return e
		}}
	}
	rows := []row{
		retry("nil strategy", nil),
		retry("typed-nil strategy", typedNilStrategy),
		retry("FromBackOff(nil)", nilBackOff),
		retry("MaxAttempts around a nil strategy", backoff.MaxAttempts{N: 3}),
		retry("MaxAttempts around FromBackOff(nil)", backoff.MaxAttempts{S: nilBackOff, N: 3}),
		retry("MaxAttempts N -1", backoff.MaxAttempts{S: backoff.Constant{D: time.Second}, N: -1}),
		retry("Capped around a nil strategy", backoff.Capped{Cap: time.Second}),
		retry("Capped negative cap", backoff.Capped{S: backoff.Constant{D: time.Second}, Cap: -1}),
		retry("ByError without Default", backoff.ByError{}),
		retry("ByError with an invalid Throttle", backoff.ByError{Default: backoff.Constant{}, Throttle: backoff.Constant{D: -1}}),
		retry("Budgeted without a budget", backoff.Budgeted{S: backoff.Constant{D: time.Second}}),
		retry("Exponential negative base", backoff.Exponential{Base: -time.Second}),
		retry("Exponential cap below base", backoff.Exponential{Base: time.Second, Cap: time.Millisecond}),
		retry("FullJitter negative cap", backoff.FullJitter{Base: time.Second, Cap: -1}),
		retry("EqualJitter negative base", backoff.EqualJitter{Base: -1}),
		retry("DecorrelatedJitter negative base", backoff.DecorrelatedJitter{Base: -1}),
		retry("DecorrelatedJitterV2 negative median", backoff.DecorrelatedJitterV2{MedianFirst: -1}),
		retry("Randomized NaN factor", backoff.Randomized{Initial: time.Second, Factor: math.NaN()}),
		retry("Randomized factor 2", backoff.Randomized{Initial: time.Second, Factor: 2}),
		retry("Randomized multiplier 0.5", backoff.Randomized{Initial: time.Second, Multiplier: 0.5}),
		retry("Randomized NaN multiplier", backoff.Randomized{Initial: time.Second, Multiplier: math.NaN()}),
		retry("Constant -1ns", backoff.Constant{D: -1}),
		{cat: catOptions, name: "backoff.Retry: nil op", run: func(t *testing.T, w *catWorld) error {
			_, err := isAs[*backoff.ConfigError](backoff.Retry(context.Background(), backoff.Constant{}, nil))
			return err
		}},
		{cat: catOptions, name: "backoff.Retry: zero-base FullJitter and an op that always fails end with the ctx", run: retryUntilDeadline(backoff.FullJitter{})},
		{cat: catOptions, name: "backoff.Retry: 1ns Constant and an op that always fails end with the ctx", run: retryUntilDeadline(backoff.Constant{D: time.Nanosecond})},
		budget(0, 5, 1),
		budget(500, 0, 1),
		budget(500, 5, -1),
		budget(-1, -1, -1),
		{cat: catOptions, name: "backoff.NewIterator(nil): NextBackOff stops", run: func(t *testing.T, w *catWorld) error {
			if d := backoff.NewIterator(nil).NextBackOff(); d != backoff.Stop {
				return fmt.Errorf("expect Stop from an iterator over no strategy, got %v", d)
			}
			return nil
		}},
	}
	// Huge, negative and zero inputs to every strategy's Delay: a delay of 0
	// to the cap, or Stop; never a panic, a negative delay or one past the cap.
	for _, s := range []struct {
		name string
		s    backoff.Strategy
		cap  time.Duration
	}{
		{"Exponential", backoff.Exponential{Base: time.Nanosecond, Cap: time.Hour}, time.Hour},
		{"FullJitter", backoff.FullJitter{Base: time.Hour, Cap: 2 * time.Hour}, 2 * time.Hour},
		{"EqualJitter", backoff.EqualJitter{Base: math.MaxInt64 / 2}, math.MaxInt64},
		{"DecorrelatedJitter", backoff.DecorrelatedJitter{Base: time.Nanosecond, Cap: time.Minute}, time.Minute},
		{"DecorrelatedJitter literal, no cap", backoff.DecorrelatedJitter{Base: time.Second, Literal: true}, math.MaxInt64},
		{"DecorrelatedJitterV2", backoff.DecorrelatedJitterV2{MedianFirst: time.Second, Cap: time.Hour}, time.Hour},
		{"Randomized", backoff.Randomized{Initial: time.Second, Multiplier: 1e300, Factor: 1, Cap: time.Hour}, time.Hour},
		{"Constant", backoff.Constant{D: time.Second}, time.Second},
	} {
		rows = append(rows, row{cat: catOptions, name: "backoff." + s.name + ": Delay at extreme attempts and previous delays", run: func(t *testing.T, w *catWorld) error {
			for _, attempt := range []int{math.MinInt, -1, 0, 1, 62, 63, 64, 1 << 40, math.MaxInt} {
				for _, prev := range []time.Duration{math.MinInt64, -1, 0, time.Second, math.MaxInt64 / 3, math.MaxInt64} {
					if d := s.s.Delay(attempt, prev); d != backoff.Stop && (d < 0 || d > s.cap) {
						return fmt.Errorf("Delay(%d, %v) = %v, outside [0, %v]", attempt, prev, d, s.cap)
					}
				}
			}
			return nil
		}})
	}
	return rows
}

// retryUntilDeadline: a strategy that never waits retries a failing op
// until ctx ends, and Retry then returns the op's error with ctx's.
func retryUntilDeadline(s backoff.Strategy) func(*testing.T, *catWorld) error {
	return func(t *testing.T, _ *catWorld) (err error) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			fail := errors.New("fails")
			calls := 0
			got := backoff.Retry(ctx, s, func(context.Context) error {
				calls++
				if calls%10 == 0 {
					time.Sleep(10 * time.Millisecond) // let fake time reach the deadline
				}
				return fail
			})
			if !errors.Is(got, fail) || !errors.Is(got, context.DeadlineExceeded) {
				err = fmt.Errorf("expect the op's error joined with the deadline, got %v", got)
			}
		})
		return err
	}
}
