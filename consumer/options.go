package consumer

import (
	"cmp"
	"fmt"
	"log/slog"
	"math"
	"reflect"
	"time"

	"github.com/aws/smithy-go/metrics"
	"github.com/aws/smithy-go/tracing"

	"github.com/sqskit/sqskit/backoff"
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
)

// Options configure a Consumer. Zero values mean the defaults.
type Options struct {
	// Concurrency is how many handlers run at once (with NewBatch, how many
	// batches). 1 to MaxInFlight. Default 10.
	Concurrency int
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
	// messages/s: the default allows about 24,000 messages/s at 10 ms per
	// call (a real region's round trip). ReceiveConcurrency to 1,000.
	// Default 24.
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
	// receive and delete call allowed in flight a full batch of ten. (The
	// old default, 2 × Concurrency, capped Concurrency 32 near 2,500
	// messages/s at 10 ms per call.) The places are used only as fast as
	// handlers and the queue allow: receives pause while Concurrency
	// messages wait for a handler. Lower it for large messages: 512 held
	// messages of 1 MiB are 512 MiB.
	MaxInFlight int
	// WaitTime is the long-poll wait, whole seconds from 1 s to 20 s.
	// Default 20 s.
	WaitTime time.Duration
	// VisibilityTimeout is asked for on receive and on every extension,
	// whole seconds from 1 s to 12 h. Default: the queue's own
	// VisibilityTimeout, read once by Run with GetQueueAttributes.
	VisibilityTimeout time.Duration
	// HeartbeatInterval is how often visibility is checked and extended;
	// messages with less than VisibilityTimeout − HeartbeatInterval left are
	// extended. 100 ms to below VisibilityTimeout. Default a third of
	// VisibilityTimeout. When VisibilityTimeout comes from the queue, Run
	// checks this bound and returns ErrConfig if it does not hold.
	HeartbeatInterval time.Duration
	// MaxExtension caps how long after a receive a message may be kept
	// invisible. Up to 12 h (SQS's cap). Default 12 h.
	MaxExtension time.Duration
	// HandlerTimeout bounds one handler call (with NewBatch, one batch). At
	// the timeout the handler's ctx is cancelled with cause ErrHandlerTimeout
	// and the message fails at once with ErrHandlerTimeout (it is released
	// per OnFailure and its place freed), whatever the handler returns later.
	// A handler that ignores its ctx keeps its goroutine, and one of the
	// Concurrency workers, until it returns. 1 s to 12 h. Default 15 min.
	HandlerTimeout time.Duration
	// OnFailure is the failure policy. Default RetryWithBackoff.
	OnFailure FailurePolicy
	// RedeliveryBackoff gives RetryWithBackoff's delay for attempt
	// ApproximateReceiveCount − 1 (clamped to 0 to MaxExtension, and to
	// 12 h from the message's receive, the most SQS accepts; Stop means at
	// once). Default EqualJitter, 1 s base, 5 min cap.
	RedeliveryBackoff backoff.Strategy
	// ReceiveBackoff spaces receives after errors; waits shorter than 10 ms
	// are raised to 10 ms, and a strategy that never waits is refused.
	// Default FullJitter, 100 ms base, 10 s cap.
	ReceiveBackoff backoff.Strategy
	// DeleteLinger is how long a handled message may wait for others to
	// fill its delete batch of ten. A partial batch also goes at once when
	// no message is waiting or running (nothing else could join it). Up to
	// 1 s. Default 10 ms.
	DeleteLinger time.Duration
	// ShutdownTimeout is how long running handlers may finish after Run's
	// ctx is done. Then their ctx is cancelled, their messages are released
	// (not deleted, whatever the handlers return), and Run returns after at
	// most one more second, without waiting for a handler that ignores its
	// ctx or for an SQS call that has not answered (given up: its message
	// comes back). Up to 12 h. Default 30 s.
	ShutdownTimeout time.Duration
	// StopOnFirstFailure, on FIFO queues, handles every message as one
	// sequence and gives up all waiting messages at a failure. Default
	// false: only the failed message's group stops.
	StopOnFirstFailure bool
	// Middleware wraps the Handler, the first listed outermost (see
	// handler.Chain), inside the consumer's own layer: a panic or
	// runtime.Goexit anywhere in the chain fails the message, HandlerTimeout
	// bounds the whole chain, and its ctx carries the process span and the
	// producer's trace context. Default none. NewBatch refuses it: use
	// BatchMiddleware.
	Middleware []Middleware
	// BatchMiddleware wraps the BatchHandler of NewBatch, the first listed
	// outermost. Default none. New refuses it.
	BatchMiddleware []BatchMiddleware
	// TracerProvider, when set, records spans: "receive <queue>" (CLIENT)
	// per ReceiveMessage call, "process <queue>" (CONSUMER) per message from
	// its receipt until its outcome (the producer's child when a Propagator
	// extracts its trace context), one more per BatchHandler call, and
	// "delete <queue>" and "change_visibility <queue>" (CLIENT) per settle
	// call; SQS calls are made with the span's ctx, so the SDK's own spans
	// (sqs.Options.TracerProvider) nest under them. Default none: smithy-go's
	// interface, which OpenTelemetry plugs into with smithy-go's
	// smithyoteltracing.Adapt.
	TracerProvider tracing.TracerProvider
	// MeterProvider, when set, records messages received, handled, failed,
	// deleted, delete failures, released, extended and lease lost; handler
	// duration; messages in flight; message age at receive (now −
	// SentTimestamp, the lag to alert on); and SQS call durations (see the
	// package doc for names and attributes). Default none: smithy-go's
	// interface (smithyotelmetrics.Adapt for OpenTelemetry).
	MeterProvider metrics.MeterProvider
	// Propagator, when set, extracts each message's trace context (its
	// AWSTraceHeader, and String attributes such as traceparent) into its
	// ctx: its handler's, its hooks' and its process span's parent. Default
	// none.
	Propagator Propagator
	// Logger receives failures and lifecycle events, never bodies. Default
	// silent.
	Logger *slog.Logger
	// Hooks are called for each message event. Default none.
	Hooks Hooks
	// ParkingQueue is the URL of the queue an Escalate outcome parks its
	// message on (handler.Escalate, handler.Permanent, a JSON body that does
	// not decode): the operator queue, the one package replay escalates to.
	// The message goes there with its reason and provenance in replay's
	// metadata format, and is deleted only once that send succeeded (see
	// Parker). It must not be the consumed queue, and the client must also
	// send (SendMessageBatch). Default none: an escalated message fails like
	// any other, its reason logged, and SQS's redrive policy moves it after
	// maxReceiveCount.
	ParkingQueue string
	// RateLimit caps the messages received per second (0, the default: no
	// cap): a receive asks for no more messages than the budget holds, and
	// every message it asks for counts. Bursts are at most one receive, or a
	// tenth of a second's worth when that is more. A finite number ≥ 0.
	RateLimit float64
}

// configError builds an error matching ErrConfig.
func configError(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...)
}

// isNil reports whether v is nil or an interface holding a nil pointer,
// func, map, chan or slice (a typed nil, such as (*sqs.Client)(nil)).
func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Func, reflect.Map, reflect.Chan, reflect.Slice, reflect.Interface, reflect.UnsafePointer:
		return rv.IsNil()
	}
	return false
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
	o.ShutdownTimeout = cmp.Or(o.ShutdownTimeout, 30*time.Second)
	switch {
	case o.DeleteLinger < 0 || o.DeleteLinger > time.Second:
		return configError("DeleteLinger %v must be at most 1s", o.DeleteLinger)
	case o.ShutdownTimeout < 0 || o.ShutdownTimeout > sqsrule.MaxVisibility:
		return configError("ShutdownTimeout %v must be at most 12h", o.ShutdownTimeout)
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
	if isNil(s) {
		return configError("%s is nil", name)
	}
	if err := backoff.Validate(s); err != nil {
		return configError("%s: %v", name, err)
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
