package consumer

import (
	"errors"
	"time"

	"github.com/sqskit/sqskit/handler"
)

func retryDelay(err error) (time.Duration, bool) {
	var r *handler.RetryAfterError
	if errors.As(err, &r) {
		return r.After, true
	}
	return 0, false
}

func panicked(v any, stack []byte) error { return &handler.PanicError{Value: v, Stack: stack} }

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
