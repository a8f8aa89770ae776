package handler

import (
	"context"
	"time"

	"github.com/aws/smithy-go/tracing"

	"github.com/sqskit/sqskit/internal/telemetry"
)

// invocation is one Lambda invocation's messages, with each one's ctx (its
// producer's trace context and its process span) and the telemetry that
// reports on them.
type invocation struct {
	l    *Lambda
	msgs []*Message // the handlers', which they may write to
	// ids and groups are the adapter's own copies of each message's id
	// (what the response names) and FIFO group, never read from msgs once
	// a handler may have them.
	ids, groups []string
	fifo        bool
	ctxs        []context.Context
	spans       []telemetry.Span // nil when tracing is off
	tracer      telemetry.Tracer
	attrs       *telemetry.Attrs // metric attributes of the event source; nil when metrics are off
	// How each message ended (see apply), and, with a Parker, each as
	// received: what a park sends, whatever the handler writes to its
	// fields (not into its attribute maps, which are shared).
	parker    Parker
	originals []Message // with a Parker: each message as received
	applied   []applied // with a Parker: each Hold or Escalate carried out
}

// begin gives each message its ctx and process span, records it as
// received, and calls the Received hook.
func (inv *invocation) begin(ctx context.Context, source string) {
	l := inv.l
	inv.ctxs = make([]context.Context, len(inv.msgs))
	if inv.parker != nil {
		inv.applied = make([]applied, len(inv.msgs))
	}
	inv.tracer = l.tracer.ForQueue(source)
	if inv.tracer.On() {
		inv.spans = make([]telemetry.Span, len(inv.msgs))
	}
	m := &l.metrics
	if m.On {
		inv.attrs = telemetry.QueueAttrs(source)
		m.Consumed.Add(ctx, int64(len(inv.msgs)), inv.attrs)
	}
	now := time.Now()
	for i, msg := range inv.msgs {
		mctx := Extract(ctx, l.opts.Propagator, msg)
		if inv.spans != nil {
			var span telemetry.Span
			mctx, span = inv.tracer.Start(mctx, tracing.SpanKindConsumer, telemetry.OperationProcess, telemetry.OperationProcess)
			span.Set(telemetry.AttrMessageID, inv.ids[i])
			inv.spans[i] = span
		}
		inv.ctxs[i] = mctx
		if m.On {
			if age, ok := telemetry.Age(msg.Attributes["SentTimestamp"], now); ok {
				m.MessageAge.Seconds(ctx, age, inv.attrs)
			}
		}
		l.opts.Hooks.received(mctx, msg)
	}
}

// settle reports message i's outcome once: its hook, its metrics, and the
// end of its process span. ran says whether its handler ran (took long).
func (inv *invocation) settle(i int, err error, took time.Duration, ran bool) {
	l, ctx, msg := inv.l, inv.ctxs[i], inv.msgs[i]
	kind := outcomeFailed
	if err == nil {
		kind = outcomeHandled
	}
	var a applied
	if inv.applied != nil && inv.applied[i].kind != outcomeFailed {
		a = inv.applied[i]
		kind = a.kind
	}
	switch kind {
	case outcomeHandled:
		l.opts.Hooks.handled(ctx, msg, took)
	case outcomeHeld:
		l.opts.Hooks.held(ctx, msg, a.hold)
	case outcomeParked:
		l.opts.Hooks.parked(ctx, msg, a.reason)
	default:
		l.opts.Hooks.failed(ctx, msg, err)
	}
	if m := &l.metrics; m.On && kind != outcomeHeld && kind != outcomeParked {
		attrs := inv.attrs
		if kind == outcomeHandled {
			m.Handled.Add(ctx, 1, attrs)
		} else {
			attrs = attrs.With(telemetry.KV{Key: telemetry.AttrErrorType, Value: ErrorType(err)})
			m.Failed.Add(ctx, 1, attrs)
		}
		if ran {
			m.ProcessDuration.Seconds(ctx, took, attrs)
		}
	}
	if inv.spans != nil {
		if kind == outcomeFailed {
			inv.spans[i].Fail(ErrorType(err))
		}
		inv.spans[i].End(nil)
	}
}
