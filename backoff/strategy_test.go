package backoff

import (
	"errors"
	"math"
	"sort"
	"testing"
	"time"
)

// allStrategies returns every strategy with base 100 ms and the given cap,
// drawing from a seeded source.
func allStrategies(seed uint64, cap time.Duration) map[string]Strategy {
	r := NewRandom(seed)
	base := 100 * time.Millisecond
	return map[string]Strategy{
		"Exponential":          Exponential{Base: base, Cap: cap},
		"FullJitter":           FullJitter{Base: base, Cap: cap, Rand: r},
		"EqualJitter":          EqualJitter{Base: base, Cap: cap, Rand: r},
		"DecorrelatedJitter":   DecorrelatedJitter{Base: base, Cap: cap, Rand: r},
		"DecorrelatedLiteral":  DecorrelatedJitter{Base: base, Cap: cap, Rand: r, Literal: true},
		"DecorrelatedJitterV2": DecorrelatedJitterV2{MedianFirst: base, Cap: cap, Rand: r},
		"Randomized":           Randomized{Initial: base, Multiplier: 1.5, Factor: 0.5, Cap: cap, Rand: r},
		"Constant":             Constant{D: base},
	}
}

func TestExponentialExactValues(t *testing.T) {
	s := Exponential{Base: 100 * time.Millisecond, Cap: 10 * time.Second}
	want := []time.Duration{100, 200, 400, 800, 1600, 3200, 6400, 10000, 10000}
	for attempt, w := range want {
		if got := s.Delay(attempt, 0); got != w*time.Millisecond {
			t.Errorf("attempt %d: expect %v, got %v", attempt, w*time.Millisecond, got)
		}
	}
}

// Seeded sources give the same delays on every run, so tests and
// simulations repeat exactly.
func TestSeededDelaysRepeat(t *testing.T) {
	for name := range allStrategies(1, time.Minute) {
		a, b := allStrategies(42, time.Minute)[name], allStrategies(42, time.Minute)[name]
		var prevA, prevB time.Duration
		for attempt := range 20 {
			da, db := a.Delay(attempt, prevA), b.Delay(attempt, prevB)
			if da != db {
				t.Fatalf("%s attempt %d: expect equal delays from equal seeds, got %v and %v", name, attempt, da, db)
			}
			prevA, prevB = da, db
		}
	}
}

func TestBoundsAtTheEdges(t *testing.T) {
	attempts := []int{math.MinInt, -1, 0, 1, 2, 62, 63, 64, 65, 1000, math.MaxInt}
	caps := []time.Duration{0, 1, time.Second, math.MaxInt64}
	prevs := []time.Duration{-5, 0, 1, time.Hour, math.MaxInt64 / 3, math.MaxInt64/3 + 1, math.MaxInt64}
	for _, cap := range caps {
		for name, s := range allStrategies(7, cap) {
			for _, attempt := range attempts {
				for _, prev := range prevs {
					for range 20 {
						d := s.Delay(attempt, prev)
						if d < 0 {
							t.Fatalf("%s cap=%v attempt=%d prev=%v: negative delay %v", name, cap, attempt, prev, d)
						}
						if cap > 0 && d > cap && name != "Constant" {
							t.Fatalf("%s cap=%v attempt=%d prev=%v: delay %v above the cap", name, cap, attempt, prev, d)
						}
					}
				}
			}
		}
	}
}

func TestHugeBaseSaturates(t *testing.T) {
	for _, s := range []Strategy{
		Exponential{Base: math.MaxInt64},
		FullJitter{Base: math.MaxInt64, Rand: NewRandom(1)},
		EqualJitter{Base: math.MaxInt64 / 2, Rand: NewRandom(1)},
		Randomized{Initial: math.MaxInt64, Factor: 0.5, Rand: NewRandom(1)},
	} {
		for _, attempt := range []int{0, 1, 64, math.MaxInt} {
			if d := s.Delay(attempt, 0); d < 0 {
				t.Fatalf("%T attempt %d: negative %v", s, attempt, d)
			}
		}
	}
}

