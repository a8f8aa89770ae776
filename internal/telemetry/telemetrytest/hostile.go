package telemetrytest

import (
	"context"

	"github.com/aws/smithy-go/metrics"
	"github.com/aws/smithy-go/tracing"
)

// Fault is how a Hostile extension misbehaves.
type Fault int

const (
	// PanicProvider: TracerProvider.Tracer and MeterProvider.Meter panic.
	PanicProvider Fault = iota + 1
	// PanicStart: StartSpan, instrument creation, Extract and Inject panic.
	PanicStart
	// PanicUse: spans' and instruments' methods panic.
	PanicUse
	// NilResult: StartSpan returns a nil span and a nil ctx, Extract a nil
	// ctx, instrument creation typed-nil instruments.
	NilResult
	// Detached: StartSpan returns a working span in a ctx derived from
	// context.Background(), not from its parent.
	Detached
)

// Hostile is a TracerProvider, MeterProvider and Propagator that misbehaves
// as its Fault says, for tests of code that must survive its extensions.
type Hostile struct{ Fault Fault }

var (
	_ tracing.TracerProvider = Hostile{}
	_ metrics.MeterProvider  = Hostile{}
)

type hostileKey struct{}

// Tracer returns h.
func (h Hostile) Tracer(string, ...tracing.TracerOption) tracing.Tracer {
	if h.Fault == PanicProvider {
		panic("telemetrytest: hostile TracerProvider")
	}
	return hostileTracer(h)
}

type hostileTracer Hostile

func (h hostileTracer) StartSpan(ctx context.Context, _ string, _ ...tracing.SpanOption) (context.Context, tracing.Span) {
	switch h.Fault {
	case PanicStart:
		panic("telemetrytest: hostile StartSpan")
	case NilResult:
		return nil, nil
	case Detached:
		s := hostileSpan(h)
		return tracing.WithSpan(context.WithValue(context.Background(), hostileKey{}, true), s), s
	}
	s := hostileSpan(h)
	return tracing.WithSpan(ctx, s), s
}

type hostileSpan Hostile

func (h hostileSpan) check() {
	if h.Fault == PanicUse {
		panic("telemetrytest: hostile span")
	}
}
func (h hostileSpan) Name() string                            { h.check(); return "hostile" }
func (h hostileSpan) Context() tracing.SpanContext            { h.check(); return tracing.SpanContext{} }
func (h hostileSpan) AddEvent(string, ...tracing.EventOption) { h.check() }
func (h hostileSpan) SetStatus(tracing.SpanStatus)            { h.check() }
func (h hostileSpan) End()                                    { h.check() }

// SetProperty panics, except for the AWS SDK's request id: the SDK sets it
// on the span it finds in its call's ctx, which is the tracer's own (a
// guarded wrapper there would break smithyoteltracing, which type-asserts
// the span in ctx), so a span that panics there fails inside the SDK.
func (h hostileSpan) SetProperty(k, _ any) {
	if k != "aws.request_id" {
		h.check()
	}
}

// InDetachedCtx reports whether ctx carries the value of a Detached span's
// ctx.
func InDetachedCtx(ctx context.Context) bool { return ctx.Value(hostileKey{}) != nil }

// Meter returns a meter that misbehaves as h does.
func (h Hostile) Meter(string, ...metrics.MeterOption) metrics.Meter {
	if h.Fault == PanicProvider {
		panic("telemetrytest: hostile MeterProvider")
	}
	return hostileMeter{Meter: metrics.NopMeterProvider{}.Meter(""), h: h}
}

type hostileMeter struct {
	metrics.Meter // the other instruments: no-ops
	h             Hostile
}

type hostileInstrument Hostile

func (h hostileInstrument) check() {
	if h.Fault == PanicUse {
		panic("telemetrytest: hostile instrument")
	}
}
func (h hostileInstrument) Add(context.Context, int64, ...metrics.RecordMetricOption)      { h.check() }
func (h hostileInstrument) Record(context.Context, float64, ...metrics.RecordMetricOption) { h.check() }
func (h hostileInstrument) Stop()                                                          { h.check() }

type nilInstrument struct{ n int }

func (i *nilInstrument) Add(context.Context, int64, ...metrics.RecordMetricOption)      { i.n++ }
func (i *nilInstrument) Record(context.Context, float64, ...metrics.RecordMetricOption) { i.n++ }
func (i *nilInstrument) Stop()                                                          { i.n++ }

func (m hostileMeter) Int64Counter(string, ...metrics.InstrumentOption) (metrics.Int64Counter, error) {
	switch m.h.Fault {
	case PanicStart:
		panic("telemetrytest: hostile Int64Counter")
	case NilResult:
		return (*nilInstrument)(nil), nil
	}
	return hostileInstrument(m.h), nil
}

func (m hostileMeter) Float64Histogram(string, ...metrics.InstrumentOption) (metrics.Float64Histogram, error) {
	switch m.h.Fault {
	case PanicStart:
		panic("telemetrytest: hostile Float64Histogram")
	case NilResult:
		return (*nilInstrument)(nil), nil
	}
	return hostileInstrument(m.h), nil
}

func (m hostileMeter) Int64AsyncUpDownCounter(string, metrics.Int64Callback, ...metrics.InstrumentOption) (metrics.AsyncInstrument, error) {
	switch m.h.Fault {
	case PanicStart:
		panic("telemetrytest: hostile Int64AsyncUpDownCounter")
	case NilResult:
		return (*nilInstrument)(nil), nil
	}
	return hostileInstrument(m.h), nil
}

// Inject writes nothing, or panics.
func (h Hostile) Inject(context.Context, carrier) {
	if h.Fault == PanicStart || h.Fault == PanicUse {
		panic("telemetrytest: hostile Inject")
	}
}

// Extract returns ctx, nil or panics.
func (h Hostile) Extract(ctx context.Context, _ carrier) context.Context {
	switch h.Fault {
	case PanicStart, PanicUse:
		panic("telemetrytest: hostile Extract")
	case NilResult:
		return nil
	case Detached:
		return context.WithValue(context.Background(), hostileKey{}, true)
	}
	return ctx
}
