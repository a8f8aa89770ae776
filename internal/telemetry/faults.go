package telemetry

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/smithy-go/metrics"
	"github.com/aws/smithy-go/tracing"

	"github.com/sqskit/sqskit/internal/dispatch"
)

// Kind is an extension point whose failures Faults counts and logs.
type Kind uint8

// The extension points. A hook's Kind is HookReceived + its index among
// the hooks, in the order of consumer.Hooks' fields.
const (
	KindTracer     Kind = iota // TracerProvider, its tracers and spans
	KindMeter                  // MeterProvider, its meters and instruments
	KindPropagator             // Propagator.Extract and Inject
	KindSlow                   // hooks too slow: signals dropped
	HookReceived
	HookHandled
	HookFailed
	HookDeleted
	HookDeleteFailed
	HookExtended
	HookLeaseLost
	HookReleased
	HookHeld
	HookParked
)

// kindNames names the Kinds, one a line (kept in one string: a Lambda's
// footprint counts every string header).
const kindNames = `TracerProvider
MeterProvider
Propagator
Hooks (too slow: signals dropped)
Hooks.Received
Hooks.Handled
Hooks.Failed
Hooks.Deleted
Hooks.DeleteFailed
Hooks.Extended
Hooks.LeaseLost
Hooks.Released
Hooks.Held
Hooks.Parked`

// Faults counts the signals lost to user extensions (hooks, propagators,
// tracers, meters, spans, instruments) that panicked, returned nil or
// garbage, or were too slow, and logs the first failure of each Kind. A nil
// *Faults counts and logs nothing; its Recover still recovers.
type Faults struct {
	_    [0]func() // noCompare
	n    atomic.Int64
	seen atomic.Uint32 // a bit per Kind logged
	log  *slog.Logger
}

// NewFaults returns Faults logging to log (nil: silent).
func NewFaults(log *slog.Logger) *Faults { return &Faults{log: log} }

// Count returns how many signals were lost.
func (f *Faults) Count() int64 {
	if f == nil {
		return 0
	}
	return f.n.Load()
}

// Failed counts a lost signal of kind k, and logs it if it is k's first;
// cause is the panic value or what was wrong.
func (f *Faults) Failed(k Kind, cause any) {
	if f == nil {
		return
	}
	f.n.Add(1)
	if bit := uint32(1) << k; f.seen.Or(bit)&bit == 0 && f.log != nil {
		name := kindNames
		for range k {
			_, name, _ = strings.Cut(name, "\n")
		}
		name, _, _ = strings.Cut(name, "\n")
		f.log.LogAttrs(context.Background(), slog.LevelError, "sqskit: extension failed; signal dropped",
			slog.String("extension", name), slog.String("cause", fmt.Sprint(cause)))
	}
}

// Recover, deferred around a call of user code, turns its panic into a
// failure of kind k.
func (f *Faults) Recover(k Kind) {
	if v := recover(); v != nil {
		f.Failed(k, v)
	}
}

// RecoverIn is Recover for code that calls several extensions: *k says
// which one runs.
func (f *Faults) RecoverIn(k *Kind) {
	if v := recover(); v != nil {
		f.Failed(*k, v)
	}
}

// Within returns the ctx to hand on from a span started in parent, given
// the ctx sctx the tracer returned: sctx itself when it is parent's
// descendant (it shares parent's Done), else a ctx with sctx's values
// (falling back to parent's) and parent's cancellation and deadline, so a
// tracer that detaches its ctx cannot detach a handler from shutdown. A nil
// sctx gives parent.
func Within(parent, sctx context.Context) context.Context {
	if sctx == nil {
		return parent
	}
	if sctx == parent || sctx.Done() == parent.Done() {
		return sctx
	}
	return &spanCtx{parent: parent, values: sctx}
}

// spanCtx is parent's Done, Err and Deadline with values's values. A
// cancellation cause set on values (a tracer's own cancelCtx) would shadow
// parent's for context.Cause; ctxs derived from values rarely carry one.
type spanCtx struct {
	_              [0]func() // noCompare: an equality function costs a Lambda's footprint
	parent, values context.Context
}

