package sqsfake

import (
	"context"
	"sync"
	"time"
)

// Clock is the time source of a Server. Long polls wait on After, so a manual
// clock that fires its timers when advanced wakes them deterministically.
type Clock interface {
	Now() time.Time
	// After returns a channel that receives once d has passed, and a function
	// that releases the timer early.
	After(d time.Duration) (<-chan time.Time, func())
}

// realClock is the wall clock, the default.
type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) After(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTimer(d)
	return t.C, func() { t.Stop() }
}

// ManualClock is a clock that only moves when a test moves it. Timers fire
// from Advance and Set, on the caller's goroutine; it starts none of its own.
// It is safe for concurrent use.
type ManualClock struct {
	mu      sync.Mutex
	now     time.Time
	timers  map[*manualTimer]struct{}
	changed chan struct{} // closed and replaced when the set of timers grows
}

type manualTimer struct {
	at time.Time
	c  chan time.Time
}

// NewManualClock returns a clock stopped at start.
func NewManualClock(start time.Time) *ManualClock {
	return &ManualClock{now: start, timers: map[*manualTimer]struct{}{}, changed: make(chan struct{})}
}

// Now returns the clock's current time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// After registers a timer that fires when the clock reaches now+d.
func (c *ManualClock) After(d time.Duration) (<-chan time.Time, func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &manualTimer{at: c.now.Add(d), c: make(chan time.Time, 1)}
	if d <= 0 {
		t.c <- c.now
		return t.c, func() {}
	}
	c.timers[t] = struct{}{}
	close(c.changed)
	c.changed = make(chan struct{})
	return t.c, func() {
		c.mu.Lock()
		delete(c.timers, t)
		c.mu.Unlock()
	}
}

// Advance moves the clock forward by d and fires every timer that is due.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.setLocked(c.now.Add(d))
	c.mu.Unlock()
}

// Set moves the clock to t (never backwards) and fires every timer that is due.
func (c *ManualClock) Set(t time.Time) {
	c.mu.Lock()
	if t.After(c.now) {
		c.setLocked(t)
	}
	c.mu.Unlock()
}

func (c *ManualClock) setLocked(t time.Time) {
	c.now = t
	for tm := range c.timers {
		if !tm.at.After(t) {
			tm.c <- t
			delete(c.timers, tm)
		}
	}
}

// Timers returns how many timers are waiting, e.g. long polls parked on the
// clock.
func (c *ManualClock) Timers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// WaitForTimers blocks until at least n timers are waiting or ctx ends. Tests
// use it to know that a goroutine is parked in a long poll before advancing.
func (c *ManualClock) WaitForTimers(ctx context.Context, n int) error {
	for {
		c.mu.Lock()
		count, changed := len(c.timers), c.changed
		c.mu.Unlock()
		if count >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
