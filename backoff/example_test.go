package backoff_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sqskit/sqskit/backoff"
)

// Exponential without jitter gives exact delays, doubling up to the cap.
func ExampleExponential() {
	s := backoff.Exponential{Base: 100 * time.Millisecond, Cap: time.Second}
	for attempt := range 6 {
		fmt.Println(attempt, s.Delay(attempt, 0))
	}
	// Output:
	// 0 100ms
	// 1 200ms
	// 2 400ms
	// 3 800ms
	// 4 1s
	// 5 1s
}

// Full jitter draws each delay from [0, min(cap, base·2^attempt)]; the
// bounds are what a caller can rely on.
func ExampleFullJitter() {
	s := backoff.FullJitter{Base: 100 * time.Millisecond, Cap: time.Second}
	for attempt := range 5 {
		d := s.Delay(attempt, 0)
		limit := backoff.Exponential{Base: 100 * time.Millisecond, Cap: time.Second}.Delay(attempt, 0)
		fmt.Printf("attempt %d: within [0, %v]: %v\n", attempt, limit, d >= 0 && d <= limit)
	}
	// Output:
	// attempt 0: within [0, 100ms]: true
	// attempt 1: within [0, 200ms]: true
	// attempt 2: within [0, 400ms]: true
	// attempt 3: within [0, 800ms]: true
	// attempt 4: within [0, 1s]: true
}

// Retry runs an operation until it succeeds, with delays from a strategy; a
// Permanent error ends it at once.
func ExampleRetry() {
	calls := 0
	err := backoff.Retry(context.Background(),
		backoff.MaxAttempts{S: backoff.FullJitter{Base: time.Millisecond, Cap: 10 * time.Millisecond}, N: 5},
		func(context.Context) error {
			calls++
			if calls < 3 {
				return errors.New("temporary")
			}
			return nil
		})
	fmt.Println(calls, err)

	err = backoff.Retry(context.Background(), backoff.Constant{D: time.Hour}, func(context.Context) error {
		return backoff.Permanent(errors.New("invalid input"))
	})
	fmt.Println(err)
	// Output:
	// 3 <nil>
	// invalid input
}

// A Budget shared by every caller bounds retries when a dependency is down.
func ExampleBudget() {
	budget, _ := backoff.NewBudget(10, 5, 1)
	s := backoff.Budgeted{S: backoff.Constant{D: time.Millisecond}, B: budget}
	for attempt := range 3 {
		fmt.Println(attempt, s.Delay(attempt, 0) == backoff.Stop)
	}
	// Output:
	// 0 false
	// 1 false
	// 2 true
}
