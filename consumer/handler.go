package consumer

import (
	"context"
	"errors"
	"time"

	"github.com/sqskit/sqskit/handler"
)

// The handler contract is package handler's, shared with handler.NewLambda:
// these aliases let poller code keep writing consumer.Handler.
type (
	// Handler handles one message (handler.Handler): nil means done and
	// deleted, an error means it failed and comes back.
	Handler = handler.Handler
	// BatchHandler handles a receive's messages at once and returns one
	// result per message (handler.BatchHandler).
	BatchHandler = handler.BatchHandler
	// Middleware wraps a Handler (handler.Middleware).
	Middleware = handler.Middleware
	// BatchMiddleware wraps a BatchHandler (handler.BatchMiddleware).
	BatchMiddleware = handler.BatchMiddleware
	// PanicError is the failure of a message whose handler panicked.
	PanicError = handler.PanicError
	// RetryAfterError is what RetryAfter returns.
	RetryAfterError = handler.RetryAfterError
	// Carrier reads and writes a message's trace context (handler.Carrier).
	Carrier = handler.Carrier
	// Propagator moves trace context between a ctx and a message
	// (handler.Propagator).
	Propagator = handler.Propagator
)

// Failures a handler's message can have, from package handler (see there).
var (
	ErrNotStarted     = handler.ErrNotStarted
	ErrHandlerTimeout = handler.ErrHandlerTimeout
	ErrHandlerExited  = handler.ErrHandlerExited
	ErrHeldBack       = handler.ErrHeldBack
	ErrNoResult       = handler.ErrNoResult
)

// JSON adapts a handler of a decoded body (handler.JSON). A body that does
// not decode into T fails the message with the decode error.
func JSON[T any](fn func(ctx context.Context, v T, m *Message) error) Handler {
	return handler.JSON(fn)
}

// RetryAfter wraps err so the message becomes visible again after d (0 to
// 12 hours), overriding the failure policy for this message. SQS keeps a
// message invisible at most 12 h from its receive: the consumer asks for no
// more than that (and MaxExtension) allows.
func RetryAfter(err error, d time.Duration) error { return handler.RetryAfter(err, d) }

func retryDelay(err error) (time.Duration, bool) {
	var r *RetryAfterError
	if errors.As(err, &r) {
		return r.After, true
	}
	return 0, false
}

func panicked(v any, stack []byte) error { return &PanicError{Value: v, Stack: stack} }

// errorType names a failure for error.type: the consumer's own first, then
// handler.ErrorType.
func errorType(err error) string {
	switch {
	case errors.Is(err, ErrLeaseLost):
		return "lease_lost"
	case errors.Is(err, ErrShutdownTimeout):
		return "shutdown_timeout"
	}
	return handler.ErrorType(err)
}
