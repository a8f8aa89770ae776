package consumer

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/tracing"

	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/internal/telemetry"
)

// scope is the instrumentation scope of this package's spans and metrics.
const scope = "github.com/sqskit/sqskit/consumer"

// observer reports what happens to messages and calls: hooks, spans,
// metrics and Stats. With no TracerProvider, MeterProvider or Propagator
// (the default) it costs a nil check per event.
type observer struct {
	hooks   *Hooks
	stats   *counters
	prop    Propagator
	tracer  telemetry.Tracer
	metrics telemetry.ConsumerMetrics
	attrs   *telemetry.Attrs // the queue's metric attributes; nil when metrics are off
	// callAttrs are the attributes of each operation's call durations.
	callAttrs map[string]*telemetry.Attrs
	settle    telemetry.SettleMetrics
}

func newObserver(o *Options, stats *counters, queueURL string) observer {
	ob := observer{hooks: &o.Hooks, stats: stats, prop: o.Propagator,
		tracer:  telemetry.NewTracer(o.TracerProvider, scope, queueURL),
		metrics: telemetry.NewConsumerMetrics(telemetry.NewMeter(o.MeterProvider, scope)),
	}
	if ob.metrics.On {
		ob.settle = telemetry.NewSettleMetrics(ob.metrics.Meter())
		ob.attrs = telemetry.QueueAttrs(queueURL)
		ob.callAttrs = map[string]*telemetry.Attrs{}
		for _, op := range []string{telemetry.OperationReceive, telemetry.OperationDelete, telemetry.OperationVisibility} {
			ob.callAttrs[op] = ob.attrs.With(telemetry.KV{Key: telemetry.AttrOperationName, Value: op})
		}
	}
	return ob
}

// begin gives a fresh message its ctx: its producer's trace context and its
// process span, children of base. Callers hold run.mu: the heartbeat may
// read t.ctx as soon as t is tracked.
func (ob *observer) begin(base context.Context, t *inflight) {
	t.ctx = base
	if ob.prop != nil {
		t.ctx = handler.Extract(base, ob.prop, t.msg)
	}
	if ob.tracer.On() {
		t.ctx, t.span = ob.tracer.Start(t.ctx, tracing.SpanKindConsumer, telemetry.OperationProcess, telemetry.OperationProcess)
		t.span.Set(telemetry.AttrMessageID, t.id)
		if t.group != "" {
			t.span.Set(telemetry.AttrMessageGroupID, t.group)
		}
		t.span.Set(telemetry.AttrReceiveCount, t.receives)
	}
}

// received reports a fresh message, received at now.
func (ob *observer) received(t *inflight, now time.Time) {
	ob.stats.received.Add(1)
	if ob.metrics.On {
		ob.metrics.Consumed.Add(t.ctx, 1, ob.attrs)
		if age, ok := telemetry.Age(t.msg.Attributes["SentTimestamp"], now); ok {
			ob.metrics.MessageAge.Seconds(t.ctx, age, ob.attrs)
		}
	}
	if ob.hooks.Received != nil {
		ob.hooks.Received(t.ctx, t.msg)
	}
}

// settled reports a message's outcome, once: handled (err nil) or failed;
// ran says whether its handler ran, for took. It ends the process span.
func (ob *observer) settled(t *inflight, err error, took time.Duration, ran bool) {
	if err == nil {
		ob.stats.handled.Add(1)
		if ob.hooks.Handled != nil {
			ob.hooks.Handled(t.ctx, t.msg, took)
		}
	} else {
		ob.stats.failed.Add(1)
		if ob.hooks.Failed != nil {
			ob.hooks.Failed(t.ctx, t.msg, err)
		}
	}
	if ob.metrics.On {
		attrs := ob.attrs
		if err == nil {
			ob.metrics.Handled.Add(t.ctx, 1, attrs)
		} else {
			attrs = attrs.With(telemetry.KV{Key: telemetry.AttrErrorType, Value: errorType(err)})
			ob.metrics.Failed.Add(t.ctx, 1, attrs)
		}
		if ran {
			ob.metrics.ProcessDuration.Seconds(t.ctx, took, attrs)
		}
	}
	if t.span.On() {
		if err != nil {
			t.span.Fail(errorType(err))
		}
		t.span.End(nil)
	}
}

