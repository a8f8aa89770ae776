package handler

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/sqskit/sqskit/internal/telemetry"
)

// Handler handles one message. Returning nil means the message is done and
// may be deleted; an error means it failed and SQS should deliver it again
// (after the failure policy's delay, or a RetryAfter's). Handlers must be
// safe for concurrent use: messages run in parallel up to the concurrency
// limit (one at a time per FIFO group).
type Handler func(ctx context.Context, m *Message) error

// BatchHandler handles a whole batch and returns one result per message, in
// the same order: nil for success. A result missing (a short slice) counts
// as a failure. Used where messages are handled together (a bulk write, a
// replay): the per-message outcome still decides what is deleted.
type BatchHandler func(ctx context.Context, msgs []*Message) []error

// ErrNoResult is the failure of a message its BatchHandler returned no
// result for (a short slice).
var ErrNoResult = telemetry.NewFailure("handler: the batch handler returned no result for this message", "no_result")

// JSON adapts a handler of a decoded body. A body that does not decode into
// T is permanent: its outcome is Escalate(ReasonDecode, …) matching
// ErrDecode, so it is parked at once where a parking queue is set.
func JSON[T any](fn func(ctx context.Context, v T, m *Message) error) Handler {
	return func(ctx context.Context, m *Message) error {
		var v T
		if err := json.Unmarshal([]byte(m.Body), &v); err != nil {
			return Escalate(ReasonDecode, fmt.Errorf("%w: %w", ErrDecode, err))
		}
		return fn(ctx, v, m)
	}
}

// RetryAfter wraps err so the message becomes visible again after d (0 to
// 12 hours), overriding the failure policy for this message. SQS keeps a
// message invisible at most 12 h from its receive, so the consumer asks for
// no more than what is left of that. In Lambda,
// where the event source mapping owns visibility, it is an ordinary
// failure.
func RetryAfter(err error, d time.Duration) error {
	return &RetryAfterError{Err: err, After: d}
}

// RetryAfterError is the error RetryAfter returns; errors.As finds it
// through wrapping.
type RetryAfterError struct {
	Err   error
	After time.Duration
}

func (e *RetryAfterError) Error() string {
	return fmt.Sprintf("%v (retry after %v)", e.Err, e.After)
}

func (e *RetryAfterError) Unwrap() error { return e.Err }

// PanicError is the failure of a message whose handler panicked.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("handler: handler panicked: %v", e.Value) }

// panicked is the failure of a handler that panicked with v.
func panicked(v any, stack []byte) error { return &PanicError{Value: v, Stack: stack} }

// ErrNotStarted is the failure of a message that was never handed to the
// handler: an earlier message of its FIFO group failed, the batch stopped at
// a failure, the invocation's deadline was near or it ended, or the consumer
// shut down.
var ErrNotStarted = telemetry.NewFailure("handler: message not handled", "not_started")

// ErrHandlerTimeout is the failure of a message whose handler ran past its
// time: the consumer's HandlerTimeout, or the Timeout middleware's. It is
// also the cause of the handler ctx's cancellation (context.Cause).
var ErrHandlerTimeout = telemetry.NewFailure("handler: handler timed out", "timeout")

// ErrHandlerExited is the failure of a message whose handler called
// runtime.Goexit (as t.FailNow does) instead of returning.
var ErrHandlerExited = telemetry.NewFailure("handler: handler exited without returning (runtime.Goexit)", "exited")

// ErrHeldBack is the failure of a message a BatchHandler reported done but
// that comes after a failed message of its FIFO group in the same batch
// (with StopOnFirstFailure, after any failed message): deleting it would let
// it overtake the failed one, so it is delivered again.
var ErrHeldBack = telemetry.NewFailure("handler: not deleted after an earlier failure in its FIFO group", "held_back")

// errorType names a message's failure for the error.type attribute of spans
// and metrics: "panic", "timeout", "exited", "not_started", "held_back",
// "no_result", or "handler_error" for an error the handler returned (an
// Escalate outcome that was not parked included). Package consumer adds
// its own ("lease_lost", "shutdown_timeout") the same way.
func errorType(err error) string {
	if asPanic(err) != nil {
		return telemetry.ErrorTypePanic
	}
	return telemetry.FailureType(err)
}
