package consumer

import (
	"context"
	"time"
)

// Hooks are optional callbacks, called synchronously on the goroutine where
// the event happens: keep them fast, and safe for concurrent use. Each gets
// the message's ctx, the one its handler's ctx derives from: it carries
// the message's process span (when Options.TracerProvider is set) and the
// producer's trace context (when Options.Propagator is set). Message bodies
// are the caller's to log or not.
type Hooks struct {
	// Received: a message arrived.
	Received func(ctx context.Context, m *Message)
	// Handled: the handler returned nil after took.
	Handled func(ctx context.Context, m *Message, took time.Duration)
	// Failed: the message failed (handler error, panic, timeout, lease
	// lost, or not started).
	Failed func(ctx context.Context, m *Message, err error)
	// Deleted: the message was deleted after success: SQS confirmed the
	// delete, and the answer came back before the message's visibility
	// lapsed.
	Deleted func(ctx context.Context, m *Message)
	// DeleteFailed: the delete failed for good; SQS will deliver it again.
	DeleteFailed func(ctx context.Context, m *Message, err error)
	// Extended: the heartbeat extended the message's visibility.
	Extended func(ctx context.Context, m *Message, visibility time.Duration)
	// LeaseLost: the message's visibility could not be kept (handle invalid,
	// 12-hour cap); its handler's ctx was cancelled and it is not deleted.
	LeaseLost func(ctx context.Context, m *Message, err error)
	// Released: a failed or unstarted message was made visible in visibleIn.
	Released func(ctx context.Context, m *Message, visibleIn time.Duration)
	// Held: a handler's Hold outcome made the message invisible for d (not
	// a failure: Failed is not called).
	Held func(ctx context.Context, m *Message, d time.Duration)
	// Parked: an Escalate outcome's message is on the parking queue and was
	// deleted from this one.
	Parked func(ctx context.Context, m *Message, reason string)
}
