package backoff

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// recordDelays collects the delays Retry waits, through Notify.
func recordDelays(delays *[]time.Duration) func(*RetryOptions) {
	return func(o *RetryOptions) {
		o.Notify = func(_ error, d time.Duration) { *delays = append(*delays, d) }
	}
}

func TestRetrySucceedsAfterFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var delays []time.Duration
		calls := 0
		start := time.Now()
		err := Retry(context.Background(), Exponential{Base: time.Second}, func(context.Context) error {
			calls++
			if calls < 4 {
				return errors.New("transient")
			}
			return nil
		}, recordDelays(&delays))
		if err != nil || calls != 4 {
			t.Fatalf("expect success on call 4, got %d calls, %v", calls, err)
		}
		want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}
		if fmt.Sprint(delays) != fmt.Sprint(want) {
			t.Fatalf("expect delays %v, got %v", want, delays)
		}
		if waited := time.Since(start); waited != 7*time.Second {
			t.Errorf("expect the delays to be waited, 7s in all, got %v", waited)
		}
	})
}

func TestRetryPermanentStopsAtOnce(t *testing.T) {
	base := errors.New("bad input")
	calls := 0
	err := Retry(context.Background(), Constant{D: time.Hour}, func(context.Context) error {
		calls++
		return Permanent(base)
	})
	if err != base || calls != 1 {
		t.Fatalf("expect the unwrapped error after 1 call, got %v after %d", err, calls)
	}
	if Permanent(nil) != nil {
		t.Error("expect Permanent(nil) to be nil")
	}
}

func TestRetryStopReturnsLastError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		last := errors.New("still failing")
		var delays []time.Duration
		err := Retry(context.Background(), MaxAttempts{S: Constant{D: time.Millisecond}, N: 2}, func(context.Context) error { return last }, recordDelays(&delays))
		if err != last || len(delays) != 2 {
			t.Fatalf("expect the last error after 2 retries, got %v and %d notifications", err, len(delays))
		}
	})
}

func TestRetryCancelledWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		failure := errors.New("down")
		done := make(chan error, 1)
		calls := 0
		go func() {
			done <- Retry(ctx, Constant{D: time.Hour}, func(context.Context) error { calls++; return failure })
		}()
		synctest.Wait() // Retry waits out its hour
		cancel()
		err := <-done
		if !errors.Is(err, context.Canceled) || !errors.Is(err, failure) {
			t.Fatalf("expect both the failure and context.Canceled, got %v", err)
		}
		if calls != 1 {
			t.Errorf("expect no call after the cancellation, got %d", calls)
		}
	})
}

