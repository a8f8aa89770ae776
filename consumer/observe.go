package consumer

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/tracing"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/internal/dispatch"
	"github.com/sqskit/sqskit/internal/telemetry"
)

// scope is the instrumentation scope of this package's spans and metrics.
const scope = "github.com/sqskit/sqskit/consumer"

// observer reports what happens to messages and calls: hooks, spans,
// metrics and Stats. With no TracerProvider, MeterProvider, handler.Propagator or
// hook (the default) it costs a nil check per event.
//
// Stats are counted where the event happens. Everything else about an
// event is user code (hooks, spans, instruments), so it is a signal, queued
// without blocking and reported by one goroutine per Run, in order: a hook
// that is slow or blocks delays only the signals behind it, and a full queue
// drops new signals (counted in Stats.ExtensionFailures) rather than
// wait. Events may happen under run.mu; signals are reported with no lock
// held. Each call of user code recovers its panic (counted too).
type observer struct {
	hooks   *Hooks
	stats   *counters
	faults  *telemetry.Faults
	prop    handler.Propagator // counting its failures; nil without Options.Propagator
	tracer  telemetry.Tracer
	metrics telemetry.ConsumerMetrics
	attrs   *telemetry.Attrs // the queue's metric attributes; nil when metrics are off
	// callAttrs are the attributes of each operation's call durations.
	callAttrs map[string]*telemetry.Attrs
	settle    telemetry.SettleMetrics
	// queue is the room of a Run's signal queue, 0 when there is nothing
	// to report but Stats; signals is the queue of the Run going on (nil
	// between Runs), one per Run, so a hook a Run left behind never takes
	// the next Run's signals.
	queue   int
	signals *atomic.Pointer[signalQueue]
}

// Signal queue bounds: room for a few signals per message held (received,
// settled, deleted or released, extended), within a memory bound.
const (
	minSignalQueue = 256
	maxSignalQueue = 4096
)

func newObserver(o *Options, stats *counters, queueURL string) observer {
	f := telemetry.NewFaults(o.Logger)
	ob := observer{hooks: &o.Hooks, stats: stats, faults: f, tracer: f.Tracer(o.TracerProvider, scope, queueURL),
		signals: new(atomic.Pointer[signalQueue])}
	if !dispatch.IsNil(o.Propagator) {
		ob.prop = countedPropagator{o.Propagator, f}
	}
	if m := f.Meter(o.MeterProvider, scope); m.On() {
		func() {
			defer f.Recover(telemetry.KindMeter) // then no metrics
			ob.metrics = telemetry.NewConsumerMetrics(m)
			ob.settle = telemetry.NewSettleMetrics(m)
		}()
	}
	if ob.metrics.On {
		ob.attrs = telemetry.QueueAttrs(queueURL)
		ob.callAttrs = map[string]*telemetry.Attrs{}
		for _, op := range []string{telemetry.OperationReceive, telemetry.OperationDelete, telemetry.OperationVisibility} {
			ob.callAttrs[op] = ob.attrs.With(telemetry.KV{Key: telemetry.AttrOperationName, Value: op})
		}
	}
	if ob.metrics.On || ob.tracer.On() || o.Hooks.set() {
		ob.queue = min(max(4*o.MaxInFlight, minSignalQueue), maxSignalQueue)
	}
	return ob
}

// countedPropagator counts the failures of a handler.Propagator's Extract.
type countedPropagator struct {
	handler.Propagator
	f *telemetry.Faults
}

func (p countedPropagator) Extract(ctx context.Context, c handler.Carrier) context.Context {
	return p.f.Extract(ctx, p.Propagator, c)
}

// signalKind is what a signal reports.
type signalKind uint8

const (
	sigReceived signalKind = iota
	sigSettled
	sigHeld
	sigEscalated
	sigParked
	sigDeleted
	sigDeleteFailed
	sigReleased
	sigExtended
	sigLeaseLost
	sigUnused // a span started for a message the consumer did not take
)

