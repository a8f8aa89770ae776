package consumer

import (
	"context"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/sqskit/sqskit/internal/sqsrule"
)

// rateBurstWindow sizes RateLimit's bucket when one receive's worth is less
// than the rate allows in this time: at a high rate, enough receives may be
// in flight at once to keep up with it at up to this latency per call.
const rateBurstWindow = 100 * time.Millisecond

// limiter is RateLimit's token bucket on messages received. A receive asks
// for at most size messages, takes their tokens before it starts, and
// starts only while the receives under way, which may all come back at the
// same instant after a long poll, ask for no more than the bucket holds.
type limiter struct {
	lim  *rate.Limiter
	size int // a second's worth, 1 to 10: one receive is never more

	mu      sync.Mutex
	asked   int           // messages the receives under way asked for
	changed chan struct{} // closed, and replaced, when a receive ends
}

// newLimiter is RateLimit's limiter, nil when there is no cap.
func newLimiter(perSecond float64) *limiter {
	if perSecond <= 0 {
		return nil
	}
	size := min(max(int(math.Min(perSecond, sqsrule.MaxReceiveMessages)), 1), sqsrule.MaxReceiveMessages)
	burst := max(size, int(math.Min(math.Ceil(perSecond*rateBurstWindow.Seconds()), maxInFlightLimit)))
	return &limiter{lim: rate.NewLimiter(rate.Limit(perSecond), burst), size: size, changed: make(chan struct{})}
}

// pace waits until the rate allows a receive and returns how many of the n
// messages it may ask for: the tokens must cover them and what every
// receive under way may still bring; the messages take their tokens when
// they come (done). It reports false when ctx ended first.
func (r *run) pace(ctx context.Context, n int) (int, bool) {
	l := r.c.limiter
	n = min(n, l.size)
	for {
		r.mu.Lock()
		ended := r.pollDone
		r.mu.Unlock()
		if ended { // drained: no more receives
			return 0, false
		}
		l.mu.Lock()
		now := time.Now()
		need := l.asked + n
		var wait time.Duration
		var changed chan struct{}
		switch tokens := l.lim.TokensAt(now); {
		case need > l.lim.Burst():
			changed = l.changed // until a receive under way ends
		case tokens >= float64(need):
			l.asked = need
			l.mu.Unlock()
			return n, true
		default:
			wait = time.Duration((float64(need) - tokens) / float64(l.lim.Limit()) * float64(time.Second))
			changed = l.changed
		}
		l.mu.Unlock()
		var timer *time.Timer
		var timeout <-chan time.Time
		if wait > 0 {
			timer = time.NewTimer(min(wait, maxRateWait))
			timeout = timer.C
		}
		select {
		case <-changed:
		case <-timeout:
		case <-ctx.Done():
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return 0, false
		}
	}
}

// maxRateWait bounds one wait for tokens: a rate so low that the wait
// overflows time.Duration waits a century, and looks again.
const maxRateWait = 100 * 365 * 24 * time.Hour

// wake makes every receive waiting in pace look again.
func (l *limiter) wake() {
	l.mu.Lock()
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
}

// done ends a paced receive that asked for n and brought k messages, which
// take their tokens now.
func (l *limiter) done(n, k int) {
	l.mu.Lock()
	l.asked -= n
	if k > 0 {
		l.lim.ReserveN(time.Now(), k)
	}
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
}
