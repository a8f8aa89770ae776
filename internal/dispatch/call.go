package dispatch

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
)

// Invoke runs h, turning a panic into that message's failure through
// panicked (given the value and the stack), and so is an error returned
// that cannot be read (see readable). A runtime.Goexit is not stopped:
// callers detect it with a deferred check.
func Invoke[M any](ctx context.Context, h func(context.Context, M) error, m M, panicked func(v any, stack []byte) error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = panicked(v, debug.Stack())
		}
	}()
	return readable(h(ctx, m), panicked)
}

// InvokeBatch runs a batch handler and returns one result per message: a
// missing result fails its message with noResult, a panic fails them all,
// a result that cannot be read (see readable) fails its message.
func InvokeBatch[M any](ctx context.Context, h func(context.Context, []M) []error, msgs []M, panicked func(v any, stack []byte) error, noResult error) []error {
	errs := make([]error, len(msgs))
	results, p := func() (results []error, p error) {
		defer func() {
			if v := recover(); v != nil {
				p = panicked(v, debug.Stack())
			}
		}()
		return h(ctx, msgs), nil
	}()
	for i := range errs {
		switch {
		case p != nil:
			errs[i] = p
		case i < len(results):
			errs[i] = readable(results[i], panicked)
		default:
			errs[i] = noResult
		}
	}
	return errs
}

// readable returns err, or, when reading it panics, the failure panicked
// makes of that panic. The runtime reads a handler's error on its own
// goroutines (Error to log it, errors.Is and errors.As through its Unwrap,
// Is and As methods to classify it), so an error whose methods panic — a
// typed nil *T whose Error or Unwrap dereferences it, the usual way Go
// code returns a broken error — would crash the process there. Such an
// error is the handler's own code panicking: its message fails as a panic.
func readable(err error, panicked func(v any, stack []byte) error) (out error) {
	if err == nil {
		return nil
	}
	defer func() {
		if v := recover(); v != nil {
			out = panicked(fmt.Sprintf("the %T returned as the error panics when read: %v", err, v), debug.Stack())
		}
	}()
	_ = err.Error()
	walk(err, 0)
	return err
}

// walk calls on err and every error it wraps what errors.Is and errors.As
// call: their Is, As and Unwrap methods (without errors.As's reflection,
// which a lean Lambda binary does without). It stops at a depth no real
// chain reaches, where errors.Is would loop on a cycle.
func walk(err error, depth int) {
	for ; err != nil && depth < 100; depth++ {
		if x, ok := err.(interface{ Is(error) bool }); ok {
			x.Is(errProbe)
		}
		if x, ok := err.(interface{ As(any) bool }); ok {
			var target *probeError
			x.As(&target)
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e, depth+1)
			}
			return
		default:
			return
		}
	}
}

// errProbe and probeError are what walk asks Is and As methods about;
// nothing ever returns them.
var errProbe = errors.New("dispatch: probe")

type probeError struct{}

func (*probeError) Error() string { return "dispatch: probe" }

// HoldBack applies FIFO order to a batch's results (errs, one per message,
// whose groups group gives): after a failure, the later messages of its
// group (with stopAll, every later message) fail with heldBack even if the
// handler reported them done.
func HoldBack(errs []error, group func(i int) string, stopAll bool, heldBack error) {
	failedGroups := map[string]bool{}
	anyFailed := false
	for i := range errs {
		g := group(i)
		if errs[i] == nil && (failedGroups[g] || (stopAll && anyFailed)) {
			errs[i] = heldBack
		}
		if errs[i] != nil {
			failedGroups[g] = true
			anyFailed = true
		}
	}
}
