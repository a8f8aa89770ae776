package dispatch

import (
	"context"
	"runtime/debug"
)

// Invoke runs h, turning a panic into that message's failure through
// panicked (given the value and the stack). A runtime.Goexit is not
// stopped: callers detect it with a deferred check.
func Invoke[M any](ctx context.Context, h func(context.Context, M) error, m M, panicked func(v any, stack []byte) error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = panicked(v, debug.Stack())
		}
	}()
	return h(ctx, m)
}

// InvokeBatch runs a batch handler and returns one result per message: a
// missing result fails its message with noResult, a panic fails them all.
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
			errs[i] = results[i]
		default:
			errs[i] = noResult
		}
	}
	return errs
}

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
