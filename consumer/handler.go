package consumer

import (
	"errors"
	"time"

	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/internal/telemetry"
)

func retryDelay(err error) (time.Duration, bool) {
	var r *handler.RetryAfterError
	if errors.As(err, &r) {
		return r.After, true
	}
	return 0, false
}

func panicked(v any, stack []byte) error { return &handler.PanicError{Value: v, Stack: stack} }

// errorType names a failure for error.type: its own sentinels and the
// handler's name themselves (telemetry.Failure); a panic is a PanicError.
func errorType(err error) string {
	if telemetry.Walk(err, func(e error) bool { _, ok := e.(*handler.PanicError); return ok }) {
		return telemetry.ErrorTypePanic
	}
	return telemetry.FailureType(err)
}