func TestRetryRealTimerDoesNotLeak(t *testing.T) {
	calls := 0
	err := Retry(context.Background(), Constant{D: time.Millisecond}, func(context.Context) error {
		calls++
		if calls == 3 {
			return nil
		}
		return errors.New("again")
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A nil strategy, a nil op, a nil pointer strategy or an invalid strategy
// is a *ConfigError before any call, never a panic.
func TestRetryRefusesBadInputs(t *testing.T) {
	calls := 0
	op := func(context.Context) error { calls++; return errors.New("fails") }
	cases := []struct {
		name  string
		s     Strategy
		op    func(context.Context) error
		field string
	}{
		{"nil strategy", nil, op, "strategy"},
		{"nil pointer strategy", (*FullJitter)(nil), op, "strategy"},
		{"nil op", Constant{D: time.Millisecond}, nil, "op"},
		{"negative base", Exponential{Base: -time.Second}, op, "Base"},
	}
	for _, c := range cases {
		err := Retry(context.Background(), c.s, c.op)
		var cfg *ConfigError
		if !errors.As(err, &cfg) || cfg.Field != c.field {
			t.Errorf("%s: expect a ConfigError on %s, got %v", c.name, c.field, err)
		}
	}
	if calls != 0 {
		t.Errorf("expect op never called, got %d calls", calls)
	}
}

func TestByError(t *testing.T) {
	s := ByError{Default: Constant{D: time.Second}, Throttle: Constant{D: 10 * time.Second}, MaxHint: time.Minute}
	throttled := &smithy.OperationError{Err: &types.RequestThrottled{}}
	kms := &smithy.GenericAPIError{Code: "KmsThrottled"}
	legacy := &smithy.GenericAPIError{Code: "AWS.SimpleQueueService.RequestThrottled"}
	server := &smithy.GenericAPIError{Code: "InternalFailure", Fault: smithy.FaultServer}
	for _, err := range []error{throttled, kms, legacy, httpError(429, "")} {
		if got := s.DelayFor(0, 0, err); got != 10*time.Second {
			t.Errorf("%v: expect the throttle delay, got %v", err, got)
		}
	}
	if got := s.DelayFor(0, 0, server); got != time.Second {
		t.Errorf("expect the default delay for a server error, got %v", got)
	}
	if got := s.DelayFor(0, 0, httpError(503, "30")); got != 30*time.Second {
		t.Errorf("expect the 30 s hint, got %v", got)
	}
	if got := s.DelayFor(0, 0, httpError(503, "3600")); got != time.Minute {
		t.Errorf("expect the hint clamped to a minute, got %v", got)
	}
	if got := s.DelayFor(0, 0, httpError(503, "garbage")); got != time.Second {
		t.Errorf("expect a bad hint ignored, got %v", got)
	}
}

func httpError(status int, retryAfter string) error {
	resp := &http.Response{StatusCode: status, Header: http.Header{}}
	if retryAfter != "" {
		resp.Header.Set("Retry-After", retryAfter)
	}
	return &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: resp}, Err: errors.New("status")}
}

func TestBudget(t *testing.T) {
	if _, err := NewBudget(0, 1, 1); err == nil {
		t.Fatal("expect a zero capacity to be refused")
	}
	b, _ := NewBudget(10, 5, 1)
	s := Budgeted{S: Constant{D: time.Millisecond}, B: b}
	if s.Delay(0, 0) == Stop || s.Delay(1, 0) == Stop {
		t.Fatal("expect two retries from a budget of 10 at cost 5")
	}
	if s.Delay(2, 0) != Stop {
		t.Fatal("expect Stop from an empty budget")
	}
	for range 5 {
		s.Success()
	}
	if b.Tokens() != 5 || s.Delay(3, 0) == Stop {
		t.Fatalf("expect refunds to allow a retry, tokens %d", b.Tokens())
	}
	for range 100 {
		b.Success()
	}
	if b.Tokens() != 10 {
		t.Errorf("expect refunds to stop at capacity, got %d", b.Tokens())
	}
}

// Shared by many goroutines, a budget hands out exactly capacity/cost
// retries.
func TestBudgetConcurrent(t *testing.T) {
	b, _ := NewBudget(1000, 5, 1)
	var wg sync.WaitGroup
	var mu sync.Mutex
	granted := 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				if b.TryRetry() {
					mu.Lock()
					granted++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if granted != 200 {
		t.Fatalf("expect exactly 200 retries, got %d", granted)
	}
}

func TestRetryRefundsBudgetOnSuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := NewBudget(10, 5, 3)
		calls := 0
		_ = Retry(context.Background(), Budgeted{S: Constant{D: time.Millisecond}, B: b}, func(context.Context) error {
			calls++
			if calls == 1 {
				return errors.New("once")
			}
			return nil
		})
		if b.Tokens() != 8 {
			t.Fatalf("expect 10 - 5 + 3 tokens, got %d", b.Tokens())
		}
	})
}

// A nil option function is skipped, as in every sqskit constructor: an
// option left unset by a condition must not panic.
func TestRetrySkipsNilOptionFunc(t *testing.T) {
	calls := 0
	err := Retry(context.Background(), Constant{D: 0}, func(context.Context) error { calls++; return nil }, nil)
	if err != nil || calls != 1 {
		t.Fatalf("expect one successful call, got %d, %v", calls, err)
	}
}
