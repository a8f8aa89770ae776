// Package throttle keeps sqskit's calls within SQS's throughput quotas
// (300 calls a second per action on a FIFO queue without high-throughput
// mode): a Window sizes how many calls of one kind may be in flight from
// the throttling SQS answers with, as TCP sizes its congestion window
// (additive increase, multiplicative decrease), and SDKOption keeps the
// SDK from retrying a throttled request behind the caller's back.
package throttle

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqskit/sqskit/backoff"
)

// The window's response to throttling, with the reasons for each.
const (
	// Decrease is what a throttled call leaves of the window. SQS's quota
	// is a token bucket: once it is spent, every call above its rate is
	// refused, so the window must fall below the rate for the bucket to
	// refill, and halving it does whatever the latency. A gentler cut
	// throttles again within a few round trips.
	Decrease = 0.5
	// Increase is what the window grows per round trip above the size at
	// which it was last throttled: an eighth of a call, so that creeping
	// back past the quota costs few throttled calls (one or two a cycle of
	// some twenty round trips at 10 ms per call), while the quota's burst
	// covers the dip after each cut.
	Increase = 0.125
	// Pause is how long no call starts after one was throttled. The quota
	// is spent when SQS throttles, and at 300 calls a second 20 ms buys six
	// calls' worth back. A window bounds calls in flight, not calls a
	// second: without the pause, the calls of even a window of one would
	// follow each other at once where a call takes no time (in process,
	// on loopback), each throttled in turn.
	Pause = 20 * time.Millisecond
)

// Window is how many calls of one kind may be in flight. It grows by one
// per call that could have used more room (doubling per round trip) up to
// Max until a call is throttled; then it halves, not below Floor, and from
// there grows by Increase per round trip. Its owner guards it. Make one
// with NewWindow, or with Carry, which takes the zero value for a window
// never throttled.
type Window struct {
	Floor, Max int

	size    float64
	thresh  float64   // growth is additive above it; Max until the first throttle
	started uint64    // calls started so far
	cutAt   uint64    // calls started before the last cut: their throttles are old news
	until   time.Time // no call starts before it: the last throttle's pause
}

// NewWindow returns a window of size (within floor and ceiling) that was
// never throttled.
func NewWindow(floor, ceiling, size int) Window {
	return Window{Floor: floor, Max: ceiling, size: float64(min(max(size, floor), ceiling)), thresh: float64(ceiling)}
}

// Limit is how many calls may be in flight.
func (w *Window) Limit() int { return int(w.size) }

// Throttled reports whether a call was ever throttled: the window then
// grows by Increase per round trip, not by doubling.
func (w *Window) Throttled() bool { return w.thresh < float64(w.Max) }

// Start records a call starting and returns its ticket for Cut.
func (w *Window) Start() uint64 {
	w.started++
	return w.started
}

// Grow widens the window after a call that could have used more room: by
// one up to the size of the last throttle, by Increase per round trip
// (Increase ÷ Limit per call) above it.
func (w *Window) Grow() {
	switch {
	case w.size >= float64(w.Max):
	case w.size < w.thresh:
		w.size = min(w.size+1, w.thresh)
	default:
		w.size = min(w.size+Increase/w.size, float64(w.Max))
	}
}

// Shrink narrows the window by one, not below Floor (a receive that came
// back empty).
func (w *Window) Shrink() {
	w.size = max(w.size-1, float64(w.Floor))
}

// Cut records that the call with ticket was throttled at now: no call
// starts for Pause, and the window narrows, once per round trip, since
// the calls started before the last cut were sent through the wider
// window and their throttles say nothing new. It reports whether it
// narrowed.
func (w *Window) Cut(ticket uint64, now time.Time) bool {
	w.until = now.Add(Pause)
	if ticket <= w.cutAt {
		return false
	}
	w.size = max(float64(w.Floor), w.size*Decrease)
	w.thresh = w.size
	w.cutAt = w.started
	return true
}

// Paused returns how long the last throttle's pause still holds calls
// back at now: 0 when it is over.
func (w *Window) Paused(now time.Time) time.Duration {
	return max(w.until.Sub(now), 0)
}

// Carry returns a window for the next run of the same calls, remembering
// where w was throttled: it starts at w's size (within the new floor and
// max), from where it grows by Increase per round trip if w was ever
// throttled, by doubling otherwise.
func (w *Window) Carry(floor, ceiling int) Window {
	n := NewWindow(floor, ceiling, ceiling)
	if w.Throttled() {
		n.size = max(min(float64(ceiling), w.size), float64(floor))
		n.thresh = n.size
	}
	return n
}

// SDKOption makes the SDK's retryer treat throttling as final for one
// call (every other error is retried as the client says): the caller
// paces itself on the throttle instead. A standard retryer would wait a
// random 0 to 2 s before its second request, 0 to 4 s before its third,
// and spend 5 of its client's 500 retry tokens each time, holding a FIFO
// group and a call slot meanwhile, while at 300 calls a second the quota
// frees a call every 3.3 ms.
func SDKOption(o *sqs.Options) {
	if o.Retryer == nil {
		return
	}
	o.Retryer = throttleFinal{retryerV2(o.Retryer)}
}

// throttleFinal is a retryer that does not retry throttling.
type throttleFinal struct{ aws.RetryerV2 }

func (r throttleFinal) IsErrorRetryable(err error) bool {
	return !backoff.IsThrottle(err) && r.RetryerV2.IsErrorRetryable(err)
}

// retryerV2 is r as a RetryerV2, as the SDK's retry middleware sees it.
func retryerV2(r aws.Retryer) aws.RetryerV2 {
	if v2, ok := r.(aws.RetryerV2); ok {
		return v2
	}
	return v1{r}
}

type v1 struct{ aws.Retryer }

func (r v1) GetAttemptToken(context.Context) (func(error) error, error) {
	return r.GetInitialToken(), nil
}
