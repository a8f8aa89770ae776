package telemetry

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/smithy-go/tracing"

	"github.com/sqskit/sqskit/internal/telemetry/telemetrytest"
)

// A provider, tracer or propagator that panics or returns nil is recovered,
// counted and logged once per kind; the caller gets a ctx with its parent's
// cancellation, and a span and meter that do nothing.
func TestFaultsRecoverExtensions(t *testing.T) {
	for _, tc := range []struct {
		fault telemetrytest.Fault
		name  string
	}{
		{telemetrytest.PanicProvider, "provider panics"},
		{telemetrytest.PanicStart, "start panics"},
		{telemetrytest.NilResult, "nil results"},
		{telemetrytest.Detached, "detached ctx"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			f := NewFaults(slog.New(slog.NewTextHandler(&buf, nil)))
			h := telemetrytest.Hostile{Fault: tc.fault}
			tr := f.Tracer(h, "scope", "https://sqs/q")
			parent, cancel := context.WithCancel(context.Background())
			defer cancel()
			for range 2 {
				ctx, _ := f.Start(tr, parent, tracing.SpanKindConsumer, OperationProcess, OperationProcess)
				if ctx == nil || ctx.Done() != parent.Done() {
					t.Fatalf("expect a ctx with the parent's cancellation, got %v", ctx)
				}
				ctx = f.Extract(parent, h, nil)
				if ctx == nil || ctx.Done() != parent.Done() {
					t.Fatalf("expect Extract's ctx to keep the parent's cancellation, got %v", ctx)
				}
				f.Meter(h, "scope")
				f.Inject(parent, h, nil)
			}
			if tc.fault != telemetrytest.Detached && f.Count() == 0 {
				t.Error("expect failures counted")
			}
			for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
				if line != "" && strings.Count(buf.String(), line) != 1 {
					t.Errorf("expect each kind logged once, got %q again", line)
				}
			}
		})
	}
}

// A typed-nil provider is no provider.
func TestFaultsTypedNilProvidersAreNone(t *testing.T) {
	f := NewFaults(nil)
	if f.Tracer((*telemetrytest.Tracer)(nil), "s", "q").On() || f.Meter((*telemetrytest.Meter)(nil), "s").On() || f.Count() != 0 {
		t.Error("expect no tracer or meter, and no failure, from typed-nil providers")
	}
}

// A ctx detached from its parent by a tracer keeps the parent's
// cancellation, deadline and cause, and the span ctx's values.
func TestWithinKeepsTheParentsCancellation(t *testing.T) {
	type key struct{}
	parent, cancel := context.WithCancelCause(context.WithValue(context.Background(), key{}, "parent"))
	detached := context.WithValue(context.Background(), key{}, "span")
	ctx := Within(parent, detached)
	if ctx.Value(key{}) != "span" {
		t.Errorf("expect the span ctx's value, got %v", ctx.Value(key{}))
	}
	child, stop := context.WithCancel(ctx)
	defer stop()
	cause := errors.New("stop")
	cancel(cause)
	<-child.Done()
	if context.Cause(ctx) != cause || ctx.Err() != context.Canceled {
		t.Errorf("expect the parent's cancellation, got %v, %v", ctx.Err(), context.Cause(ctx))
	}
	if same := Within(parent, context.WithValue(parent, key{}, 1)); same.Value(key{}) != 1 {
		t.Error("expect a descendant of the parent handed on as it is")
	}
}
