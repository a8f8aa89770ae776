package backoff

import (
	"fmt"
	"sync/atomic"
	"time"
)

// Budget is a token bucket shared by many callers to bound retries: each
// retry spends RetryCost tokens, each success refunds SuccessRefund, up to
// Capacity. When the bucket is empty retries stop, so a failing dependency
// sees at most a bounded stream of retries instead of a storm — which jitter
// alone does not give. It is safe for concurrent use.
type Budget struct {
	tokens   atomic.Int64
	capacity int64
	cost     int64
	refund   int64
}

// NewBudget returns a full budget. The AWS SDK's retryer uses capacity 500,
// cost 5 and refund 1.
func NewBudget(capacity, retryCost, successRefund int) (*Budget, error) {
	if capacity <= 0 || retryCost <= 0 || successRefund < 0 {
		return nil, &ConfigError{Strategy: "Budget", Reason: fmt.Sprintf("needs capacity > 0, retry cost > 0 and refund ≥ 0 (got %d, %d, %d)", capacity, retryCost, successRefund)}
	}
	b := &Budget{capacity: int64(capacity), cost: int64(retryCost), refund: int64(successRefund)}
	b.tokens.Store(b.capacity)
	return b, nil
}

// TryRetry spends a retry's tokens and reports whether there were enough.
func (b *Budget) TryRetry() bool {
	for {
		t := b.tokens.Load()
		if t < b.cost {
			return false
		}
		if b.tokens.CompareAndSwap(t, t-b.cost) {
			return true
		}
	}
}

// Success refunds tokens for a call that succeeded.
func (b *Budget) Success() {
	for {
		t := b.tokens.Load()
		n := min(t+b.refund, b.capacity)
		if n == t || b.tokens.CompareAndSwap(t, n) {
			return
		}
	}
}

// Tokens returns the tokens left.
func (b *Budget) Tokens() int { return int(b.tokens.Load()) }

// Budgeted wraps S so that every retry spends from B, and returns Stop when B
// is empty. Unlike the other strategies it has a side effect (spending), so
// ask for a delay only when you will retry. Retry refunds B on success.
type Budgeted struct {
	S Strategy
	B *Budget
}

// Delay implements Strategy.
func (b Budgeted) Delay(attempt int, prev time.Duration) time.Duration {
	d := b.S.Delay(attempt, prev)
	if d == Stop || !b.B.TryRetry() {
		return Stop
	}
	return d
}

// DelayFor implements ErrorStrategy when S does.
func (b Budgeted) DelayFor(attempt int, prev time.Duration, err error) time.Duration {
	es, ok := b.S.(ErrorStrategy)
	if !ok {
		return b.Delay(attempt, prev)
	}
	d := es.DelayFor(attempt, prev, err)
	if d == Stop || !b.B.TryRetry() {
		return Stop
	}
	return d
}

// Success refunds the budget.
func (b Budgeted) Success() { b.B.Success() }

// WithRand returns b with S drawing from r (see WithRand); the budget is
// shared, not copied.
func (b Budgeted) WithRand(r Random) Strategy { b.S = WithRand(b.S, r); return b }

// Validate checks the wrapped strategy and that a budget is set.
func (b Budgeted) Validate() error {
	if b.B == nil {
		return &ConfigError{Strategy: "Budgeted", Field: "B", Reason: "is nil"}
	}
	return Validate(b.S)
}
