package replay

import "context"

// scope is the instrumentation scope of this package's metrics.
const scope = "github.com/sqskit/sqskit/replay"

// Carrier reads and writes the trace context fields of one message. It is
// an unnamed interface type, identical to handler.Carrier, fifo.Carrier and
// consumer.Carrier, whose methods are those of OpenTelemetry's
// propagation.TextMapCarrier. The key "X-Amzn-Trace-Id" maps to the
// AWSTraceHeader system attribute; every other key to a String message
// attribute.
type Carrier = interface {
	Get(key string) string
	Set(key, value string)
	Keys() []string
}

// Propagator moves trace context between a ctx and a message, in the shape
// of OpenTelemetry's propagation.TextMapPropagator; the engine calls
// Extract, so that a message's decision span is its producer's child. One
// value serves this package, fifo, consumer and handler (see
// handler.Propagator for a few-line OpenTelemetry adapter).
type Propagator interface {
	Inject(ctx context.Context, c Carrier)
	Extract(ctx context.Context, c Carrier) context.Context
}
