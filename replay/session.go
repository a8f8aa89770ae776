package replay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/consumer"
	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/internal/sqserr"
	"github.com/sqskit/sqskit/internal/sqsrule"
)

// session is one Run, Drain or Lambda invocation: the outcomes decided,
// until the engine reports them settled, and what they add up to.
type session struct {
	r      *Replayer
	cancel context.CancelCauseFunc // ends Run or Drain; nil in Lambda
	// receivedAt is when a Lambda invocation's batch was received at the
	// earliest: its holds count their 12 h from there. Zero in Run and
	// Drain, where the consumer counts them.
	receivedAt time.Time

	mu       sync.Mutex
	arrivals map[string]arrival  // message id → its ctx and receipt, until it is decided
	records  map[string]*record  // message id → its outcome, until the engine settles it
	seen     map[string]bool     // Drain: the messages seen in this pass
	claims   map[string]*[]*item // FIFO groups in batches under way (see claim)
	report   Report
	fatal    error
	failures int // receives in a row that failed (Drain)
}

// arrival is a message's ctx (its process span, its producer's trace) and
// when the engine received it.
type arrival struct {
	ctx context.Context
	at  time.Time
}

// record is a decided message waiting for its settlement.
type record struct {
	out      outcome
	msg      *types.Message
	decision Decision
	target   string
	received time.Time
}

func (r *Replayer) newSession(cancel context.CancelCauseFunc) *session {
	return &session{r: r, cancel: cancel, arrivals: map[string]arrival{}, records: map[string]*record{}, claims: map[string]*[]*item{}}
}

// fail ends Run or Drain with err, a call's error no retry cures.
func (s *session) fail(err error) {
	if !sqserr.Final(err) || s.cancel == nil {
		return
	}
	s.mu.Lock()
	if s.fatal == nil {
		s.fatal = err
	}
	s.mu.Unlock()
	s.cancel(err)
}

// receiveDone counts Drain's failed receives in a row and ends it at the
// fifth, or at a final error.
func (s *session) receiveDone(err error) {
	s.mu.Lock()
	if err == nil {
		s.failures = 0
		s.mu.Unlock()
		return
	}
	s.failures++
	giveUp := s.failures >= drainReceiveAttempts || sqserr.Final(err)
	if giveUp && s.fatal == nil {
		s.fatal = err
	}
	s.mu.Unlock()
	if giveUp {
		s.cancel(err)
	}
}

// holdLimit is d within 12 h of the receive, in Lambda where the adapter
// holds through the Parker; the consumer bounds its own holds.
func (s *session) holdLimit(d time.Duration, now time.Time) time.Duration {
	if s.receivedAt.IsZero() {
		return d
	}
	return min(d, max(s.receivedAt.Add(sqsrule.MaxVisibility-holdMargin).Sub(now).Truncate(time.Second), 0))
}

// holdMargin is kept off SQS's 12 h, for the clocks' difference.
const holdMargin = time.Second

// holdEnd is when a hold of d asked at now ends: the engine holds a message
// at most 12 h from its receive.
func holdEnd(received, now time.Time, d time.Duration) time.Time {
	end := now.Add(d)
	if limit := received.Add(sqsrule.MaxVisibility - holdMargin); !received.IsZero() && end.After(limit) {
		return limit
	}
	return end
}

// claim gives the batch the FIFO groups of its messages bound for a FIFO
// target from a standard DLQ, where SQS does not keep a group in one
// receive: a group another batch under way has waits, so no group is in two
// sends at once. (A FIFO DLQ keeps a group in one batch itself.) It returns
// the release of the batch's claims.
func (s *session) claim(items []*item) (release func()) {
	if sqsrule.IsFIFO(s.r.dlq) {
		return func() {}
	}
	mine := &items
	var claimed []string
	s.mu.Lock()
	for _, it := range items {
		if it.group == "" || it.out == left || it.out == skipped {
			continue
		}
		switch owner, taken := s.claims[it.group]; {
		case !taken:
			s.claims[it.group] = mine
			claimed = append(claimed, it.group)
		case owner != mine:
			it.out = waiting
		}
	}
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		for _, g := range claimed {
			delete(s.claims, g)
		}
		s.mu.Unlock()
	}
}

// record keeps a decided message's outcome for its settlement hook.
func (s *session) record(it *item) {
	s.mu.Lock()
	s.records[it.m.ID] = &record{out: it.out, msg: it.msg, decision: it.decision, target: it.target, received: it.received}
	s.mu.Unlock()
}

// settle takes the record of a settled message and counts it with count;
// nil when the message was never decided (it failed before its batch ran).
func (s *session) settle(id string, count func(rep *Report, rec *record)) *record {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := s.records[id]
	delete(s.records, id)
	delete(s.arrivals, id)
	count(&s.report, rec)
	return rec
}

