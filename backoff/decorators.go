package backoff

import (
	"fmt"
	"time"
)

// MaxAttempts stops after N retries: attempts 0 to N-1 get S's delays, later
// ones get Stop.
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

// Validate checks the settings and the wrapped strategy.
func (c Capped) Validate() error {
	if c.Cap < 0 {
		return &ConfigError{Strategy: "Capped", Field: "Cap", Reason: fmt.Sprintf("is negative (%v)", c.Cap)}
	}
	return Validate(c.S)
}
