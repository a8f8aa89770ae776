package replay

import (
	"context"
	"sync"
	"time"

	"github.com/sqskit/sqskit/backoff"
)

// pacer spaces the messages taken from the DLQ so that no more than rate go
// per second, however many batches are in flight. A receive is admitted
// only once the schedule, counting the receives already under way, has
// caught up with now, so its messages wait at most about one batch's worth
// before they may go; then its messages are paced from the time they came.
// A nil pacer paces nothing.
type pacer struct {
	rate float64 // messages per second

	mu      sync.Mutex
	next    time.Time // when the next message may go
	pending int       // messages asked for by admitted receives, not yet paced
}

func newPacer(rate float64) *pacer {
	if rate <= 0 {
		return nil
	}
	return &pacer{rate: rate}
}

func (p *pacer) span(n int) time.Duration {
	return time.Duration(float64(n) / p.rate * float64(time.Second))
}

// admit waits until a receive of up to n messages may start.
func (p *pacer) admit(ctx context.Context, n int) bool {
	if p == nil {
		return ctx.Err() == nil
	}
	for {
		p.mu.Lock()
		now := time.Now()
		due := p.next.Add(p.span(p.pending))
		if !due.After(now) {
			p.pending += n
			p.mu.Unlock()
			return true
		}
		p.mu.Unlock()
		if !backoff.Sleep(ctx, due.Sub(now)) {
			return false
		}
	}
}

// pace accounts for the k messages an admitted receive of n brought, and
// waits until they may go. It reports false only when ctx ended while they
// had to wait.
func (p *pacer) pace(ctx context.Context, n, k int) bool {
	if p == nil {
		return true
	}
	p.mu.Lock()
	p.pending -= n
	now := time.Now()
	start := p.next
	if start.Before(now) {
		start = now
	}
	p.next = start.Add(p.span(k))
	p.mu.Unlock()
	if !start.After(now) {
		return true
	}
	return backoff.Sleep(ctx, start.Sub(now))
}
