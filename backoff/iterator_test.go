package backoff

import (
	"testing"
	"time"
)

func TestIteratorWalksAttemptsAndPrev(t *testing.T) {
	it := NewIterator(Exponential{Base: time.Second, Cap: 5 * time.Second})
	for _, want := range []time.Duration{1, 2, 4, 5, 5} {
		if got := it.NextBackOff(); got != want*time.Second {
			t.Fatalf("expect %v, got %v", want*time.Second, got)
		}
	}
	if it.Attempt() != 5 {
		t.Errorf("expect attempt 5, got %d", it.Attempt())
	}
	it.Reset()
	if got := it.NextBackOff(); got != time.Second {
		t.Errorf("expect the first delay after Reset, got %v", got)
	}
	dec := NewIterator(DecorrelatedJitter{Base: time.Millisecond, Cap: time.Hour, Rand: NewRandom(1)})
	prev := dec.NextBackOff()
	for range 50 {
		d := dec.NextBackOff()
		if d > 3*prev || d < time.Millisecond {
			t.Fatalf("expect U(base, 3·%v), got %v", prev, d)
		}
		prev = d
	}
}

func TestIteratorMaxElapsedExcludesWork(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	it := NewIterator(Constant{D: time.Second}).WithMaxElapsed(10*time.Second, clock)
	for range 5 {
		if it.NextBackOff() != time.Second {
			t.Fatal("expect a delay within the budget")
		}
		now = now.Add(time.Second)
	}
	// A long poll that returned messages: 60 s of useful work.
	now = now.Add(60 * time.Second)
	it.Worked(60 * time.Second)
	for range 4 {
		if it.NextBackOff() != time.Second {
			t.Fatal("expect work not to count against the budget")
		}
		now = now.Add(time.Second)
	}
	if got := it.NextBackOff(); got != time.Second {
		t.Fatalf("expect the tenth second to fit, got %v", got)
	}
	now = now.Add(time.Second)
	if got := it.NextBackOff(); got != Stop {
		t.Fatalf("expect Stop past 10 s of waiting, got %v", got)
	}
	it.Reset()
	if got := it.NextBackOff(); got != time.Second {
		t.Fatalf("expect Reset to restart the budget, got %v", got)
	}
}

// An iterator over no strategy stops at once, and again after Reset,
// counting no attempt: NewIterator(nil) never panics.
func TestIteratorOverNilStrategyStops(t *testing.T) {
	it := NewIterator(nil)
	if d := it.NextBackOff(); d != Stop {
		t.Fatalf("expect Stop, got %v", d)
	}
	it.Reset()
	if d := it.NextBackOff(); d != Stop || it.Attempt() != 0 {
		t.Fatalf("expect Stop after Reset and no attempt counted, got %v at attempt %d", d, it.Attempt())
	}
}