// held reports a Hold outcome: no failure. It ends the process span.
func (ob *observer) held(t *inflight, d, took time.Duration) {
	ob.stats.held.Add(1)
	if ob.metrics.On {
		ob.settle.Held.Add(t.ctx, 1, ob.attrs)
		ob.metrics.ProcessDuration.Seconds(t.ctx, took, ob.attrs)
	}
	if ob.hooks.Held != nil {
		ob.hooks.Held(t.ctx, t.msg, d)
	}
	t.span.Event("held")
	t.span.End(nil)
}

// escalated ends the process span of a message the parking queue has.
func (ob *observer) escalated(t *inflight) {
	t.span.Event("parked")
	t.span.End(nil)
}

// parked reports a parked message deleted from the queue.
func (ob *observer) parked(t *inflight, reason string) {
	ob.stats.parked.Add(1)
	ob.settle.Parked.Add(t.ctx, 1, ob.attrs)
	if ob.hooks.Parked != nil {
		ob.hooks.Parked(t.ctx, t.msg, reason)
	}
}

func (ob *observer) deleted(t *inflight) {
	ob.stats.deleted.Add(1)
	ob.settle.Deleted.Add(t.ctx, 1, ob.attrs)
	if ob.hooks.Deleted != nil {
		ob.hooks.Deleted(t.ctx, t.msg)
	}
}

func (ob *observer) deleteFailed(t *inflight, err error) {
	ob.stats.deleteFailed.Add(1)
	ob.settle.DeleteFailed.Add(t.ctx, 1, ob.attrs)
	if ob.hooks.DeleteFailed != nil {
		ob.hooks.DeleteFailed(t.ctx, t.msg, err)
	}
}

func (ob *observer) released(t *inflight, d time.Duration) {
	ob.stats.released.Add(1)
	ob.settle.Released.Add(t.ctx, 1, ob.attrs)
	if ob.hooks.Released != nil {
		ob.hooks.Released(t.ctx, t.msg, d)
	}
}

func (ob *observer) extended(t *inflight, d time.Duration) {
	ob.stats.extended.Add(1)
	ob.settle.Extended.Add(t.ctx, 1, ob.attrs)
	if ob.hooks.Extended != nil {
		ob.hooks.Extended(t.ctx, t.msg, d)
	}
}

func (ob *observer) leaseLost(t *inflight, err error) {
	ob.stats.leaseLost.Add(1)
	ob.settle.LeaseLost.Add(t.ctx, 1, ob.attrs)
	t.span.Event("lease lost")
	if ob.hooks.LeaseLost != nil {
		ob.hooks.LeaseLost(t.ctx, t.msg, err)
	}
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
		ctx, c.span = ob.tracer.Start(ctx, tracing.SpanKindClient, opType, opName)
		if n > 0 {
			c.span.Set(telemetry.AttrBatchCount, n)
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
	if got >= 0 {
		c.span.Set(telemetry.AttrBatchCount, got)
	}
	c.span.End(err)
	if h := c.ob.settle.OperationDuration; h.On() {
		attrs := c.ob.callAttrs[c.name]
		if err != nil {
			attrs = attrs.With(telemetry.KV{Key: telemetry.AttrErrorType, Value: telemetry.ErrorType(err)})
		}
		h.Seconds(ctx, time.Since(c.start), attrs)
	}
}

// endReceive ends a receive's call; one cut short by shutdown (ctx done) is
// no failure.
func (c call) endReceive(ctx context.Context, out *sqs.ReceiveMessageOutput, err error) {
	if !c.span.On() && !c.ob.settle.OperationDuration.On() {
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
	g := ob.metrics.Meter().Gauge(telemetry.MetricInFlight, "{message}", "Messages held by the consumer: received and not yet deleted or released.", ob.attrs, ob.stats.inFlight.Load)
	if g == nil {
		return func() {}
	}
	return g.Stop
}
