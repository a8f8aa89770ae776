package backoff

import (
	"fmt"
	"time"
)

// MaxAttempts stops after N retries: attempts 0 to N-1 get S's delays, later
// ones get Stop. Attempts count from 0 for the first retry, as in every
// Strategy, so MaxAttempts{N: 3} allows three retries.
type MaxAttempts struct {
	S Strategy
	N int
}

// Delay implements Strategy.
func (m MaxAttempts) Delay(attempt int, prev time.Duration) time.Duration {
	if attempt >= m.N {
		return Stop
	}
	return m.S.Delay(attempt, prev)
}

// WithRand returns m with S drawing from r (see WithRand).
func (m MaxAttempts) WithRand(r Random) Strategy { m.S = WithRand(m.S, r); return m }

// Validate checks the settings and the wrapped strategy.
func (m MaxAttempts) Validate() error {
	if m.N < 0 {
		return &ConfigError{Strategy: "MaxAttempts", Field: "N", Reason: fmt.Sprintf("is negative (%d)", m.N)}
	}
	return Validate(m.S)
}

// Capped clamps S's delays to at most Cap; Stop passes through.
type Capped struct {
	S   Strategy
	Cap time.Duration
}

// Delay implements Strategy.
func (c Capped) Delay(attempt int, prev time.Duration) time.Duration {
	d := c.S.Delay(attempt, prev)
	if d == Stop {
		return Stop
	}
	return min(d, c.Cap)
}

// WithRand returns c with S drawing from r (see WithRand).
func (c Capped) WithRand(r Random) Strategy { c.S = WithRand(c.S, r); return c }

// Validate checks the settings and the wrapped strategy.
func (c Capped) Validate() error {
	if c.Cap < 0 {
		return &ConfigError{Strategy: "Capped", Field: "Cap", Reason: fmt.Sprintf("is negative (%v)", c.Cap)}
	}
	return Validate(c.S)
}

// WithRand returns s drawing its randomness from r: every jitter strategy
// here, and every decorator around one (MaxAttempts, Capped, Budgeted), has a
// WithRand method that this calls, so a seeded r makes the whole chain
// repeatable. A strategy without one (Exponential and Constant draw nothing;
// a caller's own may) is returned as it is.
//
// That is how a delay can be recomputed instead of remembered: replay seeds
// r with a message's id and attempt, and every receive of the message draws
// the same delay.
func WithRand(s Strategy, r Random) Strategy {
	if w, ok := s.(interface{ WithRand(Random) Strategy }); ok {
		return w.WithRand(r)
	}
	return s
}
