package handler

import (
	"context"
	"fmt"
	"time"

	"github.com/sqskit/sqskit/internal/dispatch"
)

// outcome is how a message of an invocation ended, for its hooks and
// metrics; what Lambda is told is its result (nil: delete it).
type outcome uint8

const (
	outcomeFailed outcome = iota
	outcomeHandled
	outcomeHeld   // result: failed, so Lambda keeps it; its visibility is the hold
	outcomeParked // result: nil, so Lambda deletes it; the parking queue has it
)

// applied is a Hold or Escalate outcome the Parker carried out.
type applied struct {
	kind   outcome
	hold   time.Duration
	reason string
}

// apply carries out message i's Hold or Escalate outcome through the
// Parker, records how it ended, and returns what Lambda is told. Without a
// Parker, or when the Parker fails or panics, the outcome is a failure.
func (inv *invocation) apply(ctx context.Context, i int, err error) error {
	if err == nil || inv.parker == nil {
		return err
	}
	hold, esc := outcomeIn(err)
	if hold == nil && esc == nil {
		return err
	}
	// The message as received, whatever the handler wrote to its copy.
	perr := dispatch.Invoke(ctx, func(ctx context.Context, m *Message) error {
		if hold != nil {
			return inv.parker.Hold(ctx, m, hold.For)
		}
		return inv.parker.Park(ctx, m, esc.Reason, esc.Err)
	}, &inv.originals[i], panicked)
	switch {
	case perr != nil:
		return fmt.Errorf("handler: the Parker failed (%w): %w", err, perr)
	case hold != nil:
		inv.applied[i] = applied{kind: outcomeHeld, hold: hold.For}
		return err
	}
	inv.applied[i] = applied{kind: outcomeParked, reason: esc.Reason}
	return nil
}

// applyAll is apply for a batch handler's results.
func (inv *invocation) applyAll(ctx context.Context, errs []error) {
	for i := range errs {
		errs[i] = inv.apply(ctx, i, errs[i])
	}
}
