// Package wait is the one way sqskit's loops pause between calls: a wait
// that ends early when its ctx does, and never leaves a timer behind.
package wait

import (
	"context"
	"time"
)

// Sleep waits d, or until ctx is done; it reports whether the full d
// passed. Its timer is stopped on every path.
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
