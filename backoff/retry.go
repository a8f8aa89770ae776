package backoff

import (
	"context"
	"errors"
	"time"

	"github.com/sqskit/sqskit/internal/dispatch"
	"github.com/sqskit/sqskit/internal/wait"
)

// PermanentError marks an error that must not be retried.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// Permanent wraps err so Retry returns it at once. A nil err stays nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &PermanentError{Err: err}
}

// RetryOptions configure Retry.
type RetryOptions struct {
	// Notify, when set, is called before each wait with the error and the
	// delay.
	Notify func(err error, d time.Duration)
}

// Retry calls op until it succeeds, returns a Permanent error, the strategy
// says Stop, or ctx is done. It returns nil, the permanent error unwrapped,
// the last error, or that error joined with ctx's. Delays come from
// s.DelayFor when s is an ErrorStrategy. A strategy with a Success() method
// (Budgeted) is told about success. Timers are stopped on every path.
//
// A nil strategy or op, or a strategy that Validate refuses, is reported as
// a *ConfigError before op is called; a nil option function is skipped. Waits run on the time package's
// clock, so tests drive them with testing/synctest.
func Retry(ctx context.Context, s Strategy, op func(context.Context) error, optFns ...func(*RetryOptions)) error {
	var o RetryOptions
	for _, fn := range optFns {
		if fn != nil { // an option left unset by a condition
			fn(&o)
		}
	}
	if dispatch.IsNil(s) {
		return &ConfigError{Strategy: "Retry", Field: "strategy", Reason: "is nil"}
	}
	if op == nil {
		return &ConfigError{Strategy: "Retry", Field: "op", Reason: "is nil"}
	}
	if err := Validate(s); err != nil {
		return err
	}
	es, errorAware := s.(ErrorStrategy)
	var prev time.Duration
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := op(ctx)
		if err == nil {
			if ok, has := s.(interface{ Success() }); has {
				ok.Success()
			}
			return nil
		}
		var perm *PermanentError
		if errors.As(err, &perm) {
			return perm.Err
		}
		var d time.Duration
		if errorAware {
			d = es.DelayFor(attempt, prev, err)
		} else {
			d = s.Delay(attempt, prev)
		}
		if d == Stop {
			return err
		}
		prev = d
		if o.Notify != nil {
			o.Notify(err, d)
		}
		if !wait.Sleep(ctx, d) {
			return errors.Join(err, ctx.Err())
		}
	}
}
