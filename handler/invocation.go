package handler

import (
	"context"
	"time"

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
	// signals carries what user extensions are told (hooks, metrics, span
	// ends) to one goroutine, so none runs under a lock or on a worker: a
	// hook that panics costs its signal, one that blocks holds back only
	// the signals behind it, and Handle waits for them no longer than its
	// ctx. Its room is every signal the invocation can send, plus the end.
	signals  chan signal
	reported chan struct{}
	began    time.Time // for the messages' age
}

// signal is one event to report: message i received (received), or
// settled with kind, or the batch handler's span ended (i < 0).
type signal struct {
	_        [0]func() // noCompare: an equality function costs a Lambda's footprint
	i        int
	received bool
	kind     outcome
	a        applied
	err      error
	took     time.Duration
	ran      bool
	failures int // the batch span's
	span     telemetry.Span
}

// send queues a signal; it never blocks, and runs no user code.
func (inv *invocation) send(s signal) {
	select {
	case inv.signals <- s:
	default: // only after the invocation ended: nobody reports any more
	}
}

// report reports the signals until the end (i == -2).
func (inv *invocation) report() {
	defer close(inv.reported)
	for s := range inv.signals {
		if s.i == -2 {
			return
		}
		inv.reportOne(s)
	}
}

// signalsGrace is how long Handle waits for its last signals when its ctx
// ended before they were queued (a handler that outlived the invocation):
// enough for hooks that do not block to be told. Otherwise it waits for
// them no longer than its ctx.
const signalsGrace = 50 * time.Millisecond

// begin gives each message its ctx and process span, records it as
// received, and calls the Received hook.
func (inv *invocation) begin(ctx context.Context, source string) {
	l := inv.l
	n := len(inv.msgs)
	inv.signals, inv.reported, inv.began = make(chan signal, 2*n+2), make(chan struct{}), time.Now()
	go inv.report()
	inv.ctxs = make([]context.Context, n)
	if inv.parker != nil {
		inv.applied = make([]applied, n)
	}
	inv.tracer = l.tracer.ForQueue(source)
	if inv.tracer.On() {
		inv.spans = make([]telemetry.Span, n)
	}
	m := &l.metrics
	if m.On {
		inv.attrs = telemetry.QueueAttrs(source)
	}
	for i, msg := range inv.msgs {
		mctx := ctx
		if l.opts.Propagator != nil {
			mctx = l.faults.Extract(ctx, l.opts.Propagator, messageCarrier{msg})
		}
		if inv.spans != nil {
			mctx, inv.spans[i] = l.startSpan(inv.tracer, mctx)
		}
		inv.ctxs[i] = mctx
		inv.send(signal{i: i, received: true})
	}
}

// settle queues the report of message i's outcome, once: its hook, its
// metrics, and the end of its process span. ran says whether its handler
// ran (took long). It runs no user code: callers may hold a lock.
func (inv *invocation) settle(i int, err error, took time.Duration, ran bool) {
	kind := outcomeFailed
	if err == nil {
		kind = outcomeHandled
	}
	var a applied
	if inv.applied != nil && inv.applied[i].kind != outcomeFailed {
		a = inv.applied[i]
		kind = a.kind
	}
	inv.send(signal{i: i, kind: kind, a: a, err: err, took: took, ran: ran})
}

// reportOne tells the extensions of one signal; a panic costs that signal.
func (inv *invocation) reportOne(s signal) {
	k := telemetry.KindMeter
	defer inv.l.faults.RecoverIn(&k)
	l := inv.l
	if s.i < 0 { // the batch span
		k = telemetry.KindTracer
		s.span.Set(telemetry.AttrBatchCount, len(inv.msgs))
		if s.failures > 0 {
			s.span.Fail("handler_error")
		}
		s.span.End(nil)
		return
	}
	i, kind, a, err, took, ran := s.i, s.kind, s.a, s.err, s.took, s.ran
	ctx, msg := inv.ctxs[i], inv.msgs[i]
	if s.received {
		if m := &l.metrics; m.On {
			m.Consumed.Add(ctx, 1, inv.attrs)
			if age, ok := telemetry.Age(msg.Attributes["SentTimestamp"], inv.began); ok {
				m.MessageAge.Seconds(ctx, age, inv.attrs)
			}
		}
		if inv.spans != nil {
			k = telemetry.KindTracer
			inv.spans[i].Set(telemetry.AttrMessageID, inv.ids[i])
		}
		k = telemetry.HookReceived
		l.opts.Hooks.received(ctx, msg)
		return
	}
	if m := &l.metrics; m.On && kind != outcomeHeld && kind != outcomeParked {
		attrs := inv.attrs
		if kind == outcomeHandled {
			m.Handled.Add(ctx, 1, attrs)
		} else {
			attrs = attrs.With(telemetry.KV{Key: telemetry.AttrErrorType, Value: errorType(err)})
			m.Failed.Add(ctx, 1, attrs)
		}
		if ran {
			m.ProcessDuration.Seconds(ctx, took, attrs)
		}
	}
	if inv.spans != nil {
		k = telemetry.KindTracer
		if kind == outcomeFailed {
			inv.spans[i].Fail(errorType(err))
		}
		inv.spans[i].End(nil)
	}
	switch kind {
	case outcomeHandled:
		k = telemetry.HookHandled
		l.opts.Hooks.handled(ctx, msg, took)
	case outcomeHeld:
		k = telemetry.HookHeld
		l.opts.Hooks.held(ctx, msg, a.hold)
	case outcomeParked:
		k = telemetry.HookParked
		l.opts.Hooks.parked(ctx, msg, a.reason)
	default:
		k = telemetry.HookFailed
		l.opts.Hooks.failed(ctx, msg, err)
	}
}
