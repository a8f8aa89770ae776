package consumer

import (
	"context"
	"fmt"
)

// Drain receives and handles messages until a receive comes back empty
// after its long poll (Options.WaitTime), then stops receiving and returns
// once every message it holds is settled: handled and deleted, held,
// parked or released. It returns nil when the queue was drained, ctx's
// error when ctx ended first (Run's shutdown then applies), or the error
// that ends Run. A one-off job (a backfill, a replay pass, a test) calls
// Drain; a service calls Run.
func (c *Consumer) Drain(ctx context.Context) error {
	if err := c.run(ctx, true); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("consumer: drain: %w", err)
	}
	return nil
}

// signalSettled wakes a Drain waiting for the last messages to settle.
func (r *run) signalSettled() {
	if r.settledSignal == nil {
		return
	}
	select {
	case r.settledSignal <- struct{}{}:
	default:
	}
}

// awaitSettled waits, once receiving has ended, until no held message
// waits, runs or parks, or until ctx is done.
func (r *run) awaitSettled(ctx context.Context) {
	for {
		if r.allSettled() {
			return
		}
		select {
		case <-r.settledSignal:
		case <-ctx.Done():
			return
		}
	}
}

func (r *run) allSettled() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.reserved > 0 {
		return false
	}
	for _, t := range r.tracked {
		if t.state != stateDeleting {
			return false
		}
	}
	return true
}
