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

// MaxAttempts{N} allows N retries, attempts 0 to N-1, as its doc says and as
// replay's Policy.MaxAttempts counts replays.
func TestMaxAttemptsAllowsNRetries(t *testing.T) {
	s := MaxAttempts{S: Constant{D: time.Second}, N: 3}
	for attempt := range 5 {
		d := s.Delay(attempt, 0)
		if want := attempt < 3; (d != Stop) != want {
			t.Errorf("attempt %d: expect allowed=%v, got %v", attempt, want, d)
		}
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
