package fifo

import (
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/internal/sqserr"
)

// mayHaveStored reports whether a failed request may still have stored its
// messages: SQS answered with a server error, or no answer came at all (a
// network error, a timeout, a cancellation in flight). A throttle, a client
// error or a request the SDK refused to send is a definite no.
func mayHaveStored(err error) bool {
	if backoff.IsThrottle(err) {
		return false
	}
	var invalid smithy.InvalidParamsError
	if errors.As(err, &invalid) {
		return false
	}
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		return true
	}
	return apiErr.ErrorFault() == smithy.FaultServer || sqserr.Transient(err)
}

// callUnconfirmed counts the requests of a failed call that may have stored
// its messages. When the SDK gave up after several requests
// (MaxAttemptsError), the earlier ones failed with retryable errors of a kind
// it does not report, so they count as unconfirmed.
func callUnconfirmed(err error) int {
	n := 0
	var exhausted *retry.MaxAttemptsError
	if errors.As(err, &exhausted) && exhausted.Attempt > 1 {
		n = exhausted.Attempt - 1
	}
	if mayHaveStored(err) {
		n++
	}
	return n
}

// sdkUnconfirmed counts the requests the SDK retried inside a successful call
// after a failure that may have stored the messages: on a standard queue,
// each may have left a copy.
func sdkUnconfirmed(md middleware.Metadata) int {
	attempts, ok := retry.GetAttemptResults(md)
	if !ok {
		return 0
	}
	n := 0
	for _, a := range attempts.Results {
		if a.Err != nil && mayHaveStored(a.Err) {
			n++
		}
	}
	return n
}
