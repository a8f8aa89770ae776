package sim

import (
	"sync"
	"time"
)

// Clock is sqsfake's clock in a simulation: it stands still until Set moves
// it, and it knows when its next timer is due, which is the next moment
// anything can happen on the queues (a long poll ends, a message becomes
// visible). It implements sqsfake.Clock and is safe for concurrent use.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	timers map[*timer]struct{}
}

type timer struct {
	at time.Time
	c  chan time.Time
}

// NewClock returns a clock stopped at start.
func NewClock(start time.Time) *Clock {
	return &Clock{now: start, timers: map[*timer]struct{}{}}
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// After returns a channel that receives once the clock reaches now+d, and a
// function that drops the timer.
func (c *Clock) After(d time.Duration) (<-chan time.Time, func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &timer{at: c.now.Add(d), c: make(chan time.Time, 1)}
	if d <= 0 {
		t.c <- c.now
		return t.c, func() {}
	}
	c.timers[t] = struct{}{}
	return t.c, func() {
		c.mu.Lock()
		delete(c.timers, t)
		c.mu.Unlock()
	}
}

// Timers is the number of timers waiting: in a simulation, long polls
// parked until something can change.
func (c *Clock) Timers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// Next returns when the earliest timer is due, and false when none waits.
func (c *Clock) Next() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var next time.Time
	for t := range c.timers {
		if next.IsZero() || t.at.Before(next) {
			next = t.at
		}
	}
	return next, !next.IsZero()
}

// Set moves the clock to t, never backwards, and fires the timers due.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !t.After(c.now) {
		return
	}
	c.now = t
	for tm := range c.timers {
		if !tm.at.After(t) {
			tm.c <- t
			delete(c.timers, tm)
		}
	}
}
