package backoff

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// ErrorStrategy is a Strategy that can also see the error that caused the
// retry. Retry uses DelayFor when a strategy has it.
type ErrorStrategy interface {
	Strategy
	DelayFor(attempt int, prev time.Duration, err error) time.Duration
}

// ByError picks the strategy by the error: Throttle for throttling (SQS
// RequestThrottled, ThrottlingException, KmsThrottled, HTTP 429, …), which
// should start from a longer base, and Default for everything else
// (5xx, network errors). With MaxHint > 0 a server's retry hint
// (Retry-After) is honoured, clamped to MaxHint, when it is longer than the
// strategy's delay.
type ByError struct {
	Default  Strategy
	Throttle Strategy // nil means Default
	MaxHint  time.Duration
}

// Delay implements Strategy, without an error: Default's delay.
func (b ByError) Delay(attempt int, prev time.Duration) time.Duration {
	return b.Default.Delay(attempt, prev)
}

// DelayFor implements ErrorStrategy.
func (b ByError) DelayFor(attempt int, prev time.Duration, err error) time.Duration {
	s := b.Default
	if b.Throttle != nil && IsThrottle(err) {
		s = b.Throttle
	}
	d := s.Delay(attempt, prev)
	if d == Stop || b.MaxHint <= 0 {
		return d
	}
	if hint, ok := retryHint(err); ok && hint > d {
		return min(hint, b.MaxHint)
	}
	return d
}

// Validate checks both strategies.
func (b ByError) Validate() error {
	if err := Validate(b.Default); err != nil {
		return err
	}
	if b.Throttle != nil {
		return Validate(b.Throttle)
	}
	return nil
}

// IsThrottle reports whether err says the caller is going too fast.
func IsThrottle(err error) bool {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		switch strings.TrimPrefix(apiErr.ErrorCode(), "AWS.SimpleQueueService.") {
		case "RequestThrottled", "ThrottlingException", "Throttling", "ThrottledException",
			"KmsThrottled", "TooManyRequestsException", "RequestThrottledException",
			"RequestLimitExceeded", "SlowDown", "ProvisionedThroughputExceededException":
			return true
		}
	}
	var respErr *smithyhttp.ResponseError
	return errors.As(err, &respErr) && respErr.HTTPStatusCode() == http.StatusTooManyRequests
}

// retryHint returns how long the server asked the caller to wait: an error
// with a RetryAfter() time.Duration method, or an HTTP response with a
// Retry-After header in seconds or as a date.
func retryHint(err error) (time.Duration, bool) {
	var hinted interface{ RetryAfter() time.Duration }
	if errors.As(err, &hinted) {
		return max(hinted.RetryAfter(), 0), true
	}
	var respErr *smithyhttp.ResponseError
	if !errors.As(err, &respErr) || respErr.Response == nil || respErr.Response.Response == nil {
		return 0, false
	}
	h := respErr.Response.Header.Get("Retry-After")
	if h == "" {
		return 0, false
	}
	if secs, err := strconv.Atoi(h); err == nil && secs >= 0 {
		return time.Duration(secs) * time.Second, true
	}
	if at, err := http.ParseTime(h); err == nil {
		if d := time.Until(at); d > 0 {
			return d, true
		}
		return 0, true
	}
	return 0, false
}
