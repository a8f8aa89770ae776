package backoff

import (
	"testing"
	"time"
)

// Decorators pass a seeded source through to the strategy they wrap, so a
// delay recomputed from the same seed is the same delay: replay relies on it
// to find a held message's due time again on every receive.
func TestDecoratorsPassTheSourceThrough(t *testing.T) {
	budget, err := NewBudget(1_000_000, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	inner := FullJitter{Base: time.Second, Cap: time.Hour}
	for name, s := range map[string]Strategy{
		"MaxAttempts": MaxAttempts{S: inner, N: 10},
		"Capped":      Capped{S: inner, Cap: 30 * time.Minute},
		"Budgeted":    Budgeted{S: inner, B: budget},
		"Capped(MaxAttempts(DecorrelatedJitter))": Capped{S: MaxAttempts{S: DecorrelatedJitter{Base: time.Second, Cap: time.Hour}, N: 10}, Cap: 30 * time.Minute},
	} {
		var first []time.Duration
		for try := range 5 {
			for attempt := range 6 {
				d := WithRand(s, NewRandom(42)).Delay(attempt, 10*time.Second)
				if try == 0 {
					first = append(first, d)
				} else if d != first[attempt] {
					t.Fatalf("%s attempt %d: expect %v from the same seed, got %v on try %d", name, attempt, first[attempt], d, try)
				}
			}
		}
		distinct := map[time.Duration]bool{}
		for seed := range uint64(20) {
			distinct[WithRand(s, NewRandom(seed)).Delay(5, 10*time.Second)] = true
		}
		if len(distinct) < 10 {
			t.Errorf("%s: expect other seeds to draw other delays, got %d distinct of 20", name, len(distinct))
		}
	}
}

// A strategy without a source comes back as it is.
func TestWithRandLeavesOthersAlone(t *testing.T) {
	s := Exponential{Base: time.Second}
	if got := WithRand(s, NewRandom(1)); got != Strategy(s) {
		t.Fatalf("expect the strategy unchanged, got %#v", got)
	}
	capped := WithRand(Capped{S: s, Cap: time.Minute}, NewRandom(1)).(Capped)
	if capped.S != Strategy(s) || capped.Cap != time.Minute {
		t.Fatalf("expect the decorator kept, got %#v", capped)
	}
}

// MaxAttempts{N} allows N retries, attempts 0 to N-1, each with the delay
// of the strategy it wraps, as its doc says and as replay's
// Policy.MaxAttempts counts replays; Stop from attempt N.
func TestMaxAttemptsAllowsNRetries(t *testing.T) {
	for _, n := range []int{2, 3} {
		s := MaxAttempts{S: Constant{D: time.Second}, N: n}
		for attempt := range n + 2 {
			want := Stop
			if attempt < n {
				want = time.Second
			}
			if d := s.Delay(attempt, 0); d != want {
				t.Errorf("N=%d attempt %d: expect %v, got %v", n, attempt, want, d)
			}
		}
	}
}

// Capped clamps the delay of the strategy it wraps to Cap, and passes Stop
// through untouched.
func TestCappedClampsAndPassesStopThrough(t *testing.T) {
	c := Capped{S: Exponential{Base: time.Second}, Cap: 3 * time.Second}
	if got := c.Delay(5, 0); got != 3*time.Second {
		t.Errorf("Capped: expect 3s, got %v", got)
	}
	m := MaxAttempts{S: Constant{D: time.Second}, N: 2}
	if got := (Capped{S: m, Cap: time.Hour}).Delay(9, 0); got != Stop {
		t.Errorf("Capped: expect Stop to pass through, got %v", got)
	}
}

// The budget a Budgeted strategy spends is shared with the reseeded copy, not
// copied: reseeding must not mint tokens.
func TestBudgetedWithRandSharesTheBudget(t *testing.T) {
	b, err := NewBudget(2, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	s := Budgeted{S: FullJitter{Base: time.Second}, B: b}
	for i := range 3 {
		d := WithRand(s, NewRandom(uint64(i))).Delay(0, 0)
		if (d == Stop) != (i == 2) {
			t.Fatalf("retry %d: expect Stop only once two tokens are spent, got %v", i, d)
		}
	}
}
