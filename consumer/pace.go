package consumer

import "time"

// A window of calls in flight (internal/throttle) cannot keep calls under a
// quota that is lower than one call per round trip: at 30 calls a second
// and 10 ms per call, a single call in flight is already 100 calls a
// second, and SQS throttles most of them. So once an action is
// throttled its calls are also paced: spaced to a rate that starts at
// pacerDecrease of what SQS accepted over the last second, is cut by
// pacerDecrease at each further throttle (once per round trip, as the
// window is) and grows back by pacerGrowth of the cut rate per second, so
// that crossing the quota again costs a throttled call every few seconds.
const (
	// pacerDecrease is the rate left after a throttle: the bucket behind
	// the quota is empty and must refill, but a deeper cut wastes quota
	// (the mean rate over a cycle is about (1 + pacerDecrease) ÷ 2 of the
	// quota).
	pacerDecrease = 0.95
	// pacerGrowth is the rate added per second after a cut, as a fraction
	// of the cut rate: back at the quota in about 5 s, some 150 calls at
	// 30 a second, with one or two of them throttled.
	pacerGrowth = 0.02
	// pacerSpan is how far back accepted calls are counted.
	pacerSpan = time.Second
	// pacerMinSamples is the fewest accepted calls that make an estimate.
	pacerMinSamples = 4
	// pacerMinRate keeps a rate from falling to nothing (SQS's lowest
	// quota is far above it).
	pacerMinRate = 1.0
	// pacerIdle: once the rate has grown to this multiple of the cut rate
	// without a throttle, pacing stops until the next one.
	pacerIdle = 4
)

// pacer spaces one action's calls after throttling. Its owner guards it.
// The zero pacer does not pace.
type pacer struct {
	oks   [64]time.Time // ends of recent accepted calls, a ring
	head  int
	rate  float64   // calls a second at cutAt; 0: not pacing
	cutAt time.Time // the last cut
	next  time.Time // no call starts before it
}

// ok records a call SQS accepted, answered at now.
func (p *pacer) ok(now time.Time) {
	p.oks[p.head] = now
	p.head = (p.head + 1) % len(p.oks)
}

// accepted is the rate of calls accepted in the pacerSpan before now, and
// whether there were enough to tell.
func (p *pacer) accepted(now time.Time) (float64, bool) {
	k, oldest := 0, now
	for _, t := range p.oks {
		if !t.IsZero() && now.Sub(t) < pacerSpan {
			k++
			if t.Before(oldest) {
				oldest = t
			}
		}
	}
	span := now.Sub(oldest)
	if k < pacerMinSamples || span <= 0 {
		return 0, false
	}
	return float64(k-1) / span.Seconds(), true
}

// cut records a throttle at now that narrowed the action's window. Paced
// calls were throttled: the rate is above the quota, and drops by
// pacerDecrease. Unpaced ones start pacing at pacerDecrease of the rate
// SQS accepted (over the quota, its refill rate and the bucket's burst).
func (p *pacer) cut(now time.Time) {
	rate := p.limit(now)
	if rate == 0 {
		var ok bool
		if rate, ok = p.accepted(now); !ok {
			return // too little to tell: the window alone slows down
		}
	}
	p.rate, p.cutAt = max(rate*pacerDecrease, pacerMinRate), now
}

// limit is the rate allowed at now, 0 when not pacing.
func (p *pacer) limit(now time.Time) float64 {
	if p.rate == 0 {
		return 0
	}
	grown := p.rate * (1 + pacerGrowth*now.Sub(p.cutAt).Seconds())
	if grown >= pacerIdle*p.rate {
		return 0
	}
	return grown
}

// wait is how long after at the next call may start.
func (p *pacer) wait(at time.Time) time.Duration {
	if p.limit(at) == 0 {
		return 0
	}
	return max(p.next.Sub(at), 0)
}

// take books a call starting at at.
func (p *pacer) take(at time.Time) {
	lim := p.limit(at)
	if lim == 0 {
		return
	}
	p.next = maxTime(p.next, at).Add(time.Duration(float64(time.Second) / lim))
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
