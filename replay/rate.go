package replay

import (
	"context"
	"math"
	"sync"
	"time"
)

// burstWindow sizes the pacer's bucket when a receive's worth is less than
// the rate allows in this time: at a high rate, enough receives may be in
// flight at once to keep up with it at up to this latency per call.
const burstWindow = 100 * time.Millisecond

// maxSpan bounds a pacing span: a rate so low that a message's span
// overflows time.Duration waits this long (a century) instead.
const maxSpan = 100 * 365 * 24 * time.Hour

// pacer is a token bucket on the messages taken from the DLQ. Tokens come
// at rate per second, up to burst; a receive of up to n messages starts only
// while the tokens cover its n and what every receive under way may still
// bring, and the messages it brings take their tokens as they come. So in
// any t seconds at most rate·t + burst messages are taken, however many
// batches are in flight, and a message never waits after its receive: its
// pass starts at once, well within its visibility timeout. A nil pacer
// paces nothing.
type pacer struct {
	rate  float64 // messages per second
	burst int     // the bucket: one receive, or burstWindow's worth when that is more

	mu      sync.Mutex
	empty   time.Time     // the bucket holds the tokens that came since, at most burst
	pending int           // messages receives under way may still bring
	changed chan struct{} // closed, and replaced, when a receive ends
}

func newPacer(rate float64, receive int) *pacer {
	if rate <= 0 {
		return nil
	}
	burst := max(receive, int(min(rate*burstWindow.Seconds(), MaxConcurrency*maxReceive)))
	return &pacer{rate: rate, burst: burst, changed: make(chan struct{})}
}

// span is how long n tokens take to come, at most maxSpan.
func (p *pacer) span(n int) time.Duration {
	s := float64(n) / p.rate * float64(time.Second)
	if s >= float64(maxSpan) || math.IsNaN(s) {
		return maxSpan
	}
	return time.Duration(s)
}

// admit waits until a receive of up to n messages (at most burst) may
// start, and counts it as under way. It reports false when ctx ended first.
func (p *pacer) admit(ctx context.Context, n int) bool {
	if p == nil {
		return ctx.Err() == nil
	}
	n = min(n, p.burst)
	for {
		p.mu.Lock()
		now := time.Now()
		if full := p.span(p.burst); now.Sub(p.empty) > full {
			p.empty = now.Add(-full)
		}
		var wait time.Duration
		var changed chan struct{}
		if need := p.pending + n; need <= p.burst {
			wait = p.span(need) - now.Sub(p.empty)
			if wait <= 0 {
				p.pending += n
				p.mu.Unlock()
				return true
			}
		} else {
			changed = p.changed // until a receive under way ends
		}
		p.mu.Unlock()
		var timer *time.Timer
		var timeout <-chan time.Time
		if changed == nil {
			timer = time.NewTimer(wait)
			timeout = timer.C
		}
		select {
		case <-ctx.Done():
		case <-timeout:
		case <-changed:
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return false
		}
	}
}

// took ends an admitted receive of n that brought k messages: they take
// their tokens (k above n, a Lambda batch larger than the bucket, runs it
// into debt that later receives wait out).
func (p *pacer) took(n, k int) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pending -= min(n, p.burst)
	now := time.Now()
	if full := p.span(p.burst); now.Sub(p.empty) > full {
		p.empty = now.Add(-full)
	}
	p.empty = p.empty.Add(p.span(k))
	close(p.changed)
	p.changed = make(chan struct{})
}
