package consumer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"runtime/debug"
	"time"
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

// errNoResult fails a message its BatchHandler gave no result for.
var errNoResult = errors.New("consumer: the batch handler returned no result for this message")

// JSON adapts a handler of a decoded body. A body that does not decode into
// T fails the message with the decode error.
func JSON[T any](fn func(ctx context.Context, v T, m *Message) error) Handler {
	return func(ctx context.Context, m *Message) error {
		var v T
		if err := json.Unmarshal([]byte(m.Body), &v); err != nil {
			return fmt.Errorf("consumer: decode body: %w", err)
		}
		return fn(ctx, v, m)
	}
}

// RetryAfter wraps err so the message becomes visible again after d (0 to
// 12 hours), overriding the failure policy for this message.
func RetryAfter(err error, d time.Duration) error {
	return &retryAfterError{err: err, after: d}
}

type retryAfterError struct {
	err   error
	after time.Duration
}

func (e *retryAfterError) Error() string {
	return fmt.Sprintf("%v (retry after %v)", e.err, e.after)
}

func (e *retryAfterError) Unwrap() error { return e.err }

func retryDelay(err error) (time.Duration, bool) {
	var r *retryAfterError
	if errors.As(err, &r) {
		return r.after, true
	}
	return 0, false
}

// PanicError is the failure of a message whose handler panicked.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("consumer: handler panicked: %v", e.Value) }

// ErrNotStarted is the failure of a message that was never handed to the
// handler: an earlier message of its FIFO group failed, the batch stopped at
// a failure, the invocation's deadline was near or it ended, or the consumer
// shut down.
var ErrNotStarted = errors.New("consumer: message not handled")

// ErrHandlerTimeout is the failure of a message whose handler ran past
// Options.HandlerTimeout, and the cause of its ctx's cancellation.
var ErrHandlerTimeout = errors.New("consumer: handler timed out")

// ErrHandlerExited is the failure of a message whose handler called
// runtime.Goexit (as t.FailNow does) instead of returning.
var ErrHandlerExited = errors.New("consumer: handler exited without returning (runtime.Goexit)")

// ErrHeldBack is the failure of a message a BatchHandler reported done but
// that comes after a failed message of its FIFO group in the same batch
// (with StopOnFirstFailure, after any failed message): deleting it would let
// it overtake the failed one, so it is delivered again.
var ErrHeldBack = errors.New("consumer: not deleted after an earlier failure in its FIFO group")

// invoke runs h on its own copy of m, turning a panic into that message's
// failure. A runtime.Goexit is not stopped: callers detect it with a
// deferred check.
func invoke(ctx context.Context, h Handler, m *Message) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return vetted(h(ctx, handlerCopy(m)))
}

// handlerCopy is the Message a handler gets: its own, so that what it does
// to it cannot change the consumer's record of the message, whose ID,
// receipt handle and FIFO group decide what is deleted, released and
// reported failed. Message attributes are shared: the consumer never reads
// them back.
func handlerCopy(m *Message) *Message {
	c := *m
	c.Attributes = maps.Clone(m.Attributes)
	return &c
}

// vetted returns a handler's error, or a *PanicError if the error panics
// when the consumer reads it (its Error method, or Unwrap while looking
// for a RetryAfter): a nil *T returned as an error is a common mistake, and
// it must fail its message, not crash the consumer where the error is
// logged.
func vetted(err error) (out error) {
	if err == nil {
		return nil
	}
	defer func() {
		if v := recover(); v != nil {
			out = &PanicError{Value: fmt.Sprintf("the handler's error (%T) panicked: %v", err, v), Stack: debug.Stack()}
		}
	}()
	_ = err.Error()
	retryDelay(err)
	return err
}

// invokeBatch runs a batch handler and returns one result per message: a
// missing result fails its message, a panic fails them all.
func invokeBatch(ctx context.Context, h BatchHandler, msgs []*Message) []error {
	errs := make([]error, len(msgs))
	results, p := func() (results []error, p *PanicError) {
		defer func() {
			if v := recover(); v != nil {
				p = &PanicError{Value: v, Stack: debug.Stack()}
			}
		}()
		copies := make([]*Message, len(msgs))
		for i, m := range msgs {
			copies[i] = handlerCopy(m)
		}
		return h(ctx, copies), nil
	}()
	for i := range errs {
		switch {
		case p != nil:
			errs[i] = p
		case i < len(results):
			errs[i] = vetted(results[i])
		default:
			errs[i] = errNoResult
		}
	}
	return errs
}

// holdBackAfterFailures applies FIFO order to a batch's results: after a
// failure, the later messages of its group (with stopAll, every later
// message) fail with ErrHeldBack even if the handler reported them done.
func holdBackAfterFailures(msgs []*Message, errs []error, stopAll bool) {
	failedGroups := map[string]bool{}
	anyFailed := false
	for i, m := range msgs {
		g := m.GroupID()
		if errs[i] == nil && (failedGroups[g] || (stopAll && anyFailed)) {
			errs[i] = ErrHeldBack
		}
		if errs[i] != nil {
			failedGroups[g] = true
			anyFailed = true
		}
	}
}
