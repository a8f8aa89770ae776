package consumer

import (
	"errors"
	"fmt"
	"time"
)

// ErrLeaseLost is the failure of a message whose visibility could not be
// kept: its receipt handle stopped working, the extension cap was reached,
// or its visibility lapsed. SQS may already have delivered it elsewhere, so
// it is neither deleted nor released.
var ErrLeaseLost = errors.New("consumer: lease lost")

// heartbeat extends the visibility of every held message — waiting, running
// or awaiting delete — before it lapses, until stop is closed.
func (r *run) heartbeat(stop <-chan struct{}) {
	for {
		t := time.NewTimer(r.c.opts.HeartbeatInterval)
		select {
		case <-stop:
			t.Stop()
			return
		case <-t.C:
		}
		r.extend(time.Now())
	}
}

// extend renews messages with less than VisibilityTimeout − HeartbeatInterval
// left, by VisibilityTimeout or up to the extension cap. A message that
// cannot be renewed and would lapse before the next beat loses its lease.
func (r *run) extend(now time.Time) {
	o := &r.c.opts
	var due []*inflight
	want := map[*inflight]int32{}
	r.mu.Lock()
	for _, t := range r.tracked {
		if t.lost != nil {
			continue
		}
		left := t.visibleUntil.Sub(now)
		if left <= 0 {
			r.loseLocked(t, fmt.Errorf("%w: visibility lapsed", ErrLeaseLost))
			continue
		}
		if left > o.VisibilityTimeout-o.HeartbeatInterval {
			continue
		}
		next := min(o.VisibilityTimeout, t.received.Add(o.MaxExtension).Sub(now)).Truncate(time.Second)
		if next <= left {
			if left <= o.HeartbeatInterval {
				r.loseLocked(t, fmt.Errorf("%w: the extension cap of %v is reached", ErrLeaseLost, o.MaxExtension))
			}
			continue
		}
		due = append(due, t)
		want[t] = int32(next / time.Second)
	}
	r.mu.Unlock()
	if len(due) == 0 {
		return
	}
	errs := r.changeVisibility(due, func(t *inflight) int32 { return want[t] })
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, t := range due {
		var entry *entryError
		switch {
		case errs[i] == nil:
			t.visibleUntil = now.Add(time.Duration(want[t]) * time.Second)
			r.c.stats.extended.Add(1)
			r.h.extended(t.msg, time.Duration(want[t])*time.Second)
		case errors.As(errs[i], &entry) && entry.senderFault:
			r.loseLocked(t, fmt.Errorf("%w: %v", ErrLeaseLost, errs[i]))
		}
		// Other failures are retried at the next beat, well before the lapse.
	}
}

// loseLocked marks a lost lease and cancels the handler. Callers hold r.mu.
func (r *run) loseLocked(t *inflight, err error) {
	if t.lost != nil || r.tracked[t.msg.ID] != t {
		return
	}
	t.lost = err
	if t.cancel != nil {
		t.cancel()
	}
	r.c.stats.leaseLost.Add(1)
	r.h.leaseLost(t.msg, err)
}
