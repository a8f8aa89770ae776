package consumer

import (
	"context"
	"time"

	"github.com/sqskit/sqskit/handler"
)

// Hooks are optional callbacks, each told of one event after it happened.
// Each gets the message's ctx, the one its handler's ctx derives from: it
// carries the message's process span (when Options.TracerProvider is set)
// and the producer's trace context (when Options.Propagator is set).
// handler.Message bodies are the caller's to log or not.
//
// Hooks, like the handler.Propagator, TracerProvider, MeterProvider and the spans
// and instruments they make, are user code, trusted no more than handlers.
// One that panics or returns nil (a typed nil too) costs its own signal (a
// hook call, a span, a measurement, a message's trace context): it is
// counted in Stats.ExtensionFailures and logged once per extension through
// Options.Logger, never the process, a message, a lease or Run's shutdown
// bound. No user code runs under the consumer's locks: hooks, metrics and
// the ends of process spans are queued (room for 4 × MaxInFlight, within
// 256 to 4,096) and reported one at a time, in order, by a goroutine of
// Run's own. A hook that is slow or blocks delays only what is queued
// behind it; when the queue is full new signals are dropped and counted.
// Run reports what is queued before it returns, within its own bound
// (ShutdownTimeout + 1 s after ctx is done), then drops the rest and leaves
// a hook still running behind. A handler's ctx keeps Run's cancellation
// whatever ctx a tracer or handler.Propagator returns.
type Hooks struct {
	// Received: a message arrived.
	Received func(ctx context.Context, m *handler.Message)
	// Handled: the handler returned nil after took.
	Handled func(ctx context.Context, m *handler.Message, took time.Duration)
	// Failed: the message failed (handler error, panic, timeout, lease
	// lost, or not started).
	Failed func(ctx context.Context, m *handler.Message, err error)
	// Deleted: the message was deleted after success: SQS confirmed the
	// delete, and the answer came back before the message's visibility
	// lapsed.
	Deleted func(ctx context.Context, m *handler.Message)
	// DeleteFailed: the delete failed for good; SQS will deliver it again.
	DeleteFailed func(ctx context.Context, m *handler.Message, err error)
	// Extended: the heartbeat extended the message's visibility.
	Extended func(ctx context.Context, m *handler.Message, visibility time.Duration)
	// LeaseLost: the message's visibility could not be kept (handle invalid,
	// 12-hour cap); its handler's ctx was cancelled and it is not deleted.
	LeaseLost func(ctx context.Context, m *handler.Message, err error)
	// Released: a failed or unstarted message was made visible in visibleIn.
	Released func(ctx context.Context, m *handler.Message, visibleIn time.Duration)
	// Held: a handler's Hold outcome made the message invisible for d (not
	// a failure: Failed is not called).
	Held func(ctx context.Context, m *handler.Message, d time.Duration)
	// Parked: an Escalate outcome's message is on the parking queue and was
	// deleted from this one.
	Parked func(ctx context.Context, m *handler.Message, reason string)
}

// set reports whether any hook is set.
func (h *Hooks) set() bool {
	return h.Received != nil || h.Handled != nil || h.Failed != nil || h.Deleted != nil || h.DeleteFailed != nil ||
		h.Extended != nil || h.LeaseLost != nil || h.Released != nil || h.Held != nil || h.Parked != nil
}
