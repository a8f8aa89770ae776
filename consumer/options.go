package consumer

import (
	"cmp"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/aws/smithy-go/metrics"
	"github.com/aws/smithy-go/tracing"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/internal/dispatch"
	"github.com/sqskit/sqskit/internal/sqsrule"
)

// Bounds of the options, with the reason for each.
const (
	// maxInFlightLimit is SQS's quota of in-flight messages per queue: a
	// consumer cannot hold more, and bounding it keeps every structure sized
	// from it small.
	maxInFlightLimit = 120_000
	// maxCallConcurrency bounds receive and delete concurrency: far beyond
	// what one client needs (1,000 calls in flight at 10 ms is 1,000,000
	// messages/s), and low enough that a typo does not start a million
	// goroutines.
	maxCallConcurrency = 1000
	// minHeartbeat is the shortest heartbeat period: shorter only burns CPU,
	// since SQS counts visibility in whole seconds.
	minHeartbeat = 100 * time.Millisecond
	// minReceiveBackoff is the shortest wait after a failed receive, whatever
	// ReceiveBackoff says, so a strategy that returns 0 cannot spin.
	minReceiveBackoff = 10 * time.Millisecond
	// defaultShutdownTimeout leaves Run (which returns within it + 1 s)
	// 9 s of Kubernetes' default 30 s termination grace period for a
	// preStop hook, other components' shutdown and the process's exit.
	defaultShutdownTimeout = 20 * time.Second
)

// Options configure a Consumer. Zero values mean the defaults. The
// throughput and timing knobs most services never set are in the embedded
// Tuning (o.MaxInFlight, o.WaitTime, …).
type Options struct {
	// Concurrency is how many handler calls run at once: one message each
	// with New, one receive's batch with NewBatch. 1 to 120,000. Default 10.
	Concurrency int
	// HandlerTimeout bounds one handler call (with NewBatch, one batch):
	// its ctx is cancelled and its message fails at once with
	// handler.ErrHandlerTimeout. 1 s to 12 h. Default 15 min.
	HandlerTimeout time.Duration
	// VisibilityTimeout is asked for on receive and extended while a
	// message is held. Whole seconds, 1 s to 12 h. Default: the queue's.
	VisibilityTimeout time.Duration
	// OnFailure is what a failed message does. Default RetryWithBackoff.
	OnFailure FailurePolicy
	// RedeliveryBackoff gives RetryWithBackoff's delay for attempt
	// ApproximateReceiveCount − 1 (within 12 h of the receive). Default
	// EqualJitter, 1 s base, 5 min cap.
	RedeliveryBackoff backoff.Strategy
	// ParkingQueue is the operator queue's URL: a message whose handler
	// returns handler.Escalate or handler.Permanent is moved there (see
	// Parker). Default none: an escalation fails like any error.
	ParkingQueue string
	// RateLimit caps the messages received per second: a finite number,
	// 0 (the default) for no cap.
	RateLimit float64
	Budget    Budget // handler calls' slots shared with other consumers; default none
	// StopOnFirstFailure, on FIFO queues, stops every waiting message at a
	// failure, not only its group's. Default false.
	StopOnFirstFailure bool
	// ShutdownTimeout is how long running handlers may finish once Run's ctx
	// is done (then cancelled); Run returns within it + 1 s. Up to 12 h; default 20 s.
	ShutdownTimeout time.Duration
	// Middleware wraps the handler of New, the first listed outermost
	// (handler.Chain); BatchMiddleware wraps NewBatch's. Default none.
	Middleware      []handler.Middleware
	BatchMiddleware []handler.BatchMiddleware
	Logger          *slog.Logger // failures and lifecycle events, never bodies; default silent
	Hooks           Hooks        // called for each message event; default none
	// TracerProvider, MeterProvider and Propagator turn on spans, metrics
	// and trace context (docs/telemetry.md). Default off.
	TracerProvider tracing.TracerProvider
	MeterProvider  metrics.MeterProvider
	Propagator     handler.Propagator
	Tuning
}

