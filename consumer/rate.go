package consumer

import (
	"context"
	"math"
	"time"

	"golang.org/x/time/rate"

	"github.com/sqskit/sqskit/internal/sqsrule"
)

// rateBurstWindow sizes RateLimit's bucket when one receive's worth is less
// than the rate allows in this time: at a high rate, enough receives may be
// in flight at once to keep up with it at up to this latency per call.
const rateBurstWindow = 100 * time.Millisecond

// newLimiter is RateLimit's token bucket, nil when there is no cap.
func newLimiter(perSecond float64) *rate.Limiter {
	if perSecond <= 0 {
		return nil
	}
	burst := max(sqsrule.MaxReceiveMessages, int(math.Min(math.Ceil(perSecond*rateBurstWindow.Seconds()), maxInFlightLimit)))
	return rate.NewLimiter(rate.Limit(perSecond), burst)
}

// pace waits until the rate allows a receive and returns how many of the n
// messages it may ask for: what the bucket holds now, at least one. It
// reports false when ctx ended first.
func (r *run) pace(ctx context.Context, n int) (int, bool) {
	lim := r.c.limiter
	now := time.Now()
	k := min(n, max(1, int(lim.TokensAt(now))))
	res := lim.ReserveN(now, k)
	if !res.OK() { // cannot happen: k ≤ 10 ≤ burst
		return 0, false
	}
	d := res.DelayFrom(now)
	if d <= 0 {
		return k, true
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return k, true
	case <-ctx.Done():
		res.Cancel()
		return 0, false
	}
}