func (c *spanCtx) Deadline() (time.Time, bool) { return c.parent.Deadline() }
func (c *spanCtx) Done() <-chan struct{}       { return c.parent.Done() }
func (c *spanCtx) Err() error                  { return c.parent.Err() }

func (c *spanCtx) Value(key any) any {
	if v := c.values.Value(key); v != nil {
		return v
	}
	return c.parent.Value(key)
}

// Carrier is handler.Carrier: one unnamed interface type.
type Carrier = interface {
	Get(key string) string
	Set(key, value string)
	Keys() []string
}

// Extractor is a Propagator's Extract half.
type Extractor interface {
	Extract(ctx context.Context, c Carrier) context.Context
}

// Extract returns p.Extract(ctx, c), kept within ctx's cancellation (see
// Within), or ctx itself when p panics or returns nil.
func (f *Faults) Extract(ctx context.Context, p Extractor, c Carrier) (out context.Context) {
	out = ctx
	defer f.Recover(KindPropagator)
	if e := p.Extract(ctx, c); e != nil {
		return Within(ctx, e)
	}
	f.Failed(KindPropagator, "Extract returned a nil ctx")
	return ctx
}

// Inject calls p.Inject(ctx, c); a panic leaves c as p left it.
func (f *Faults) Inject(ctx context.Context, p interface {
	Inject(ctx context.Context, c Carrier)
}, c Carrier) {
	defer f.Recover(KindPropagator)
	p.Inject(ctx, c)
}

// The guarded forms of the Tracer and Meter constructors and of
// Tracer.Start are methods of Faults, apart from the plain ones: those are
// what a Lambda links, and its footprint budget has no room for guards
// (package handler does without them; see its Hooks).

// Tracer is NewTracer for a provider that may panic or return nil (a
// typed nil counts as nil): then tracing is off, and the failure counted.
func (f *Faults) Tracer(tp tracing.TracerProvider, scope, urlOrARN string) (t Tracer) {
	if dispatch.IsNil(tp) {
		return Tracer{}
	}
	defer f.Recover(KindTracer) // then the zero Tracer
	if t = NewTracer(tp, scope, urlOrARN); TracingOn(tp) && dispatch.IsNil(t.t) {
		f.Failed(KindTracer, "TracerProvider.Tracer returned nil: tracing is off")
		return Tracer{}
	}
	return t
}

// Meter is NewMeter for a provider that may panic or return nil.
func (f *Faults) Meter(mp metrics.MeterProvider, scope string) (m Meter) {
	if dispatch.IsNil(mp) {
		return Meter{}
	}
	defer f.Recover(KindMeter) // then the zero Meter
	if m = NewMeter(mp, scope); MetricsOn(mp) && dispatch.IsNil(m.m) {
		f.Failed(KindMeter, "MeterProvider.Meter returned nil: metrics are off")
		return Meter{}
	}
	return m
}

// Start is t.Start for a tracer that may panic or return nil: it returns
// ctx and a zero Span when the tracer panics or returns a nil span, and a
// ctx that keeps ctx's cancellation and deadline whatever ctx the tracer
// returned (see Within). The span's own methods are not guarded: callers
// recover around them.
func (f *Faults) Start(t Tracer, ctx context.Context, kind tracing.SpanKind, opType, opName string) (sctx context.Context, span Span) {
	sctx = ctx
	if t.t == nil {
		return sctx, span
	}
	defer f.Recover(KindTracer) // with what was set by then
	name, ok := t.names[opName]
	if !ok {
		name = opName + " " + t.queue
	}
	c, s := t.t.StartSpan(ctx, name, kindOption(kind))
	if s == nil || c == nil {
		f.Failed(KindTracer, "StartSpan returned a nil span or ctx")
		if s == nil {
			return sctx, span
		}
	}
	sctx, span = Within(ctx, c), Span{s: s}
	s.SetProperty(AttrSystem, SystemSQS)
	s.SetProperty(AttrDestination, t.queue)
	s.SetProperty(AttrOperationType, opType)
	s.SetProperty(AttrOperationName, opName)
	if t.url != "" {
		s.SetProperty(AttrQueueURL, t.url)
	}
	return sctx, span
}