func TestZeroBaseMeansNoDelay(t *testing.T) {
	for _, s := range []Strategy{Exponential{}, FullJitter{}, EqualJitter{}, DecorrelatedJitter{}, DecorrelatedJitterV2{}, Randomized{}, Constant{}} {
		if d := s.Delay(5, time.Second); d != 0 {
			t.Errorf("%T: expect 0, got %v", s, d)
		}
	}
}

// sample draws n delays for one attempt.
func sample(s Strategy, attempt int, prev time.Duration, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(s.Delay(attempt, prev))
	}
	sort.Float64s(out)
	return out
}

func mean(xs []float64) float64 {
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

func near(t *testing.T, what string, want, got, tolerance float64) {
	t.Helper()
	if math.Abs(got-want) > tolerance*want {
		t.Errorf("%s: expect %.4g ± %.0f%%, got %.4g", what, want, tolerance*100, got)
	}
}

// With 20,000 draws the sample mean of a uniform distribution is within 2%
// of its expectation with overwhelming probability; the seed makes it exact.
func TestDistributions(t *testing.T) {
	const n = 20000
	base, cap := 100*time.Millisecond, 10*time.Second
	r := NewRandom(99)
	for attempt := range 9 {
		v := float64(exponential(base, cap, attempt))
		full := sample(FullJitter{Base: base, Cap: cap, Rand: r}, attempt, 0, n)
		near(t, "FullJitter mean", v/2, mean(full), 0.02)
		near(t, "FullJitter median", v/2, full[n/2], 0.03)
		equal := sample(EqualJitter{Base: base, Cap: cap, Rand: r}, attempt, 0, n)
		near(t, "EqualJitter mean", 0.75*v, mean(equal), 0.02)
		if equal[0] < v/2 {
			t.Errorf("EqualJitter: expect at least half of %v, got %v", v, equal[0])
		}
	}
	prev := 400 * time.Millisecond
	dec := sample(DecorrelatedJitter{Base: base, Cap: cap, Rand: r}, 0, prev, n)
	near(t, "DecorrelatedJitter mean", float64(base+3*prev)/2, mean(dec), 0.02)
	rnd := sample(Randomized{Initial: base, Multiplier: 2, Factor: 0.5, Rand: r}, 3, 0, n)
	near(t, "Randomized mean", float64(8*base), mean(rnd), 0.02)
	near(t, "Randomized min", float64(4*base), rnd[0], 0.01)
	near(t, "Randomized max", float64(12*base), rnd[n-1], 0.01)
}

// The inside-the-cap draw never piles delays on the cap; the literal formula
// does, which is why it is not the default.
func TestDecorrelatedCapClustering(t *testing.T) {
	base, cap := 100*time.Millisecond, time.Second
	atCap := func(s Strategy) int {
		n, prev := 0, time.Duration(0)
		for range 10000 {
			d := s.Delay(0, prev)
			if d == cap {
				n++
			}
			prev = d
		}
		return n
	}
	inside := atCap(DecorrelatedJitter{Base: base, Cap: cap, Rand: NewRandom(3)})
	literal := atCap(DecorrelatedJitter{Base: base, Cap: cap, Rand: NewRandom(3), Literal: true})
	if inside > 10 {
		t.Errorf("expect almost no delays exactly at the cap, got %d of 10000", inside)
	}
	if literal < 2000 {
		t.Errorf("expect the literal formula to pile up at the cap, got %d of 10000", literal)
	}
}

func TestDecorrelatedV2Grows(t *testing.T) {
	s := DecorrelatedJitterV2{MedianFirst: time.Second, Rand: NewRandom(5)}
	first := sample(s, 0, 0, 20001)
	// Polly's scaling constant 1/1.4 puts the median first delay at
	// f(0.5)/1.4 = 0.897 of MedianFirst; match Polly, not the name.
	wantMedian := math.Pow(2, 0.5) * math.Tanh(math.Sqrt(2)) / 1.4 * float64(time.Second)
	near(t, "median first delay", wantMedian, first[10000], 0.02)
	last := 0.0
	for attempt := range 8 {
		m := mean(sample(s, attempt, 0, 5000))
		if m <= last {
			t.Fatalf("expect mean delays to grow, attempt %d: %v after %v", attempt, m, last)
		}
		last = m
	}
}

func TestValidate(t *testing.T) {
	bad := []Strategy{
		nil,
		Exponential{Base: -1},
		FullJitter{Base: time.Second, Cap: time.Millisecond},
		EqualJitter{Cap: -1},
		DecorrelatedJitter{Base: -1},
		DecorrelatedJitterV2{MedianFirst: -1},
		Randomized{Initial: time.Second, Factor: 1.5},
		Randomized{Initial: time.Second, Multiplier: 0.5},
		Randomized{Initial: time.Second, Factor: math.NaN()},
		Constant{D: -1},
		MaxAttempts{S: Constant{}, N: -1},
		MaxAttempts{S: Constant{D: -1}, N: 1},
		Capped{S: Constant{}, Cap: -1},
		Budgeted{S: Constant{}},
		ByError{Default: Constant{D: -1}},
	}
	for _, s := range bad {
		var cfg *ConfigError
		err := Validate(s)
		if err == nil {
			t.Errorf("%#v: expect a ConfigError", s)
			continue
		}
		if !asConfigError(err, &cfg) {
			t.Errorf("%#v: expect *ConfigError, got %T", s, err)
		}
	}
	for name, s := range allStrategies(1, time.Minute) {
		if err := Validate(s); err != nil {
			t.Errorf("%s: expect valid, got %v", name, err)
		}
	}
}

func asConfigError(err error, target **ConfigError) bool {
	c, ok := err.(*ConfigError)
	*target = c
	return ok
}

// pointerStrategy is a strategy behind a pointer, without a Validate
// method: a typed nil of it is a nil strategy.
type pointerStrategy struct{ d time.Duration }

func (s *pointerStrategy) Delay(int, time.Duration) time.Duration { return s.d }

// Validate finds a nil strategy wherever it hides: a typed nil,
// FromBackOff(nil), or either inside any decorator. fifo.NewSender and
// replay.New rely on it to refuse, at construction, a strategy that would
// panic at the first retry or decision.
func TestValidateRefusesNilStrategiesInsideValues(t *testing.T) {
	for name, s := range map[string]Strategy{
		"typed nil":                    (*pointerStrategy)(nil),
		"FromBackOff(nil)":             FromBackOff(nil),
		"MaxAttempts around typed nil": MaxAttempts{S: (*pointerStrategy)(nil), N: 3},
		"Capped around FromBackOff":    Capped{S: FromBackOff(nil), Cap: time.Second},
		"Budgeted around FromBackOff":  Budgeted{S: FromBackOff(nil), B: &Budget{}},
		"ByError throttle typed nil":   ByError{Default: Constant{}, Throttle: (*pointerStrategy)(nil)},
	} {
		var ce *ConfigError
		if err := Validate(s); !errors.As(err, &ce) {
			t.Errorf("%s: expect a *ConfigError, got %v", name, err)
		}
	}
	if err := Validate(&pointerStrategy{d: time.Second}); err != nil {
		t.Errorf("a non-nil pointer strategy: expect valid, got %v", err)
	}
}

func FuzzDelayBounds(f *testing.F) {
	f.Add(0, int64(100), int64(1000), int64(0), uint64(1))
	f.Add(math.MaxInt, int64(math.MaxInt64), int64(0), int64(math.MaxInt64), uint64(2))
	f.Add(-3, int64(1), int64(1), int64(-1), uint64(3))
	f.Fuzz(func(t *testing.T, attempt int, base, cap, prev int64, seed uint64) {
		if base < 0 || cap < 0 || (cap > 0 && cap < base) {
			return // invalid settings: Validate refuses them
		}
		r := NewRandom(seed)
		b, c, p := time.Duration(base), time.Duration(cap), time.Duration(prev)
		for _, s := range []Strategy{
			Exponential{Base: b, Cap: c}, FullJitter{Base: b, Cap: c, Rand: r}, EqualJitter{Base: b, Cap: c, Rand: r},
			DecorrelatedJitter{Base: b, Cap: c, Rand: r}, DecorrelatedJitter{Base: b, Cap: c, Rand: r, Literal: true},
			DecorrelatedJitterV2{MedianFirst: b, Cap: c, Rand: r}, Randomized{Initial: b, Factor: 0.5, Cap: c, Rand: r},
		} {
			d := s.Delay(attempt, p)
			if d < 0 || (c > 0 && d > c) {
				t.Fatalf("%#v attempt=%d prev=%v: delay %v outside [0, cap]", s, attempt, p, d)
			}
		}
	})
}

// fixedRandom returns the same fraction of every range, so the tests below
// pin each strategy's arithmetic exactly, independent of any generator.
type fixedRandom float64

func (f fixedRandom) Int64N(n int64) int64 { return int64(float64(f) * float64(n-1)) }

func TestExactValuesWithFixedRandom(t *testing.T) {
	ms := time.Millisecond
	base, cap := 100*ms, 1000*ms
	cases := []struct {
		name    string
		s       Strategy
		attempt int
		prev    time.Duration
		want    time.Duration
	}{
		{"full low", FullJitter{Base: base, Cap: cap, Rand: fixedRandom(0)}, 2, 0, 0},
		{"full high", FullJitter{Base: base, Cap: cap, Rand: fixedRandom(1)}, 2, 0, 400 * ms},
		{"full capped high", FullJitter{Base: base, Cap: cap, Rand: fixedRandom(1)}, 9, 0, cap},
		{"equal low", EqualJitter{Base: base, Cap: cap, Rand: fixedRandom(0)}, 2, 0, 200 * ms},
		{"equal high", EqualJitter{Base: base, Cap: cap, Rand: fixedRandom(1)}, 2, 0, 400 * ms},
		{"decorrelated first low", DecorrelatedJitter{Base: base, Cap: cap, Rand: fixedRandom(0)}, 0, 0, base},
		{"decorrelated first high", DecorrelatedJitter{Base: base, Cap: cap, Rand: fixedRandom(1)}, 0, 0, 300 * ms},
		{"decorrelated grows from prev", DecorrelatedJitter{Base: base, Cap: cap, Rand: fixedRandom(1)}, 0, 250 * ms, 750 * ms},
		{"decorrelated inside cap", DecorrelatedJitter{Base: base, Cap: cap, Rand: fixedRandom(1)}, 0, 900 * ms, cap},
		{"decorrelated inside cap mid", DecorrelatedJitter{Base: base, Cap: cap, Rand: fixedRandom(0.5)}, 0, 900 * ms, 550 * ms},
		{"decorrelated literal mid", DecorrelatedJitter{Base: base, Cap: cap, Rand: fixedRandom(0.5), Literal: true}, 0, 900 * ms, cap},
		{"randomized low", Randomized{Initial: base, Multiplier: 2, Factor: 0.5, Rand: fixedRandom(0)}, 2, 0, 200 * ms},
		{"randomized high", Randomized{Initial: base, Multiplier: 2, Factor: 0.5, Rand: fixedRandom(1)}, 2, 0, 600 * ms},
		{"randomized capped", Randomized{Initial: base, Multiplier: 2, Factor: 0.5, Cap: 500 * ms, Rand: fixedRandom(1)}, 2, 0, 500 * ms},
		{"randomized default multiplier", Randomized{Initial: base, Rand: fixedRandom(0)}, 2, 0, 225 * ms},
	}
	for _, c := range cases {
		if got := c.s.Delay(c.attempt, c.prev); got != c.want {
			t.Errorf("%s: expect %v, got %v", c.name, c.want, got)
		}
	}
}

func TestWithRandPinsEveryJitterStrategy(t *testing.T) {
	for name, s := range allStrategies(1, time.Minute) {
		w, ok := s.(interface{ WithRand(Random) Strategy })
		if !ok {
			if name == "Exponential" || name == "Constant" {
				continue
			}
			t.Fatalf("%s: expect a WithRand method", name)
		}
		a := w.WithRand(fixedRandom(0.25)).Delay(3, time.Second)
		b := w.WithRand(fixedRandom(0.25)).Delay(3, time.Second)
		if a != b {
			t.Errorf("%s: expect the same delay from the same source, got %v and %v", name, a, b)
		}
	}
}
