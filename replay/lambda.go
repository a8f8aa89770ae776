package replay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqskit/sqskit/consumer"
	"github.com/sqskit/sqskit/handler"
)

// ErrMalformedEvent matches the error HandleLambda returns for an event
// Lambda should not have sent (a record without a messageId, which cannot
// be reported on its own): the whole batch fails and Lambda retries it.
var ErrMalformedEvent = errors.New("replay: malformed SQS event")

// lambdaReceiveAllowance is how long before an invocation its event source
// mapping may have received the batch: a batching window of up to 5 min,
// and the invocation's own start. Holds in Lambda count their 12 h from
// that far back.
const lambdaReceiveAllowance = 15 * time.Minute

// HandleLambda handles a Lambda invocation whose event source is the DLQ
// (with ReportBatchItemFailures), or an EventBridge Pipes target reading it
// (the bare array of records): an events.SQSEvent converts with
// handler.Event(e). It runs the policy on handler.NewBatchLambda, with a
// consumer.Parker over the replayer's client: replayed and escalated
// messages are reported as successes, and Lambda deletes them; held ones
// are held through the Parker (their 12 h count from 15 minutes before the
// invocation, the event source mapping's receive) and reported as
// failures, as are waiting, skipped, failed and rejected ones, so they stay
// in the DLQ. Duplicate records are handled once. RateLimit does not apply:
// the event source mapping paces Lambda. The DLQ must not have a redrive
// policy of its own: escalation is explicit.
func (r *Replayer) HandleLambda(ctx context.Context, event handler.Event) (events.SQSEventResponse, error) {
	s := r.newSession(nil)
	s.receivedAt = time.Now().Add(-lambdaReceiveAllowance)
	if err := r.resolveQueues(ctx); err != nil {
		return events.SQSEventResponse{}, err // the whole batch stays in the DLQ
	}
	parker, err := consumer.NewParker(r.client, r.resolved(r.dlq), r.resolved(r.operator), func(o *consumer.ParkerOptions) {
		o.CounterAttribute, o.MaxMessageBytes, o.Logger = r.policy.CounterAttribute, r.policy.MaxMessageBytes, r.opts.Logger
		o.TracerProvider, o.MeterProvider = r.opts.TracerProvider, r.opts.MeterProvider
	})
	if err != nil {
		return events.SQSEventResponse{}, fmt.Errorf("replay: %w", err)
	}
	l, err := handler.NewBatchLambda(s.handle, func(o *handler.LambdaOptions) {
		o.Parker = lambdaParker{s: s, p: parker}
		o.TracerProvider, o.MeterProvider, o.Logger = r.opts.TracerProvider, r.opts.MeterProvider, r.opts.Logger
		if r.opts.Propagator != nil {
			o.Propagator = r.opts.Propagator
		}
		o.Hooks = handler.Hooks{Received: s.received, Handled: s.handled, Failed: s.lambdaFailed}
	})
	if err != nil {
		return events.SQSEventResponse{}, fmt.Errorf("replay: %w", err)
	}
	resp, err := l.Handle(ctx, event)
	var malformed *handler.MalformedEventError
	if errors.As(err, &malformed) {
		return resp, fmt.Errorf("%w: %w", ErrMalformedEvent, err)
	}
	return resp, err
}

// handled reports a message the adapter reports done: a replay (an
// escalation is reported by lambdaParker once parked).
func (s *session) handled(ctx context.Context, m *handler.Message, _ time.Duration) {
	if rec := s.peek(m.ID); rec != nil && rec.out == replayed {
		s.settle(m.ID, func(*Report, *record) {})
		s.replayed(ctx, rec)
	}
}

// lambdaFailed reports a failed message, but not a hold or an escalation,
// which lambdaParker reports.
func (s *session) lambdaFailed(ctx context.Context, m *handler.Message, err error) {
	if _, hold := handler.HoldFor(err); hold || handler.EscalationOf(err) != nil {
		return
	}
	s.failed(ctx, m, err)
}

// lambdaParker is the adapter's Parker: the consumer's, holds within 12 h
// of the event source mapping's receive, the replayer's hooks, and a
// rejected message held for MaxBackoff rather than back at every visibility
// timeout.
type lambdaParker struct {
	s *session
	p *consumer.Parker
}

func (lp lambdaParker) Hold(ctx context.Context, m *handler.Message, d time.Duration) error {
	d = lp.s.holdLimit(d, time.Now())
	err := lp.p.Hold(ctx, m, d)
	rec := lp.s.peek(m.ID)
	switch {
	case err != nil:
		lp.s.failed(ctx, m, fmt.Errorf("replay: hold: %w", err))
	case rec != nil && rec.out == held:
		lp.s.settle(m.ID, func(*Report, *record) {})
		lp.s.held(ctx, rec, time.Now().Add(d))
	default:
		lp.s.settle(m.ID, func(*Report, *record) {})
	}
	return err
}

func (lp lambdaParker) Park(ctx context.Context, m *handler.Message, reason string, cause error) error {
	err := lp.p.Park(ctx, m, reason, cause)
	rec := lp.s.peek(m.ID)
	switch {
	case err == nil && rec != nil:
		lp.s.settle(m.ID, func(*Report, *record) {})
		lp.s.escalated(ctx, rec)
	case errors.Is(err, consumer.ErrParkRejected):
		if herr := lp.p.Hold(ctx, m, lp.s.holdLimit(lp.s.r.policy.MaxBackoff, time.Now())); herr != nil {
			err = fmt.Errorf("%w; its hold in the DLQ failed too, so it comes back after the visibility timeout: %v", err, herr)
		}
		lp.s.failed(ctx, m, err)
	case err != nil:
		lp.s.failed(ctx, m, err)
	}
	return err
}
