package main

import (
	"context"

	"go.opentelemetry.io/otel/propagation"

	"github.com/sqskit/sqskit/handler"
)

// Propagator adapts an OpenTelemetry TextMapPropagator to sqskit's
// Propagator (one value serves fifo, consumer, handler and replay). The
// carriers sqskit passes have the methods of OpenTelemetry's
// TextMapCarrier, so they go through as they are. For AWS X-Ray's
// AWSTraceHeader too, compose with the X-Ray propagator of
// go.opentelemetry.io/contrib/propagators/aws, which writes the key
// "X-Amzn-Trace-Id".
type Propagator struct{ P propagation.TextMapPropagator }

func (p Propagator) Inject(ctx context.Context, c handler.Carrier) { p.P.Inject(ctx, c) }

func (p Propagator) Extract(ctx context.Context, c handler.Carrier) context.Context {
	return p.P.Extract(ctx, c)
}