// hooks are the consumer's hooks that turn its settlements into the
// replayer's outcomes, hooks and Report.
func (s *session) hooks() consumer.Hooks {
	return consumer.Hooks{
		Received: s.received,
		Deleted: func(ctx context.Context, m *handler.Message) {
			rec := s.settle(m.ID, func(rep *Report, rec *record) {
				if rec != nil && rec.out == replayed {
					rep.Replayed++
				}
			})
			if rec != nil && rec.out == replayed {
				s.replayed(ctx, rec)
			}
		},
		Parked: func(ctx context.Context, m *handler.Message, _ string) {
			rec := s.settle(m.ID, func(rep *Report, _ *record) { rep.Escalated++ })
			if rec != nil {
				s.escalated(ctx, rec)
			}
		},
		Held: func(ctx context.Context, m *handler.Message, d time.Duration) {
			rec := s.settle(m.ID, countHeld)
			if rec != nil && rec.out == held {
				s.held(ctx, rec, holdEnd(rec.received, time.Now(), d))
			}
		},
		Failed: func(ctx context.Context, m *handler.Message, err error) {
			s.failed(ctx, m, err)
		},
		DeleteFailed: func(ctx context.Context, m *handler.Message, err error) {
			target := "its target"
			if rec := s.peek(m.ID); rec != nil && rec.target != "" {
				target = rec.target
			}
			s.failed(ctx, m, fmt.Errorf("replay: sent to %s, but the delete from the DLQ failed, so it will be sent again: %w", target, err))
		},
		LeaseLost: func(ctx context.Context, m *handler.Message, err error) {
			s.failed(ctx, m, err)
		},
	}
}

func (s *session) received(ctx context.Context, m *handler.Message) {
	s.mu.Lock()
	s.arrivals[m.ID] = arrival{ctx: ctx, at: time.Now()}
	s.mu.Unlock()
}

func (s *session) peek(id string) *record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.records[id]
}

// countHeld counts a message the engine held for its outcome.
func countHeld(rep *Report, rec *record) {
	if rec == nil {
		return
	}
	switch rec.out {
	case held:
		rep.Held++
	case waiting:
		rep.Waiting++
	case skipped:
		rep.Skipped++
	case dryRun:
		rep.Decisions = append(rep.Decisions, rec.decision)
		if rec.decision.Action == Escalate {
			rep.Escalated++
		} else {
			rep.Replayed++
		}
	}
}

// failed reports a message that did not leave the DLQ: rejected when the
// operator queue took its escalation in no form.
func (s *session) failed(ctx context.Context, m *handler.Message, err error) {
	rejected := errors.Is(err, consumer.ErrParkRejected)
	rec := s.settle(m.ID, func(rep *Report, _ *record) {
		if rejected {
			rep.Rejected++
		} else {
			rep.Failed++
		}
	})
	msg := sdkMessage(m)
	if rec != nil {
		msg = rec.msg
	}
	if rejected {
		var d Decision
		if rec != nil {
			d = rec.decision
		}
		s.rejected(ctx, msg, d, fmt.Errorf("%w: %w", ErrRejected, err))
		return
	}
	log, h := s.r.opts.Logger, s.r.opts.Hooks
	log.LogAttrs(ctx, slog.LevelWarn, "replay: failed; left in the DLQ", slog.String("message_id", m.ID), slog.Any("error", err))
	if h.Failed != nil {
		h.Failed(ctx, msg, err)
	}
}

func (s *session) replayed(ctx context.Context, rec *record) {
	d := rec.decision
	s.r.opts.Logger.LogAttrs(ctx, slog.LevelInfo, "replay: replayed", slog.String("message_id", *rec.msg.MessageId),
		slog.Int("attempt", d.Attempt), slog.Duration("delay", d.Delay))
	if h := s.r.opts.Hooks.Replayed; h != nil {
		h(ctx, rec.msg, d, rec.target)
	}
}

func (s *session) escalated(ctx context.Context, rec *record) {
	d := rec.decision
	s.r.opts.Logger.LogAttrs(ctx, slog.LevelWarn, "replay: escalated", slog.String("message_id", *rec.msg.MessageId),
		slog.String("reason", string(d.Reason)), slog.String("detail", d.Detail))
	if h := s.r.opts.Hooks.Escalated; h != nil {
		h(ctx, rec.msg, d)
	}
}

func (s *session) held(ctx context.Context, rec *record, until time.Time) {
	s.r.opts.Logger.LogAttrs(ctx, slog.LevelDebug, "replay: held in the DLQ until due", slog.String("message_id", *rec.msg.MessageId), slog.Time("until", until))
	if h := s.r.opts.Hooks.Held; h != nil {
		h(ctx, rec.msg, rec.decision, until)
	}
}

func (s *session) rejected(ctx context.Context, msg *types.Message, d Decision, err error) {
	s.r.opts.Logger.LogAttrs(ctx, slog.LevelError, "replay: SQS accepts the message in no form; left in the DLQ for a human",
		slog.String("message_id", *msg.MessageId), slog.String("reason", string(d.Reason)), slog.Any("error", err))
	if h := s.r.opts.Hooks.Rejected; h != nil {
		h(ctx, msg, d, err)
	}
}

// sdkMessage is m in the SDK's form.
func sdkMessage(m *handler.Message) *types.Message {
	id, handle, body := m.ID, m.ReceiptHandle, m.Body
	return &types.Message{MessageId: &id, ReceiptHandle: &handle, Body: &body, Attributes: m.Attributes,
		MessageAttributes: consumer.SDKAttributes(m.MessageAttributes)}
}
