package fifo

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/smithy-go/tracing"

	"github.com/sqskit/sqskit/internal/telemetry"
)

// scope is the instrumentation scope of this package's spans and metrics.
const scope = "github.com/sqskit/sqskit/fifo"

// observer reports sends: spans, metrics and the log. With no
// TracerProvider or MeterProvider (the default) it costs a nil check.
//
// Tracers, meters, spans and instruments are user code: each call is
// guarded, so one that panics or returns nil costs its own span or
// measurement (logged once per kind), never the send.
type observer struct {
	log      *slog.Logger
	faults   *telemetry.Faults
	tracer   telemetry.Tracer
	sent     telemetry.Counter
	skipped  telemetry.Counter
	duration telemetry.Histogram
	attrs    *telemetry.Attrs // the queue's metric attributes; nil when metrics are off
	callAttr *telemetry.Attrs // attrs with the send operation, for call durations
}

func newObserver(o *SenderOptions, queueURL string) observer {
	f := telemetry.NewFaults(o.Logger)
	m := f.Meter(o.MeterProvider, scope)
	ob := observer{log: o.Logger, faults: f, tracer: f.Tracer(o.TracerProvider, scope, queueURL)}
	if m.On() {
		defer f.Recover(telemetry.KindMeter) // then the instruments made so far
		ob.attrs = telemetry.QueueAttrs(queueURL)
		ob.callAttr = ob.attrs.With(telemetry.KV{Key: telemetry.AttrOperationName, Value: telemetry.OperationSend})
		ob.sent = m.Counter(telemetry.MetricSent, "{message}", "Messages sent, by error.type when they failed.")
		ob.skipped = m.Counter(telemetry.MetricTraceSkipped, "{field}", "Trace context fields not added to a message for want of room (ten attributes, MaxMessageBytes) or because SQS would refuse them.")
		ob.duration = m.Histogram(telemetry.MetricOperationDuration, "s", "SQS call duration, by operation name and error.type.")
	}
	return ob
}

// startSend starts the PRODUCER span of a Send, SendBatch or Batcher.Send
// of n messages.
func (ob *observer) startSend(ctx context.Context, n int) (context.Context, telemetry.Span) {
	ctx, span := ob.faults.Start(ob.tracer, ctx, tracing.SpanKindProducer, telemetry.OperationSend, telemetry.OperationSend)
	if n != 1 {
		defer ob.faults.Recover(telemetry.KindTracer)
		span.Set(telemetry.AttrBatchCount, n)
	}
	return ctx, span
}

// endSend ends a send's span with its results, and counts them.
func (ob *observer) endSend(ctx context.Context, span telemetry.Span, results ...Result) {
	k := telemetry.KindMeter
	defer ob.faults.RecoverIn(&k)
	failed := ""
	for _, r := range results {
		if r.Err == nil {
			ob.sent.Add(ctx, 1, ob.attrs)
			continue
		}
		t := errorType(r.Err)
		if failed == "" {
			failed = t
		}
		if ob.attrs != nil {
			ob.sent.Add(ctx, 1, ob.attrs.With(telemetry.KV{Key: telemetry.AttrErrorType, Value: t}))
		}
	}
	if k = telemetry.KindTracer; !span.On() {
		return
	}
	if len(results) == 1 && results[0].MessageID != "" {
		span.Set(telemetry.AttrMessageID, results[0].MessageID)
	}
	if failed != "" {
		span.Fail(failed)
	}
	span.End(nil)
}

// call times one SQS call for messaging.client.operation.duration.
func (ob *observer) call() time.Time {
	if !ob.duration.On() {
		return time.Time{}
	}
	return time.Now()
}

func (ob *observer) called(ctx context.Context, start time.Time, err error) {
	if !ob.duration.On() {
		return
	}
	defer ob.faults.Recover(telemetry.KindMeter)
	attrs := ob.callAttr
	if err != nil {
		attrs = attrs.With(telemetry.KV{Key: telemetry.AttrErrorType, Value: telemetry.ErrorType(err)})
	}
	ob.duration.Seconds(ctx, time.Since(start), attrs)
}

// traceSkipped reports trace context fields left out of message index.
func (ob *observer) traceSkipped(ctx context.Context, index int, keys []string) {
	func() {
		defer ob.faults.Recover(telemetry.KindMeter)
		ob.skipped.Add(ctx, int64(len(keys)), ob.attrs)
	}()
	ob.log.LogAttrs(ctx, slog.LevelDebug, "fifo: trace context left out of a message: no room or not accepted by SQS",
		slog.Int("index", index), slog.String("keys", strings.Join(keys, ",")))
}

// errorType names a send's failure for error.type.
func errorType(err error) string {
	var v *ValidationError
	var blocked *GroupBlockedError
	var window *WindowExceededError
	var entry *EntryError
	switch {
	case errors.As(err, &v):
		return "invalid"
	case errors.As(err, &blocked):
		return "group_blocked"
	case errors.As(err, &window):
		return "dedup_window_exceeded"
	case errors.Is(err, ErrClosed):
		return "closed"
	case errors.As(err, &entry):
		return strings.TrimPrefix(entry.Code, "AWS.SimpleQueueService.")
	}
	return telemetry.ErrorType(err)
}
