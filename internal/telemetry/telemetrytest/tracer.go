// Package telemetrytest has in-memory implementations of smithy-go's
// tracing and metrics interfaces, and a trace context propagator, for
// sqskit's tests: they assert spans, their parents and metrics without
// OpenTelemetry in the core module.
package telemetrytest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/aws/smithy-go/tracing"
)

// Tracer is a TracerProvider and a Tracer that records every span.
type Tracer struct {
	mu    sync.Mutex
	spans []*Span
	ids   int
}

var _ tracing.TracerProvider = (*Tracer)(nil)

// Tracer returns t.
func (t *Tracer) Tracer(string, ...tracing.TracerOption) tracing.Tracer { return t }

// StartSpan starts a span whose parent is the span in ctx (smithy-go's, as
// smithyoteltracing's adapter does), else the remote context a Propagator
// extracted into ctx, else none (a new trace).
func (t *Tracer) StartSpan(ctx context.Context, name string, opts ...tracing.SpanOption) (context.Context, tracing.Span) {
	var o tracing.SpanOptions
	for _, fn := range opts {
		fn(&o)
	}
	t.mu.Lock()
	t.ids++
	s := &Span{tracer: t, name: name, Kind: o.Kind, SpanID: fmt.Sprintf("s%03d", t.ids), Attrs: map[string]any{}}
	t.spans = append(t.spans, s)
	t.mu.Unlock()
	if parent, ok := tracing.GetSpan(ctx); ok {
		pc := parent.Context()
		s.TraceID, s.ParentID = pc.TraceID, pc.SpanID
	} else if remote, ok := ctx.Value(remoteKey{}).(tracing.SpanContext); ok {
		s.TraceID, s.ParentID, s.RemoteParent = remote.TraceID, remote.SpanID, true
	} else {
		s.TraceID = "t" + s.SpanID
	}
	for k, v := range o.Properties.Values() {
		s.SetProperty(k, v)
	}
	return tracing.WithSpan(ctx, s), s
}

// Spans returns the spans started so far.
func (t *Tracer) Spans() []*Span {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.spans)
}

// Named returns the spans whose name is name, in start order.
func (t *Tracer) Named(name string) []*Span {
	var out []*Span
	for _, s := range t.Spans() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// Span is a recorded span. Read its fields once it has ended.
type Span struct {
	tracer       *Tracer
	name         string
	Kind         tracing.SpanKind
	TraceID      string
	SpanID       string
	ParentID     string
	RemoteParent bool // the parent came from a message, through a Propagator

	mu     sync.Mutex
	Attrs  map[string]any
	Events []string
	Status tracing.SpanStatus
	Ends   int
}

func (s *Span) Name() string { return s.name }

func (s *Span) Context() tracing.SpanContext {
	return tracing.SpanContext{TraceID: s.TraceID, SpanID: s.SpanID}
}

func (s *Span) AddEvent(name string, _ ...tracing.EventOption) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Events = append(s.Events, name)
}

func (s *Span) SetStatus(status tracing.SpanStatus) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Status = status
}

func (s *Span) SetProperty(k, v any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Attrs[fmt.Sprint(k)] = v
}

func (s *Span) End() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Ends++
}

// Attr returns an attribute as a string ("" when unset).
func (s *Span) Attr(key string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.Attrs[key]
	if !ok {
		return ""
	}
	return fmt.Sprint(v)
}

// Ended reports whether End was called exactly once.
func (s *Span) Ended() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Ends == 1
}

// Failed reports an error status.
func (s *Span) Failed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Status == tracing.SpanStatusError
}

type remoteKey struct{}

// The carrier interface sqskit's packages pass to a propagator.
type carrier = interface {
	Get(key string) string
	Set(key, value string)
	Keys() []string
}

// Propagator writes and reads a W3C-style traceparent
// ("00-<trace>-<span>-01") and, when XRay is set, an X-Ray trace header
// under "X-Amzn-Trace-Id" ("Root=<trace>;Parent=<span>;Sampled=1"), from
// and into the span in ctx: what OpenTelemetry's propagators do.
type Propagator struct {
	XRay       bool   // write the X-Ray header too
	OnlyXRay   bool   // write only the X-Ray header
	TraceState string // also write tracestate with this value
}

// Inject writes the trace context of the span in ctx.
func (p Propagator) Inject(ctx context.Context, c carrier) {
	s, ok := tracing.GetSpan(ctx)
	if !ok {
		return
	}
	sc := s.Context()
	if !p.OnlyXRay {
		c.Set("traceparent", "00-"+sc.TraceID+"-"+sc.SpanID+"-01")
		if p.TraceState != "" {
			c.Set("tracestate", p.TraceState)
		}
	}
	if p.XRay || p.OnlyXRay {
		c.Set("X-Amzn-Trace-Id", "Root="+sc.TraceID+";Parent="+sc.SpanID+";Sampled=1")
	}
}

// Extract reads a traceparent, else an X-Ray header, into ctx as the
// remote parent of the next span.
func (p Propagator) Extract(ctx context.Context, c carrier) context.Context {
	if tp := c.Get("traceparent"); tp != "" {
		parts := strings.Split(tp, "-")
		if len(parts) == 4 {
			return context.WithValue(ctx, remoteKey{}, tracing.SpanContext{TraceID: parts[1], SpanID: parts[2], IsRemote: true})
		}
	}
	if h := c.Get("X-Amzn-Trace-Id"); h != "" {
		var sc tracing.SpanContext
		for _, kv := range strings.Split(h, ";") {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "Root":
				sc.TraceID = v
			case "Parent":
				sc.SpanID = v
			}
		}
		if sc.TraceID != "" {
			sc.IsRemote = true
			return context.WithValue(ctx, remoteKey{}, sc)
		}
	}
	return ctx
}