// Tuning holds the Consumer's throughput and timing knobs, embedded in
// Options. The defaults move about 24,000 messages a second at 10 ms per
// call with a no-op handler (docs/consumer.md says how each works).
type Tuning struct {
	// ReceiveConcurrency is the floor of concurrent receives: this many long
	// polls run even on an idle queue, each costing one call per WaitTime.
	// 1 to MaxReceiveConcurrency. Default 1.
	ReceiveConcurrency int
	// MaxReceiveConcurrency bounds concurrent receives. Receives grow from
	// ReceiveConcurrency toward it while they come back full and there are
	// free places, and shrink back when they come back empty; a throttled
	// receive halves them, and they then grow by an eighth of a receive
	// per round trip (see the package doc's Throttling). With ten
	// messages per call, n receives in flight move up to n × 10 ÷ latency
	// messages/s. ReceiveConcurrency to 1,000. Default 24.
	MaxReceiveConcurrency int
	// DeleteConcurrency bounds the DeleteMessageBatch and
	// ChangeMessageVisibilityBatch calls in flight (deletes, releases and
	// heartbeat extensions share it); once one of them is throttled, each
	// action's calls in flight halve and grow back slowly below it.
	// 1 to 1,000. Default 24, matching MaxReceiveConcurrency's throughput.
	DeleteConcurrency int
	// MaxInFlight bounds the messages held at once, and so memory: received,
	// waiting for a handler, running, or being deleted or released. A
	// receive asks only for places free now. Concurrency to 120,000 (SQS's
	// in-flight quota). Default Concurrency + 10 × (MaxReceiveConcurrency +
	// DeleteConcurrency): a message is held from its receive until its delete
	// is acknowledged, at least two round trips, so MaxInFlight ÷ that time
	// caps throughput; the default gives every handler a message and every
	// receive and delete call allowed in flight a full batch of ten. Lower
	// it for large messages: 512 held messages of 1 MiB are 512 MiB.
	MaxInFlight int
	// WaitTime is the long-poll wait, whole seconds from 1 s to 20 s.
	// Default 20 s.
	WaitTime time.Duration
	// HeartbeatInterval is how often visibility is checked and extended;
	// messages with less than VisibilityTimeout − HeartbeatInterval left are
	// extended. 100 ms to below VisibilityTimeout. Default a third of
	// VisibilityTimeout. When VisibilityTimeout comes from the queue, Run
	// checks this bound and returns ErrConfig if it does not hold.
	HeartbeatInterval time.Duration
	// MaxExtension caps how long after a receive a message may be kept
	// invisible. Up to 12 h (SQS's cap). Default 12 h.
	MaxExtension time.Duration
	// ReceiveBackoff spaces receives after errors; waits shorter than 10 ms
	// are raised to 10 ms, and a strategy that never waits is refused.
	// Default FullJitter, 100 ms base, 10 s cap.
	ReceiveBackoff backoff.Strategy
	// Breaker pauses intake while the handler keeps failing. Default off.
	Breaker Breaker
	// DeleteLinger is how long a handled message may wait for others to
	// fill its delete batch of ten. A partial batch also goes at once when
	// no message is waiting or running (nothing else could join it). Up to
	// 1 s. Default 10 ms.
	DeleteLinger time.Duration
}

// configError builds an error matching ErrConfig.
func configError(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...)
}