// signal is one event to report: its message, and what the kind needs.
type signal struct {
	kind   signalKind
	ran    bool
	t      *inflight
	m      *handler.Message // sigReceived: a copy, as its handler may write to t.msg meanwhile
	err    error
	d      time.Duration // visibility or hold
	took   time.Duration // the handler's duration
	at     time.Time     // sigReceived: when
	reason string
}

// emit queues s, or drops it when the queue is full.
func (ob *observer) emit(s signal) {
	q := ob.signals.Load()
	if q == nil {
		return // no Run, or nothing to report
	}
	if !q.put(s) {
		ob.faults.Failed(telemetry.KindSlow, "hooks, spans or instruments too slow for the consumer")
	}
}

// signalQueue is a Run's queue of signals: a channel with room for
// observer.queue signals, a full one dropping new signals; or, lossless,
// a list that grows as long as the hooks lag, in order too.
type signalQueue struct {
	ch       chan signal
	lossless bool
	wake     chan struct{} // lossless: a signal was put; room for one
	mu       sync.Mutex
	list     []signal // lossless: list[head:] are queued
	head     int
}

func newSignalQueue(room int, lossless bool) *signalQueue {
	if lossless {
		return &signalQueue{lossless: true, wake: make(chan struct{}, 1)}
	}
	return &signalQueue{ch: make(chan signal, room)}
}

// put queues s; false when it was dropped.
func (q *signalQueue) put(s signal) bool {
	if !q.lossless {
		select {
		case q.ch <- s:
			return true
		default:
			return false
		}
	}
	q.mu.Lock()
	q.list = append(q.list, s)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default: // a wake-up is pending already
	}
	return true
}

