package consumer

import (
	"errors"
	"fmt"
	"time"

	"github.com/sqskit/sqskit/internal/telemetry"
)

// ErrLeaseLost is the failure of a message whose visibility could not be
// kept: its receipt handle stopped working, the extension cap was reached,
// or its visibility lapsed. SQS may already have delivered it elsewhere, so
// it is neither deleted nor released.
var ErrLeaseLost = telemetry.NewFailure("consumer: lease lost", "lease_lost")

// heartbeat extends the visibility of every held message — waiting, running
// or awaiting delete — before it lapses, until stop is closed.
func (r *run) heartbeat(stop <-chan struct{}) {
	t := time.NewTicker(r.o.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		r.extend(time.Now())
	}
}

// extend asks to renew messages with less than VisibilityTimeout −
// HeartbeatInterval left, by VisibilityTimeout or up to the extension cap,
// in batches through the settler. A message that cannot be renewed and
// would lapse before the next beat loses its lease, unless it awaits its
// delete, which may still land in time (its answer decides).
func (r *run) extend(now time.Time) {
	o := r.o
	var due []visChange
	r.mu.Lock()
	for _, t := range r.tracked {
		if t.lost != nil || t.extending {
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
		next := min(o.VisibilityTimeout, t.received.Add(o.MaxExtension).Sub(now), maxVisibility(t, now)).Truncate(time.Second)
		if next <= left {
			if left <= o.HeartbeatInterval && t.state != stateDeleting {
				r.loseLocked(t, fmt.Errorf("%w: the extension cap of %v is reached", ErrLeaseLost, o.MaxExtension))
			}
			continue
		}
		t.extending = true
		due = append(due, visChange{t: t, kind: changeExtend, seconds: int32(next / time.Second)})
	}
	r.mu.Unlock()
	r.set.plug()
	for _, c := range due {
		r.set.change(c)
	}
	r.set.unplug()
}

// extended ends an extension sent at sent with handle: on success the
// message is visible until sent + the seconds asked; a failure with sender
// fault for the handle still in use loses the lease, unless the message
// awaits its delete (which may have made the handle invalid: its answer
// decides); other failures are retried at the next beat, well before the
// lapse.
func (r *run) extended(c visChange, handle string, sent time.Time, err error) {
	t := c.t
	r.mu.Lock()
	defer r.mu.Unlock()
	t.extending = false
	var entry *entryError
	switch {
	case err == nil:
		if until := sent.Add(time.Duration(c.seconds) * time.Second); until.After(t.visibleUntil) {
			t.visibleUntil = until
		}
		r.obs.extended(t, time.Duration(c.seconds)*time.Second)
	case errors.As(err, &entry) && entry.senderFault && handle == t.handle && t.state != stateDeleting:
		r.loseLocked(t, fmt.Errorf("%w: %v", ErrLeaseLost, err))
	}
}

// loseLocked marks a lost lease and cancels the handler (with a handler.Handler;
// a handler.BatchHandler's call goes on for the other messages). Callers hold r.mu.
func (r *run) loseLocked(t *inflight, err error) {
	if t.lost != nil || r.tracked[t.id] != t {
		return
	}
	t.lost = err
	if t.cancel != nil && t.state == stateRunning && r.c.batch == nil {
		t.cancel(err)
	}
	r.obs.leaseLost(t, err)
}
