package handler

import "context"

// Carrier reads and writes the trace context fields of one message. It is
// an unnamed interface type, and its methods are those of OpenTelemetry's
// propagation.TextMapCarrier: a carrier sqskit passes can be handed to an
// OpenTelemetry propagator as it is.
//
// The key TraceHeaderKey ("X-Amzn-Trace-Id", the AWS X-Ray propagator's)
// maps to the AWSTraceHeader system attribute; every other key maps to a
// String message attribute of that name (W3C's "traceparent",
// "tracestate").
type Carrier = interface {
	Get(key string) string
	Set(key, value string)
	Keys() []string
}

// Propagator moves trace context between a ctx and a message, in the shape
// of OpenTelemetry's propagation.TextMapPropagator. With OpenTelemetry,
// adapt a TextMapPropagator in a few lines:
//
//	type otelPropagator struct{ p propagation.TextMapPropagator }
//
//	func (o otelPropagator) Inject(ctx context.Context, c handler.Carrier) { o.p.Inject(ctx, c) }
//	func (o otelPropagator) Extract(ctx context.Context, c handler.Carrier) context.Context {
//		return o.p.Extract(ctx, c)
//	}
//
// One such value serves package fifo (Inject, when sending), package
// consumer and this package (Extract, before handling). Use
// propagation.NewCompositeTextMapPropagator(propagation.TraceContext{},
// xray.Propagator{}) to read and write both W3C trace context and
// AWSTraceHeader.
type Propagator interface {
	Inject(ctx context.Context, c Carrier)
	Extract(ctx context.Context, c Carrier) context.Context
}

// TraceHeaderKey is the carrier key of the AWSTraceHeader system attribute.
const TraceHeaderKey = "X-Amzn-Trace-Id"

// traceHeaderAttribute is the system attribute SQS carries X-Ray's trace
// header in (Lambda puts it in the record's attributes too).
const traceHeaderAttribute = "AWSTraceHeader"

// Extract returns ctx with the trace context m carries (its AWSTraceHeader
// and its String message attributes, as p reads them), or ctx itself when p
// is nil. The consumer and the Lambda adapter call it before a message's
// process span starts, so that span is the producer's child; call it in
// code that handles messages some other way.
func Extract(ctx context.Context, p Propagator, m *Message) context.Context {
	if p == nil {
		return ctx
	}
	return p.Extract(ctx, messageCarrier{m})
}

// messageCarrier reads a received message's trace context. Set does
// nothing: a received message is not changed.
type messageCarrier struct{ m *Message }

func (c messageCarrier) Get(key string) string {
	if key == TraceHeaderKey {
		return c.m.Attributes[traceHeaderAttribute]
	}
	if v, ok := c.m.MessageAttributes[key]; ok && v.BaseType() == "String" {
		return v.StringValue
	}
	return ""
}

func (messageCarrier) Set(string, string) {}

func (c messageCarrier) Keys() []string {
	var keys []string
	if c.m.Attributes[traceHeaderAttribute] != "" {
		keys = append(keys, TraceHeaderKey)
	}
	for name, v := range c.m.MessageAttributes {
		if v.BaseType() == "String" {
			keys = append(keys, name)
		}
	}
	return keys
}