// poll takes the next signal, if any, without waiting.
func (q *signalQueue) poll() (signal, bool) {
	if !q.lossless {
		select {
		case s := <-q.ch:
			return s, true
		default:
			return signal{}, false
		}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.head == len(q.list) {
		return signal{}, false
	}
	s := q.list[q.head]
	q.list[q.head] = signal{}
	q.head++
	switch {
	case q.head == len(q.list):
		q.list, q.head = q.list[:0], 0
	case q.head >= minSignalQueue && 2*q.head >= len(q.list): // hooks lagging for good: keep only what is queued
		n := copy(q.list, q.list[q.head:])
		clear(q.list[n:])
		q.list, q.head = q.list[:n], 0
	}
	return s, true
}

// get takes the next signal, waiting for one until quit is closed: false
// once quit is closed and nothing is queued.
func (q *signalQueue) get(quit <-chan struct{}) (signal, bool) {
	if !q.lossless {
		select {
		case s := <-q.ch:
			return s, true
		case <-quit:
			return q.poll()
		}
	}
	for {
		if s, ok := q.poll(); ok {
			return s, true
		}
		select {
		case <-q.wake:
		case <-quit:
			return q.poll()
		}
	}
}

// start starts reporting signals for a Run; stop ends it once every signal
// queued is reported, or at deadline: then the signals still queued are
// dropped (counted), and a hook still running is left behind. lossless
// makes the queue grow instead of dropping, for a package of this module
// that counts its own report on the hooks (replay, through
// ctxkey.LosslessHooks on Run's ctx).
func (ob *observer) start(lossless bool) (stop func(deadline time.Time)) {
	if ob.queue == 0 {
		return func(time.Time) {}
	}
	q := newSignalQueue(ob.queue, lossless)
	ob.signals.Store(q)
	quit, abandon, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go ob.deliver(q, quit, abandon, done)
	return func(deadline time.Time) {
		ob.signals.Store(nil) // what happens from now on goes unreported
		close(quit)
		timer := time.NewTimer(time.Until(deadline))
		defer timer.Stop()
		select {
		case <-done:
		case <-timer.C:
			close(abandon)
		}
	}
}

// deliver reports signals until quit is closed and the queue is empty, or
// abandon is closed; a hook that calls runtime.Goexit is replaced by
// another deliver.
func (ob *observer) deliver(q *signalQueue, quit, abandon <-chan struct{}, done chan struct{}) {
	returned := false
	defer func() {
		if !returned {
			ob.faults.Failed(telemetry.KindSlow, "a hook called runtime.Goexit")
			go ob.deliver(q, quit, abandon, done)
			return
		}
		close(done)
	}()
	for {
		s, ok := q.get(quit)
		if !ok {
			returned = true
			return
		}
		select {
		case <-abandon:
			for ok := true; ok; _, ok = q.poll() { // s and the rest
				ob.faults.Failed(telemetry.KindSlow, "hooks, spans or instruments still busy at the end of Run")
			}
			returned = true
			return
		default:
		}
		ob.report(s)
	}
}

// report reports one signal: its metrics, its span, then its hook. A
// panic (recovered, counted as k's) costs the rest of the signal.
func (ob *observer) report(s signal) {
	t, h, m := s.t, ob.hooks, &ob.metrics
	ctx := t.ctx
	k := telemetry.KindMeter
	defer ob.faults.RecoverIn(&k)
	switch s.kind {
	case sigReceived:
		if m.On {
			m.Consumed.Add(ctx, 1, ob.attrs)
			if age, ok := telemetry.Age(t.msg.Attributes["SentTimestamp"], s.at); ok {
				m.MessageAge.Seconds(ctx, age, ob.attrs)
			}
		}
		if k = telemetry.HookReceived; h.Received != nil {
			h.Received(ctx, s.m)
		}
	case sigSettled:
		ob.reportSettled(s, &k)
	case sigHeld:
		if m.On {
			ob.settle.Held.Add(ctx, 1, ob.attrs)
			m.ProcessDuration.Seconds(ctx, s.took, ob.attrs)
		}
		k = telemetry.KindTracer
		t.span.Event("held")
		t.span.End(nil)
		if k = telemetry.HookHeld; h.Held != nil {
			h.Held(ctx, t.msg, s.d)
		}
	case sigEscalated:
		k = telemetry.KindTracer
		t.span.Event("parked")
		t.span.End(nil)
	case sigParked:
		ob.settle.Parked.Add(ctx, 1, ob.attrs)
		if k = telemetry.HookParked; h.Parked != nil {
			h.Parked(ctx, t.msg, s.reason)
		}
	case sigDeleted:
		ob.settle.Deleted.Add(ctx, 1, ob.attrs)
		if k = telemetry.HookDeleted; h.Deleted != nil {
			h.Deleted(ctx, t.msg)
		}
	case sigDeleteFailed:
		ob.settle.DeleteFailed.Add(ctx, 1, ob.attrs)
		if k = telemetry.HookDeleteFailed; h.DeleteFailed != nil {
			h.DeleteFailed(ctx, t.msg, s.err)
		}
	case sigReleased:
		ob.settle.Released.Add(ctx, 1, ob.attrs)
		if k = telemetry.HookReleased; h.Released != nil {
			h.Released(ctx, t.msg, s.d)
		}
	case sigExtended:
		ob.settle.Extended.Add(ctx, 1, ob.attrs)
		if k = telemetry.HookExtended; h.Extended != nil {
			h.Extended(ctx, t.msg, s.d)
		}
	case sigLeaseLost:
		ob.settle.LeaseLost.Add(ctx, 1, ob.attrs)
		k = telemetry.KindTracer
		t.span.Event("lease lost")
		if k = telemetry.HookLeaseLost; h.LeaseLost != nil {
			h.LeaseLost(ctx, t.msg, s.err)
		}
	case sigUnused:
		k = telemetry.KindTracer
		t.span.End(nil)
	}
}

func (ob *observer) reportSettled(s signal, k *telemetry.Kind) {
	t, h, m, ctx, err := s.t, ob.hooks, &ob.metrics, s.t.ctx, s.err
	if m.On {
		attrs := ob.attrs
		if err == nil {
			m.Handled.Add(ctx, 1, attrs)
		} else {
			attrs = attrs.With(telemetry.KV{Key: telemetry.AttrErrorType, Value: errorType(err)})
			m.Failed.Add(ctx, 1, attrs)
		}
		if s.ran {
			m.ProcessDuration.Seconds(ctx, s.took, attrs)
		}
	}
	if t.span.On() {
		*k = telemetry.KindTracer
		if err != nil {
			t.span.Fail(errorType(err))
		}
		t.span.End(nil)
	}
	if err == nil {
		if *k = telemetry.HookHandled; h.Handled != nil {
			h.Handled(ctx, t.msg, s.took)
		}
	} else if *k = telemetry.HookFailed; h.Failed != nil {
		h.Failed(ctx, t.msg, err)
	}
}

// begin gives a fresh message its ctx: its producer's trace context and its
// process span, children of base. It calls user code (the handler.Propagator, the
// tracer): callers hold no lock, and t is not yet tracked.
func (ob *observer) begin(base context.Context, t *inflight) {
	t.ctx = base
	if ob.prop != nil {
		t.ctx = handler.Extract(base, ob.prop, t.msg)
	}
	if ob.tracer.On() {
		t.ctx, t.span = ob.faults.Start(ob.tracer, t.ctx, tracing.SpanKindConsumer, telemetry.OperationProcess, telemetry.OperationProcess)
		defer ob.faults.Recover(telemetry.KindTracer)
		t.span.Set(telemetry.AttrMessageID, t.id)
		if t.group != "" {
			t.span.Set(telemetry.AttrMessageGroupID, t.group)
		}
		t.span.Set(telemetry.AttrReceiveCount, t.receives)
	}
}

// startBatch starts the process span of a handler.BatchHandler's call of n
// messages.
func (ob *observer) startBatch(ctx context.Context, n int) (context.Context, telemetry.Span) {
	ctx, span := ob.faults.Start(ob.tracer, ctx, tracing.SpanKindConsumer, telemetry.OperationProcess, telemetry.OperationProcess)
	defer ob.faults.Recover(telemetry.KindTracer)
	span.Set(telemetry.AttrBatchCount, n)
	return ctx, span
}

// endBatch ends a batch's process span, failed with the first failure of
// errs.
func (ob *observer) endBatch(span telemetry.Span, errs []error) {
	defer ob.faults.Recover(telemetry.KindTracer)
	for _, err := range errs {
		if err != nil {
			span.Fail(errorType(err))
			break
		}
	}
	span.End(nil)
}

// unused ends the span begin started for a message the consumer did not
// take (held already, or beyond its places).
func (ob *observer) unused(t *inflight) {
	if t.span.On() {
		ob.emit(signal{kind: sigUnused, t: t})
	}
}

// received reports a fresh message, received at now, before its handler
// may start.
func (ob *observer) received(t *inflight, now time.Time) {
	ob.stats.received.Add(1)
	s := signal{kind: sigReceived, t: t, at: now}
	if ob.hooks.Received != nil {
		m := *t.msg
		s.m = &m
	}
	ob.emit(s)
}

// settled reports a message's outcome, once: handled (err nil) or failed;
// ran says whether its handler ran, for took. Its signal ends the process
// span.
func (ob *observer) settled(t *inflight, err error, took time.Duration, ran bool) {
	if err == nil {
		ob.stats.handled.Add(1)
	} else {
		ob.stats.failed.Add(1)
	}
	ob.emit(signal{kind: sigSettled, t: t, err: err, took: took, ran: ran})
}

// held reports a Hold outcome: no failure. Its signal ends the process span.
func (ob *observer) held(t *inflight, d, took time.Duration) {
	ob.stats.held.Add(1)
	ob.emit(signal{kind: sigHeld, t: t, d: d, took: took})
}

// escalated ends the process span of a message the parking queue has.
func (ob *observer) escalated(t *inflight) {
	ob.emit(signal{kind: sigEscalated, t: t})
}

// parked reports a parked message deleted from the queue.
func (ob *observer) parked(t *inflight, reason string) {
	ob.stats.parked.Add(1)
	ob.emit(signal{kind: sigParked, t: t, reason: reason})
}

func (ob *observer) deleted(t *inflight) {
	ob.stats.deleted.Add(1)
	ob.emit(signal{kind: sigDeleted, t: t})
}

func (ob *observer) deleteFailed(t *inflight, err error) {
	ob.stats.deleteFailed.Add(1)
	ob.emit(signal{kind: sigDeleteFailed, t: t, err: err})
}

func (ob *observer) released(t *inflight, d time.Duration) {
	ob.stats.released.Add(1)
	ob.emit(signal{kind: sigReleased, t: t, d: d})
}

// extended and leaseLost may be called under run.mu: they only count and
// queue.
func (ob *observer) extended(t *inflight, d time.Duration) {
	ob.stats.extended.Add(1)
	ob.emit(signal{kind: sigExtended, t: t, d: d})
}

func (ob *observer) leaseLost(t *inflight, err error) {
	ob.stats.leaseLost.Add(1)
	ob.emit(signal{kind: sigLeaseLost, t: t, err: err})
}

// call is one SQS call in progress: its span and its start, for the
// operation duration.
type call struct {
	ob    *observer
	span  telemetry.Span
	name  string
	start time.Time
}

// startCall starts the span of an SQS call of n messages (CLIENT: receive
// and settle) and returns the ctx to make it with.
func (ob *observer) startCall(ctx context.Context, opType, opName string, n int) (context.Context, call) {
	c := call{ob: ob, name: opName}
	if ob.tracer.On() {
		ctx, c.span = ob.faults.Start(ob.tracer, ctx, tracing.SpanKindClient, opType, opName)
		if n > 0 {
			func() {
				defer ob.faults.Recover(telemetry.KindTracer)
				c.span.Set(telemetry.AttrBatchCount, n)
			}()
		}
	}
	if ob.settle.OperationDuration.On() {
		c.start = time.Now()
	}
	return ctx, c
}

// end ends the call: got is the messages a receive returned (−1 for other
// calls), err the call's error.
func (c call) end(ctx context.Context, got int, err error) {
	k := telemetry.KindTracer
	defer c.ob.faults.RecoverIn(&k)
	if got >= 0 {
		c.span.Set(telemetry.AttrBatchCount, got)
	}
	c.span.End(err)
	if k = telemetry.KindMeter; c.ob.settle.OperationDuration.On() {
		h := c.ob.settle.OperationDuration
		attrs := c.ob.callAttrs[c.name]
		if err != nil {
			attrs = attrs.With(telemetry.KV{Key: telemetry.AttrErrorType, Value: telemetry.ErrorType(err)})
		}
		h.Seconds(ctx, time.Since(c.start), attrs)
	}
	if err != nil && c.ob.metrics.On && backoff.IsThrottle(err) {
		c.ob.settle.Throttled.Add(ctx, 1, c.ob.callAttrs[c.name])
	}
}

// endReceive ends a receive's call; one cut short by shutdown (ctx done) is
// no failure.
func (c call) endReceive(ctx context.Context, out *sqs.ReceiveMessageOutput, err error) {
	if !c.span.On() && !c.ob.metrics.On {
		return
	}
	got := 0
	if out != nil {
		got = len(out.Messages)
	}
	if ctx.Err() != nil {
		err = nil
	}
	c.end(ctx, got, err)
}

// inFlightGauge reports the messages held, while Run runs.
func (ob *observer) inFlightGauge() (stop func()) {
	stop = func() {}
	if !ob.metrics.On {
		return stop
	}
	defer ob.faults.Recover(telemetry.KindMeter)
	g := ob.metrics.Meter().Gauge(telemetry.MetricInFlight, "{message}", "Messages held by the consumer: received and not yet deleted or released.", ob.attrs, ob.stats.inFlight.Load)
	if dispatch.IsNil(g) {
		return stop
	}
	return func() {
		defer ob.faults.Recover(telemetry.KindMeter)
		g.Stop()
	}
}
