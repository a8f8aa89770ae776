package handler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sqskit/sqskit/internal/telemetry"
)

// A handler's result is its message's outcome: nil means done (deleted), an
// error means retry (released per the failure policy, or after a
// RetryAfter's delay), and two error values mean something else:
//
//   - Hold(d): keep the message invisible for d without counting a failure
//     (a scheduled retry, a replay not yet due);
//   - Escalate(reason, err) and Permanent(err): the message will never
//     succeed; park it, with its reason, on the runtime's parking queue.
//
// Both are found through wrapping (errors.As), so a middleware may wrap them.

// Hold returns the outcome that keeps a message invisible for d and then
// lets it come back, without counting a failure: no Failed hook or metric,
// no failure log. SQS keeps a message invisible at most 12 h from its
// receive, so the runtime asks for no more than what is left of that; a
// negative d is 0. On a FIFO queue the message's later group-mates wait
// behind it, as behind a failure.
func Hold(d time.Duration) error { return &HoldError{For: max(d, 0)} }

// HoldError is the outcome Hold returns.
type HoldError struct {
	For time.Duration
}

func (e *HoldError) Error() string { return fmt.Sprintf("handler: hold for %v", e.For) }

// Escalate returns the outcome that parks a message: it is sent, with
// reason and err's text in its metadata, to the runtime's parking queue (the
// operator queue: package consumer's Options.ParkingQueue, the Lambda
// adapter's LambdaOptions.Parker), and deleted only once that send
// succeeded. A runtime with no parking queue treats it as a failure and logs
// the reason; SQS's redrive policy then moves it after maxReceiveCount.
// reason is a short kebab-case word a human can filter by ("invalid-order",
// "decode-failed"); empty means ReasonPermanent.
func Escalate(reason string, err error) error {
	if reason == "" {
		reason = ReasonPermanent
	}
	return &EscalateError{Reason: reason, Err: err}
}

// Permanent returns Escalate(ReasonPermanent, err): a failure that retrying
// cannot cure.
func Permanent(err error) error { return Escalate(ReasonPermanent, err) }

// ReasonPermanent is the reason of Permanent.
const ReasonPermanent = "permanent-failure"

// ReasonDecode is the reason of a body that does not decode (JSON).
const ReasonDecode = "decode-failed"

// EscalateError is the outcome Escalate returns.
type EscalateError struct {
	Reason string
	Err    error
	// not comparable: compared by pointer, as errors are, and a comparable
	// struct costs every Lambda binary an equality function.
	_ [0]func()
}

func (e *EscalateError) Error() string {
	if e.Err == nil {
		return "handler: escalate: " + e.Reason
	}
	return fmt.Sprintf("handler: escalate (%s): %v", e.Reason, e.Err)
}

func (e *EscalateError) Unwrap() error { return e.Err }

// ErrDecode matches the failure of a body that does not decode into the
// handler's type (JSON): it is permanent (Escalate with ReasonDecode).
var ErrDecode = errors.New("handler: decode body")

// HoldFor returns the delay of a Hold outcome in err's chain.
func HoldFor(err error) (time.Duration, bool) {
	if h, _ := outcomeIn(err); h != nil {
		return h.For, true
	}
	return 0, false
}

// EscalationOf returns the Escalate outcome in err's chain, or nil. A Hold
// found first in the chain wins: the handler asked to keep the message.
func EscalationOf(err error) *EscalateError {
	_, esc := outcomeIn(err)
	return esc
}

// outcomeIn returns the first Hold or Escalate outcome in err's chain.
func outcomeIn(err error) (hold *HoldError, esc *EscalateError) {
	telemetry.Walk(err, func(e error) bool {
		switch v := e.(type) {
		case *HoldError:
			hold = v
		case *EscalateError:
			esc = v
		}
		return hold != nil || esc != nil
	})
	return hold, esc
}

// Parker holds and parks messages for the Lambda adapter, which links no
// SQS client of its own: consumer.NewParker is one over an SQS client. Set
// it as LambdaOptions.Parker; without it, Hold and Escalate outcomes are
// failures reported to Lambda.
type Parker interface {
	// Hold makes m invisible for d (within 12 h of its receive).
	Hold(ctx context.Context, m *Message, d time.Duration) error
	// Park sends m, with reason and cause in its metadata, to the parking
	// queue, and returns nil once the parking queue acknowledged it.
	Park(ctx context.Context, m *Message, reason string, cause error) error
}
