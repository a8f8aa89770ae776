package consumer

import (
	"cmp"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/sqskit/sqskit/handler"
)

// Breaker is a circuit breaker on the handler's outcomes: when the handler
// keeps failing (a database down, a downstream API refusing), intake
// pauses under "circuit-breaker" instead of receiving messages only to fail
// them. After Cooldown one receive of a single message probes: its
// success resumes intake, its failure pauses again for Cooldown. Messages
// already held go on meanwhile, and their outcomes are not counted. A lost
// lease, a shutdown, a Hold, a hold-back after an earlier failure of a
// FIFO group and an escalation to the parking queue count neither way. The
// zero value is off.
type Breaker struct {
	// Failures opens the breaker: this many failures among the last Window
	// outcomes. 0 (the default) turns it off.
	Failures int
	// Window is how many of the latest outcomes are counted: Failures to
	// 1,000. Default 2 × Failures.
	Window int
	// Cooldown is how long intake stays paused before a probe: 1 s to
	// 1 h. Default 30 s.
	Cooldown time.Duration
}

// maxBreakerWindow bounds Breaker.Window: a ring of outcomes per Run.
const maxBreakerWindow = 1000

// resolveBreaker fills the Breaker's defaults and checks it.
func resolveBreaker(b *Breaker) error {
	if b.Failures == 0 && b.Window == 0 && b.Cooldown == 0 {
		return nil
	}
	if b.Failures <= 0 {
		return configError("Breaker.Failures %d must be positive when the breaker is set", b.Failures)
	}
	b.Window = cmp.Or(b.Window, min(2*b.Failures, maxBreakerWindow))
	b.Cooldown = cmp.Or(b.Cooldown, 30*time.Second)
	switch {
	case b.Window < b.Failures || b.Window > maxBreakerWindow:
		return configError("Breaker.Window %d must be from Failures (%d) to %d", b.Window, b.Failures, maxBreakerWindow)
	case b.Cooldown < time.Second || b.Cooldown > time.Hour:
		return configError("Breaker.Cooldown %v must be from 1s to 1h", b.Cooldown)
	}
	return nil
}

// breaker is one Run's circuit breaker. Its lock is taken with no other
// lock of the consumer held.
type breaker struct {
	r   *run
	cfg Breaker

	mu       sync.Mutex
	outcomes []bool // a ring of the latest outcomes, true for a failure
	next     int
	failures int  // failures in outcomes
	open     bool // intake is paused under pauserBreaker
	timer    *time.Timer
	ended    bool // Run is over: no more pauses or probes
}

func newBreaker(r *run, cfg Breaker) *breaker {
	if cfg.Failures == 0 {
		return nil
	}
	return &breaker{r: r, cfg: cfg, outcomes: make([]bool, 0, cfg.Window)}
}

// counts reports whether a message's outcome counts, and as a failure.
func breakerOutcome(err error, ran bool, v verdict) (counts, failed bool) {
	switch {
	case !ran || v == verdictHold || v == verdictLost:
		return false, false
	case err == nil:
		return v == verdictDelete, false
	case errors.Is(err, ErrLeaseLost), errors.Is(err, ErrShutdownTimeout), errors.Is(err, handler.ErrNotStarted),
		errors.Is(err, handler.ErrHeldBack), handler.EscalationOf(err) != nil:
		return false, false
	}
	return true, true
}

// record counts an outcome; probe says it is the probe's.
func (b *breaker) record(failed, probe bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ended {
		return
	}
	if b.open {
		if !probe {
			return // held before the breaker opened: says nothing new
		}
		if failed {
			b.log("circuit breaker: the probe failed; paused again")
			b.coolLocked()
			return
		}
		b.open = false
		b.outcomes, b.next, b.failures = b.outcomes[:0], 0, 0
		b.log("circuit breaker closed: the probe succeeded")
		b.r.c.Resume(pauserBreaker)
		return
	}
	if len(b.outcomes) < b.cfg.Window {
		b.outcomes = append(b.outcomes, failed)
	} else {
		if b.outcomes[b.next] {
			b.failures--
		}
		b.outcomes[b.next] = failed
		b.next = (b.next + 1) % b.cfg.Window
	}
	if failed {
		b.failures++
	}
	if b.failures >= b.cfg.Failures {
		b.open = true
		b.log("circuit breaker open: the handler keeps failing; intake paused")
		b.r.c.Pause(pauserBreaker)
		b.coolLocked()
	}
}

func (b *breaker) log(msg string) {
	b.r.log.LogAttrs(b.r.apiCtx, slog.LevelWarn, "consumer: "+msg, slog.String("queue", b.r.c.queueURL))
}

// probeLost lets another probe go: the last one brought no message, or
// its message's outcome did not count.
func (b *breaker) probeLost() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.open && !b.ended && b.timer == nil {
		b.r.allowProbe()
	}
}

// coolLocked pauses intake for Cooldown, then lets one probe go. Callers
// hold b.mu.
func (b *breaker) coolLocked() {
	b.timer = time.AfterFunc(b.cfg.Cooldown, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.timer = nil
		if !b.ended {
			b.r.allowProbe()
		}
	})
}

// end stops the breaker at the end of Run; a pause of its own is lifted,
// so the next Run starts closed.
func (b *breaker) end() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ended = true
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	if b.open {
		b.open = false
		b.r.c.Resume(pauserBreaker)
	}
}

// allowProbe lets one receive of one message go while the breaker alone
// pauses intake.
func (r *run) allowProbe() {
	r.mu.Lock()
	r.probe = true
	r.mu.Unlock()
	r.turnCond.Broadcast()
}
