package backoff

import (
	"fmt"
	"math"
	"time"
)

// Exponential waits min(Cap, Base·2^attempt), with no jitter. Clients that
// fail together retry together; prefer FullJitter unless you need exact
// delays. A zero Cap means no cap.
type Exponential struct {
	Base, Cap time.Duration
}

// Delay implements Strategy.
func (s Exponential) Delay(attempt int, _ time.Duration) time.Duration {
	return exponential(s.Base, s.Cap, attempt)
}

// Validate checks the settings.
func (s Exponential) Validate() error { return checkBaseCap("Exponential", s.Base, s.Cap) }

// FullJitter waits U(0, min(Cap, Base·2^attempt)): the least total work of
// the jittered strategies in Brooker's experiment, and the default. A zero
// Cap means no cap; a nil Rand means math/rand/v2.
type FullJitter struct {
	Base, Cap time.Duration
	Rand      Random
}

// Delay implements Strategy.
func (s FullJitter) Delay(attempt int, _ time.Duration) time.Duration {
	return uniform(randomOr(s.Rand), 0, exponential(s.Base, s.Cap, attempt))
}

// WithRand returns s drawing from r.
func (s FullJitter) WithRand(r Random) Strategy { s.Rand = r; return s }

// Validate checks the settings.
func (s FullJitter) Validate() error { return checkBaseCap("FullJitter", s.Base, s.Cap) }

// EqualJitter waits v/2 + U(0, v/2) with v = min(Cap, Base·2^attempt): never
// less than half the exponential delay, at the price of more waiting than
// FullJitter for similar work.
type EqualJitter struct {
	Base, Cap time.Duration
	Rand      Random
}

// Delay implements Strategy.
func (s EqualJitter) Delay(attempt int, _ time.Duration) time.Duration {
	v := exponential(s.Base, s.Cap, attempt)
	half := v / 2
	return uniform(randomOr(s.Rand), half, v)
}

// WithRand returns s drawing from r.
func (s EqualJitter) WithRand(r Random) Strategy { s.Rand = r; return s }

// Validate checks the settings.
func (s EqualJitter) Validate() error { return checkBaseCap("EqualJitter", s.Base, s.Cap) }

// DecorrelatedJitter waits U(Base, min(Cap, 3·prev)), with prev = Base for
// the first retry: each delay grows from the last one, not from the attempt
// number, so callers must pass the previous delay back in.
//
// The draw is made inside the cap. Brooker's literal formula,
// min(Cap, U(Base, 3·prev)), puts a large share of delays exactly at the cap
// once prev nears it, which lines clients up again; set Literal to get it
// anyway.
type DecorrelatedJitter struct {
	Base, Cap time.Duration
	Rand      Random
	// Literal selects min(Cap, U(Base, 3·prev)).
	Literal bool
}

// Delay implements Strategy.
func (s DecorrelatedJitter) Delay(_ int, prev time.Duration) time.Duration {
	if s.Base <= 0 {
		return 0
	}
	limit := capOrMax(s.Cap)
	if limit <= s.Base {
		return limit
	}
	if prev < s.Base {
		prev = s.Base
	}
	hi := time.Duration(math.MaxInt64)
	if prev <= math.MaxInt64/3 {
		hi = 3 * prev
	}
	r := randomOr(s.Rand)
	if s.Literal {
		return min(limit, uniform(r, s.Base, hi))
	}
	return uniform(r, s.Base, min(limit, hi))
}

// WithRand returns s drawing from r.
func (s DecorrelatedJitter) WithRand(r Random) Strategy { s.Rand = r; return s }

// Validate checks the settings.
func (s DecorrelatedJitter) Validate() error {
	return checkBaseCap("DecorrelatedJitter", s.Base, s.Cap)
}

// DecorrelatedJitterV2 is Polly's "decorrelated jitter V2" (.NET): delays
// follow f(t) = 2^t·tanh(√(4t)) at a random point t in [attempt,
// attempt+1), minus f at the previous interval, scaled so the median first
// delay is MedianFirst. The curve is smooth with no spikes or clustering.
// Polly carries the previous random point between calls; as a pure function
// of the attempt this takes the previous interval's midpoint instead, which
// keeps the same median growth. A zero Cap means no cap.
type DecorrelatedJitterV2 struct {
	MedianFirst, Cap time.Duration
	Rand             Random
}

