package replay

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/tracing"

	"github.com/sqskit/sqskit/internal/sqsrule"
	"github.com/sqskit/sqskit/internal/telemetry"
)

// scope is the instrumentation scope of this package's spans and metrics.
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
// of OpenTelemetry's propagation.TextMapPropagator; the Replayer calls
// Extract, so that a message's decision span is its producer's child. One
// value serves this package, fifo, consumer and handler (see
// handler.Propagator for a few-line OpenTelemetry adapter).
type Propagator interface {
	Inject(ctx context.Context, c Carrier)
	Extract(ctx context.Context, c Carrier) context.Context
}

// observer reports what a Replayer does: hooks, spans, metrics. With no
// TracerProvider, MeterProvider or Propagator (the default) it costs a nil
// check per event.
type observer struct {
	hooks     *Hooks
	prop      Propagator
	tracer    telemetry.Tracer // the DLQ's
	consumed  telemetry.Counter
	decisions telemetry.Counter
	sent      telemetry.Counter
	duration  telemetry.Histogram
	attrs     *telemetry.Attrs // the DLQ's metric attributes; nil when metrics are off
}

func newObserver(o *Options, dlq string) observer {
	ob := observer{hooks: &o.Hooks, prop: o.Propagator, tracer: telemetry.NewTracer(o.TracerProvider, scope, dlq)}
	if m := telemetry.NewMeter(o.MeterProvider, scope); m.On() {
		ob.attrs = telemetry.QueueAttrs(dlq)
		ob.consumed = m.Counter(telemetry.MetricConsumed, "{message}", "Messages received from the DLQ.")
		ob.decisions = m.Counter(telemetry.MetricReplayDecisions, "{message}", "Outcomes of messages taken from the DLQ, by sqskit.replay.outcome and sqskit.replay.reason.")
		ob.sent = m.Counter(telemetry.MetricSent, "{message}", "Messages sent to a target or the operator queue (messaging.destination.name), by error.type when the send failed.")
		ob.duration = m.Histogram(telemetry.MetricOperationDuration, "s", "SQS call duration, by operation name and error.type.")
	}
	return ob
}

// begin gives an item its ctx (its producer's trace context, a child of
// ctx) and its decision span.
func (ob *observer) begin(ctx context.Context, it *item) {
	it.ctx = ctx
	if ob.prop != nil {
		it.ctx = ob.prop.Extract(ctx, messageCarrier{it.msg})
	}
	if ob.tracer.On() && it.state != left {
		it.ctx, it.span = ob.tracer.Start(it.ctx, tracing.SpanKindConsumer, telemetry.OperationProcess, telemetry.OperationProcess)
		it.span.Set(telemetry.AttrMessageID, aws.ToString(it.msg.MessageId))
	}
}

// decided reports an item's outcome: its span, the decision metric.
func (ob *observer) decided(it *item, dryRun bool) {
	outcome := it.state.String()
	if dryRun && it.state == pending {
		outcome = "dry_run_" + it.decision.Action.String()
	}
	reason := string(it.decision.Reason)
	if ob.attrs != nil {
		ob.decisions.Add(it.ctx, 1, ob.attrs.With(
			telemetry.KV{Key: telemetry.AttrReplayOutcome, Value: outcome},
			telemetry.KV{Key: telemetry.AttrReplayReason, Value: reason}))
	}
	if !it.span.On() {
		return
	}
	it.span.Set(telemetry.AttrReplayOutcome, outcome)
	if reason != "" {
		it.span.Set(telemetry.AttrReplayReason, reason)
	}
	if it.decision.Attempt > 0 {
		it.span.Set("sqskit.replay.attempt", it.decision.Attempt)
	}
	if it.state == failed || it.state == rejected {
		it.span.Fail(outcome)
	}
	it.span.End(nil)
}

// call is one SQS call in progress: its span and its start.
type call struct {
	ob    *observer
	span  telemetry.Span
	name  string
	queue string
	start time.Time
}

// startCall starts the span of a call about queue (kind CLIENT, or PRODUCER
// for sends) and returns the ctx to make it with.
func (ob *observer) startCall(ctx context.Context, queue string, kind tracing.SpanKind, opType, opName string, n int) (context.Context, call) {
	c := call{ob: ob, name: opName, queue: queue}
	if ob.tracer.On() {
		ctx, c.span = ob.tracer.ForQueue(queue).Start(ctx, kind, opType, opName)
		if n > 0 {
			c.span.Set(telemetry.AttrBatchCount, n)
		}
	}
	if ob.duration.On() {
		c.start = time.Now()
	}
	return ctx, c
}

// end ends the call with its error; got, when not negative, is the
// messages a receive returned.
func (c call) end(ctx context.Context, got int, err error) {
	if got >= 0 {
		c.span.Set(telemetry.AttrBatchCount, got)
	}
	c.span.End(err)
	if h := c.ob.duration; h.On() {
		attrs := telemetry.QueueAttrs(c.queue).With(telemetry.KV{Key: telemetry.AttrOperationName, Value: c.name})
		if err != nil {
			attrs = attrs.With(telemetry.KV{Key: telemetry.AttrErrorType, Value: telemetry.ErrorType(err)})
		}
		h.Seconds(ctx, time.Since(c.start), attrs)
	}
}

// sentTo counts a message sent to queue, failed with err or not.
func (ob *observer) sentTo(ctx context.Context, queue string, err error) {
	if ob.attrs == nil {
		return
	}
	attrs := telemetry.QueueAttrs(queue)
	if err != nil {
		attrs = attrs.With(telemetry.KV{Key: telemetry.AttrErrorType, Value: telemetry.ErrorType(err)})
	}
	ob.sent.Add(ctx, 1, attrs)
}

// messageCarrier reads a received message's trace context. Set does
// nothing: the replayer keeps a message's trace context as it is.
type messageCarrier struct{ m *types.Message }

func (c messageCarrier) Get(key string) string {
	if key == "X-Amzn-Trace-Id" {
		return c.m.Attributes[string(types.MessageSystemAttributeNameAWSTraceHeader)]
	}
	if v, ok := c.m.MessageAttributes[key]; ok && sqsrule.BaseDataType(aws.ToString(v.DataType)) == "String" {
		return aws.ToString(v.StringValue)
	}
	return ""
}

func (messageCarrier) Set(string, string) {}

func (c messageCarrier) Keys() []string {
	var keys []string
	if c.m.Attributes[string(types.MessageSystemAttributeNameAWSTraceHeader)] != "" {
		keys = append(keys, "X-Amzn-Trace-Id")
	}
	for name, v := range c.m.MessageAttributes {
		if sqsrule.BaseDataType(aws.ToString(v.DataType)) == "String" {
			keys = append(keys, name)
		}
	}
	return keys
}

// String names a state for the sqskit.replay.outcome attribute.
func (s state) String() string {
	switch s {
	case pending:
		return "pending"
	case replayed:
		return "replayed"
	case escalated:
		return "escalated"
	case held:
		return "held"
	case waiting:
		return "waiting"
	case skipped:
		return "skipped"
	case left:
		return "left"
	case failed:
		return "failed"
	case rejected:
		return "rejected"
	}
	return "unknown"
}
