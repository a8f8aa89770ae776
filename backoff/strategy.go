package backoff

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/sqskit/sqskit/internal/dispatch"
)

// Stop is the delay that means "do not retry". It has the value of
// cenkalti/backoff's Stop, so the two are interchangeable.
const Stop time.Duration = -1

// Strategy computes delays. It is a pure function: the same inputs give the
// same distribution, and nothing is remembered between calls, so a Strategy
// value is safe for concurrent use and works where the attempt count lives
// outside memory (a message attribute, a database row).
type Strategy interface {
	// Delay returns the delay before retry number attempt (counted from 0
	// for the first retry, as in base·2^attempt), or Stop. prev is the delay
	// returned for the previous attempt, or 0; only strategies whose next
	// delay depends on the last one (decorrelated jitter) read it.
	Delay(attempt int, prev time.Duration) time.Duration
}

// Random is a source of uniform random numbers. *rand.Rand from math/rand/v2
// satisfies it. A Random shared by goroutines must be safe for concurrent
// use; NewRandom's is.
type Random interface {
	// Int64N returns a uniform number in [0, n). n > 0.
	Int64N(n int64) int64
}

// globalRandom draws from math/rand/v2's top-level functions: safe for
// concurrent use without locks, and seeded by the runtime.
type globalRandom struct{}

func (globalRandom) Int64N(n int64) int64 { return rand.Int64N(n) }

// NewRandom returns a seeded Random, safe for concurrent use, for tests and
// simulations that need repeatable delays.
func NewRandom(seed uint64) Random {
	return &lockedRandom{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

type lockedRandom struct {
	mu sync.Mutex
	r  *rand.Rand
}

func (l *lockedRandom) Int64N(n int64) int64 {
	l.mu.Lock()
	v := l.r.Int64N(n)
	l.mu.Unlock()
	return v
}

func randomOr(r Random) Random {
	if r == nil {
		return globalRandom{}
	}
	return r
}

// uniform draws from [lo, hi] without overflow for any 0 ≤ lo ≤ hi.
func uniform(r Random, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	span := int64(hi - lo)
	if span == math.MaxInt64 {
		return lo + time.Duration(r.Int64N(span))
	}
	return lo + time.Duration(r.Int64N(span+1))
}

// capOrMax turns the "no cap" zero value into the longest duration.
func capOrMax(c time.Duration) time.Duration {
	if c <= 0 {
		return math.MaxInt64
	}
	return c
}

// exponential returns min(cap, base·2^attempt) without overflow for every
// attempt and every cap.
func exponential(base, cap time.Duration, attempt int) time.Duration {
	if base <= 0 {
		return 0
	}
	cap = capOrMax(cap)
	if attempt <= 0 {
		return min(base, cap)
	}
	if attempt >= 63 || base > cap>>uint(attempt) {
		return cap
	}
	return base << uint(attempt)
}

// ConfigError reports an invalid strategy setting.
type ConfigError struct {
	Strategy string
	Field    string
	Reason   string
}

func (e *ConfigError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("backoff: %s %s", e.Strategy, e.Reason)
	}
	return fmt.Sprintf("backoff: %s.%s %s", e.Strategy, e.Field, e.Reason)
}

// Validate reports a setting that makes no sense for s (a negative duration,
// a cap below the base, a jitter factor outside [0, 1]) when s has a
// Validate() error method, as every strategy here does; others pass. A nil
// strategy is refused, including a nil pointer or func in the interface
// (FromBackOff(nil)), here and inside every decorator. sqskit's consumer,
// replayer and sender call it from their constructors so bad settings fail
// at start, not at the first retry.
func Validate(s Strategy) error {
	if dispatch.IsNil(s) {
		return &ConfigError{Strategy: "Strategy", Reason: "is nil"}
	}
	if v, ok := s.(interface{ Validate() error }); ok {
		return v.Validate()
	}
	return nil
}

func checkBaseCap(name string, base, cap time.Duration) error {
	switch {
	case base < 0:
		return &ConfigError{Strategy: name, Field: "Base", Reason: fmt.Sprintf("is negative (%v)", base)}
	case cap < 0:
		return &ConfigError{Strategy: name, Field: "Cap", Reason: fmt.Sprintf("is negative (%v)", cap)}
	case cap > 0 && cap < base:
		return &ConfigError{Strategy: name, Field: "Cap", Reason: fmt.Sprintf("(%v) is below Base (%v)", cap, base)}
	}
	return nil
}