// resolve fills defaults and checks every option. The visibility timeout may
// stay 0 (read from the queue at Run); resolveVisibility finishes the job.
func resolve(o *Options) error {
	if o.Concurrency < 0 || o.MaxInFlight < 0 || o.ReceiveConcurrency < 0 || o.MaxReceiveConcurrency < 0 || o.DeleteConcurrency < 0 {
		return configError("Concurrency, MaxInFlight, ReceiveConcurrency, MaxReceiveConcurrency and DeleteConcurrency must not be negative")
	}
	o.ReceiveConcurrency = cmp.Or(o.ReceiveConcurrency, 1)
	o.MaxReceiveConcurrency = cmp.Or(o.MaxReceiveConcurrency, max(24, o.ReceiveConcurrency))
	o.DeleteConcurrency = cmp.Or(o.DeleteConcurrency, 24)
	switch {
	case o.MaxReceiveConcurrency > maxCallConcurrency || o.DeleteConcurrency > maxCallConcurrency:
		return configError("MaxReceiveConcurrency %d and DeleteConcurrency %d must be at most %d", o.MaxReceiveConcurrency, o.DeleteConcurrency, maxCallConcurrency)
	case o.ReceiveConcurrency > o.MaxReceiveConcurrency:
		return configError("ReceiveConcurrency %d is above MaxReceiveConcurrency %d", o.ReceiveConcurrency, o.MaxReceiveConcurrency)
	case o.Concurrency > maxInFlightLimit || o.MaxInFlight > maxInFlightLimit:
		return configError("Concurrency %d and MaxInFlight %d must be at most %d (SQS's in-flight quota)", o.Concurrency, o.MaxInFlight, maxInFlightLimit)
	}
	o.Concurrency = cmp.Or(o.Concurrency, 10)
	if o.MaxInFlight == 0 {
		o.MaxInFlight = min(o.Concurrency+sqsrule.MaxReceiveMessages*(o.MaxReceiveConcurrency+o.DeleteConcurrency), maxInFlightLimit)
	}
	if o.MaxInFlight < o.Concurrency {
		return configError("MaxInFlight %d is below Concurrency %d", o.MaxInFlight, o.Concurrency)
	}

	o.WaitTime = cmp.Or(o.WaitTime, sqsrule.MaxWaitSeconds*time.Second)
	if o.WaitTime < time.Second || o.WaitTime > sqsrule.MaxWaitSeconds*time.Second || o.WaitTime%time.Second != 0 {
		return configError("WaitTime %v must be whole seconds from 1s to 20s", o.WaitTime)
	}
	if o.VisibilityTimeout != 0 {
		if err := checkVisibility(o.VisibilityTimeout); err != nil {
			return err
		}
	}
	if o.HeartbeatInterval != 0 && o.HeartbeatInterval < minHeartbeat {
		return configError("HeartbeatInterval %v is below %v", o.HeartbeatInterval, minHeartbeat)
	}
	o.MaxExtension = cmp.Or(o.MaxExtension, sqsrule.MaxVisibility)
	if o.MaxExtension < 0 || o.MaxExtension > sqsrule.MaxVisibility {
		return configError("MaxExtension %v must be at most 12h", o.MaxExtension)
	}
	o.HandlerTimeout = cmp.Or(o.HandlerTimeout, 15*time.Minute)
	if o.HandlerTimeout < time.Second || o.HandlerTimeout > sqsrule.MaxVisibility {
		return configError("HandlerTimeout %v must be from 1s to 12h", o.HandlerTimeout)
	}
	if o.OnFailure < RetryWithBackoff || o.OnFailure > LeaveToTimeout {
		return configError("unknown OnFailure %d", o.OnFailure)
	}
	if o.RedeliveryBackoff == nil {
		o.RedeliveryBackoff = backoff.EqualJitter{Base: time.Second, Cap: 5 * time.Minute}
	}
	if o.ReceiveBackoff == nil {
		o.ReceiveBackoff = backoff.FullJitter{Base: 100 * time.Millisecond, Cap: 10 * time.Second}
	}
	if err := checkStrategy("RedeliveryBackoff", o.RedeliveryBackoff, false); err != nil {
		return err
	}
	if err := checkStrategy("ReceiveBackoff", o.ReceiveBackoff, true); err != nil {
		return err
	}
	o.DeleteLinger = cmp.Or(o.DeleteLinger, 10*time.Millisecond)
	o.ShutdownTimeout = cmp.Or(o.ShutdownTimeout, defaultShutdownTimeout)
	switch {
	case o.DeleteLinger < 0 || o.DeleteLinger > time.Second:
		return configError("DeleteLinger %v must be at most 1s", o.DeleteLinger)
	case o.ShutdownTimeout < 0 || o.ShutdownTimeout > sqsrule.MaxVisibility:
		return configError("ShutdownTimeout %v must be at most 12h", o.ShutdownTimeout)
	}
	if err := resolveBreaker(&o.Breaker); err != nil {
		return err
	}
	if math.IsNaN(o.RateLimit) || math.IsInf(o.RateLimit, 0) || o.RateLimit < 0 {
		return configError("RateLimit %v must be 0 or a finite positive number", o.RateLimit)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

func checkVisibility(d time.Duration) error {
	if d < time.Second || d > sqsrule.MaxVisibility || d%time.Second != 0 {
		return configError("VisibilityTimeout %v must be whole seconds from 1s to 12h", d)
	}
	return nil
}

// resolveVisibility sets the visibility timeout (from the queue when the
// option was unset) and the heartbeat that depends on it.
func resolveVisibility(o *Options, vis time.Duration) error {
	if err := checkVisibility(vis); err != nil {
		return err
	}
	o.VisibilityTimeout = vis
	o.HeartbeatInterval = cmp.Or(o.HeartbeatInterval, max(vis/3, minHeartbeat))
	if o.HeartbeatInterval >= vis {
		return configError("HeartbeatInterval %v must be shorter than VisibilityTimeout %v", o.HeartbeatInterval, vis)
	}
	return nil
}

// checkStrategy refuses a strategy that is nil, fails its own validation,
// panics (backoff.FromBackOff(nil)), or, when mustWait, never waits
// (FullJitter{} with a zero base would retry a throttled call at once,
// forever).
func checkStrategy(name string, s backoff.Strategy, mustWait bool) (err error) {
	if dispatch.IsNil(s) {
		return configError("%s is nil", name)
	}
	if err := backoff.Validate(s); err != nil {
		return configError("%s: %w", name, err)
	}
	defer func() {
		if v := recover(); v != nil {
			err = configError("%s panics: %v", name, v)
		}
	}()
	waits := false
	var prev time.Duration
	for attempt := range 16 {
		d := s.Delay(attempt, prev)
		if d > 0 {
			waits = true
		}
		if d == backoff.Stop {
			break
		}
		prev = d
	}
	if mustWait && !waits {
		return configError("%s never waits (a zero base?)", name)
	}
	return nil
}
