package backoff

import (
	"time"

	"github.com/sqskit/sqskit/internal/dispatch"
)

// BackOff is cenkalti/backoff's interface (v4 and v5 alike): NextBackOff
// returns the next delay or Stop, Reset starts over. An *Iterator satisfies
// it, so every strategy here plugs into cenkalti's Retry; and any cenkalti
// BackOff satisfies it, so it can drive sqskit's loops.
type BackOff interface {
	NextBackOff() time.Duration
	Reset()
}

// Iterator walks a Strategy one retry at a time, remembering the attempt and
// the previous delay. It is not safe for concurrent use: give each retry loop
// its own (they are cheap; the Strategy can be shared).
type Iterator struct {
	s       Strategy
	attempt int
	prev    time.Duration

	// maxElapsed, when positive, stops the iterator once this much waiting
	// time (elapsed minus reported work) has passed since the last Reset.
	maxElapsed time.Duration
	now        func() time.Time
	start      time.Time
	worked     time.Duration
}

// NewIterator returns an iterator over s, starting at attempt 0.
func NewIterator(s Strategy) *Iterator { return &Iterator{s: s} }

// WithMaxElapsed makes the iterator return Stop once d of retrying has passed
// since the last Reset, not counting time reported with Worked. now reads the
// clock (time.Now when nil); it is read only by NextBackOff and Reset.
func (it *Iterator) WithMaxElapsed(d time.Duration, now func() time.Time) *Iterator {
	if now == nil {
		now = time.Now
	}
	it.maxElapsed, it.now = d, now
	it.start = now()
	return it
}

// NextBackOff returns the next delay, or Stop. An iterator over a nil
// strategy stops at once.
func (it *Iterator) NextBackOff() time.Duration {
	if dispatch.IsNil(it.s) {
		return Stop
	}
	d := it.s.Delay(it.attempt, it.prev)
	if d == Stop {
		return Stop
	}
	if it.maxElapsed > 0 {
		spent := it.now().Sub(it.start) - it.worked
		if spent+d > it.maxElapsed {
			return Stop
		}
	}
	it.attempt++
	it.prev = d
	return d
}

// Reset starts over from attempt 0.
func (it *Iterator) Reset() {
	it.attempt, it.prev, it.worked = 0, 0, 0
	if it.maxElapsed > 0 {
		it.start = it.now()
	}
}

// Worked reports time spent on useful work (a long poll that returned
// messages, a handler that ran), which the max-elapsed budget does not count.
func (it *Iterator) Worked(d time.Duration) { it.worked += d }

// Attempt returns how many delays the iterator has handed out since Reset.
func (it *Iterator) Attempt() int { return it.attempt }

// FromBackOff turns any BackOff (a cenkalti ExponentialBackOff, say) into a
// Strategy: Delay(n, _) makes a fresh BackOff with newBackOff and returns its
// (n+1)th delay. It costs n+1 calls, and is as safe for concurrent use as
// newBackOff is.
func FromBackOff(newBackOff func() BackOff) Strategy { return backOffStrategy(newBackOff) }

type backOffStrategy func() BackOff

func (f backOffStrategy) Delay(attempt int, _ time.Duration) time.Duration {
	b := f()
	d := b.NextBackOff()
	for i := 0; i < attempt && d != Stop; i++ {
		d = b.NextBackOff()
	}
	return d
}