// Delay implements Strategy.
func (s DecorrelatedJitterV2) Delay(attempt int, _ time.Duration) time.Duration {
	if s.MedianFirst <= 0 {
		return 0
	}
	attempt = max(attempt, 0)
	limit := capOrMax(s.Cap)
	if attempt > 1000 {
		return limit // f overflows float64 long before
	}
	const scale = 1 / 1.4 // Polly's rp scaling factor
	u := float64(randomOr(s.Rand).Int64N(1<<53)) / (1 << 53)
	t := float64(attempt) + u
	prev := 0.0
	if attempt > 0 {
		prev = pollyCurve(float64(attempt) - 0.5)
	}
	d := (pollyCurve(t) - prev) * scale * float64(s.MedianFirst)
	if d <= 0 {
		return 0
	}
	if d >= float64(limit) {
		return limit
	}
	return time.Duration(d)
}

// pollyCurve is f(t) = 2^t·tanh(√(4t)); tanh is 1 in float64 from √(4t) ≥ 20.
func pollyCurve(t float64) float64 {
	x := 2 * math.Sqrt(t)
	if x >= 20 {
		return math.Exp2(t)
	}
	return math.Exp2(t) * math.Tanh(x)
}

// WithRand returns s drawing from r.
func (s DecorrelatedJitterV2) WithRand(r Random) Strategy { s.Rand = r; return s }

// Validate checks the settings.
func (s DecorrelatedJitterV2) Validate() error {
	return checkBaseCap("DecorrelatedJitterV2", s.MedianFirst, s.Cap)
}

// Randomized is cenkalti/backoff's ExponentialBackOff as a pure function:
// Initial·Multiplier^attempt, randomised by ±Factor. Unlike cenkalti's,
// the randomised delay never exceeds Cap (cenkalti caps before randomising,
// so delays reach Cap·(1+Factor)), and huge values saturate instead of
// wrapping negative. Zero Multiplier means 1.5, cenkalti's default; zero Cap
// means no cap.
type Randomized struct {
	Initial    time.Duration
	Multiplier float64
	Factor     float64
	Cap        time.Duration
	Rand       Random
}

// Delay implements Strategy.
func (s Randomized) Delay(attempt int, _ time.Duration) time.Duration {
	if s.Initial <= 0 {
		return 0
	}
	mult := s.Multiplier
	if mult == 0 {
		mult = 1.5
	}
	limit := capOrMax(s.Cap)
	interval := float64(s.Initial) * math.Pow(mult, float64(max(attempt, 0)))
	lo, hi := interval*(1-s.Factor), interval*(1+s.Factor)
	if lo >= float64(limit) || math.IsNaN(lo) {
		return limit
	}
	hiD := limit
	if hi < float64(limit) {
		hiD = time.Duration(hi)
	}
	return uniform(randomOr(s.Rand), time.Duration(max(lo, 0)), hiD)
}

// WithRand returns s drawing from r.
func (s Randomized) WithRand(r Random) Strategy { s.Rand = r; return s }

// Validate checks the settings.
func (s Randomized) Validate() error {
	switch {
	case s.Factor < 0 || s.Factor > 1 || math.IsNaN(s.Factor):
		return &ConfigError{Strategy: "Randomized", Field: "Factor", Reason: fmt.Sprintf("(%v) must be in [0, 1]", s.Factor)}
	case s.Multiplier != 0 && (s.Multiplier < 1 || math.IsNaN(s.Multiplier) || math.IsInf(s.Multiplier, 0)):
		return &ConfigError{Strategy: "Randomized", Field: "Multiplier", Reason: fmt.Sprintf("(%v) must be at least 1", s.Multiplier)}
	}
	return checkBaseCap("Randomized", s.Initial, s.Cap)
}

// Constant always waits D.
type Constant struct {
	D time.Duration
}

// Delay implements Strategy.
func (s Constant) Delay(int, time.Duration) time.Duration { return max(s.D, 0) }

// Validate checks the setting.
func (s Constant) Validate() error {
	if s.D < 0 {
		return &ConfigError{Strategy: "Constant", Field: "D", Reason: fmt.Sprintf("is negative (%v)", s.D)}
	}
	return nil
}
