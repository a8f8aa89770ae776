package backoff_test

import (
	"errors"
	"math"
	"testing"
	"time"

	cenkalti "github.com/cenkalti/backoff/v4"

	"github.com/sqskit/sqskit/backoff"
)

// Every strategy plugs into cenkalti's Retry through an Iterator.
var _ cenkalti.BackOff = (*backoff.Iterator)(nil)

// And any cenkalti BackOff satisfies ours.
var _ backoff.BackOff = (*cenkalti.ExponentialBackOff)(nil)

func TestStopIsCenkaltiStop(t *testing.T) {
	if backoff.Stop != cenkalti.Stop {
		t.Fatalf("expect Stop %v, got %v", cenkalti.Stop, backoff.Stop)
	}
}

func TestRunsUnderCenkaltiRetry(t *testing.T) {
	it := backoff.NewIterator(backoff.MaxAttempts{S: backoff.FullJitter{Base: time.Microsecond, Cap: time.Millisecond}, N: 3})
	calls := 0
	err := cenkalti.Retry(func() error {
		calls++
		return errors.New("always")
	}, it)
	if err == nil || calls != 4 {
		t.Fatalf("expect 4 calls (1 + 3 retries) and the last error, got %d calls and %v", calls, err)
	}
	calls = 0
	if err := cenkalti.Retry(func() error {
		calls++
		if calls < 3 {
			return errors.New("not yet")
		}
		return nil
	}, backoff.NewIterator(backoff.Constant{D: time.Microsecond})); err != nil || calls != 3 {
		t.Fatalf("expect success on call 3, got %d calls and %v", calls, err)
	}
}

func TestFromCenkaltiBackOff(t *testing.T) {
	s := backoff.FromBackOff(func() backoff.BackOff {
		b := cenkalti.NewExponentialBackOff()
		b.RandomizationFactor = 0
		b.InitialInterval = 100 * time.Millisecond
		b.Multiplier = 2
		b.MaxElapsedTime = 0
		b.Reset() // cenkalti applies InitialInterval on Reset
		return b
	})
	for attempt, want := range []time.Duration{100, 200, 400, 800} {
		if got := s.Delay(attempt, 0); got != want*time.Millisecond {
			t.Errorf("attempt %d: expect %v, got %v", attempt, want*time.Millisecond, got)
		}
	}
	stopping := backoff.FromBackOff(func() backoff.BackOff { return &cenkalti.StopBackOff{} })
	if got := stopping.Delay(3, 0); got != backoff.Stop {
		t.Errorf("expect Stop to pass through, got %v", got)
	}
}

// Randomized keeps every delay within its cap and non-negative where
// cenkalti v4's exponential backoff, the same algorithm, does neither: it
// returns delays above MaxInterval, and negative delays for a huge
// MaxInterval.
func TestRandomizedStaysCappedAndNonNegativeUnlikeCenkalti(t *testing.T) {
	c := cenkalti.NewExponentialBackOff()
	c.InitialInterval, c.MaxInterval, c.Multiplier, c.RandomizationFactor, c.MaxElapsedTime = time.Second, 10*time.Second, 2, 0.5, 0
	c.Reset()
	overCap := false
	for range 200 {
		if c.NextBackOff() > 10*time.Second {
			overCap = true
		}
	}
	if !overCap {
		t.Fatal("expect cenkalti v4 to exceed its MaxInterval (it caps before randomising)")
	}
	ours := backoff.Randomized{Initial: time.Second, Multiplier: 2, Factor: 0.5, Cap: 10 * time.Second, Rand: backoff.NewRandom(1)}
	for attempt := range 200 {
		if d := ours.Delay(attempt, 0); d > 10*time.Second {
			t.Fatalf("attempt %d: expect at most the cap, got %v", attempt, d)
		}
	}

	huge := cenkalti.NewExponentialBackOff()
	huge.MaxInterval, huge.MaxElapsedTime = math.MaxInt64, 0
	huge.Reset()
	negative := false
	for range 200 {
		if huge.NextBackOff() < 0 {
			negative = true
		}
	}
	if !negative {
		t.Fatal("expect cenkalti v4 to return a negative delay with MaxInterval = MaxInt64")
	}
	hugeOurs := backoff.Randomized{Initial: 500 * time.Millisecond, Factor: 0.5, Rand: backoff.NewRandom(1)}
	for attempt := range 200 {
		if d := hugeOurs.Delay(attempt, 0); d < 0 {
			t.Fatalf("attempt %d: expect a non-negative delay, got %v", attempt, d)
		}
	}
}
