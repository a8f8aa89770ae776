package handler

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/smithy-go/metrics"
	"github.com/aws/smithy-go/tracing"

	"github.com/sqskit/sqskit/internal/ctxkey"
	"github.com/sqskit/sqskit/internal/dispatch"
	"github.com/sqskit/sqskit/internal/telemetry"
)

// scope is the instrumentation scope of this package's spans and metrics.
const scope = "github.com/sqskit/sqskit/handler"

// LambdaOptions configure a Lambda handler. Zero values mean the defaults.
type LambdaOptions struct {
	// Concurrency is how many handler calls of one invocation run at once,
	// one message each (FIFO groups still one at a time; a BatchHandler
	// gets the whole event in one call). 0 means 1: in order, as Lambda's
	// own examples do. Negative is an error.
	Concurrency int
	// DeadlineMargin: no message starts once the invocation's deadline is
	// closer than this; those not started are reported failed, so a timeout
	// does not make Lambda retry the whole batch. Default 2 s; negative is
	// an error.
	DeadlineMargin time.Duration
	// StopOnFirstFailure applies the literal rule for FIFO sources: at the
	// first failure, every message not yet started is reported failed.
	// Default false: only the failed message's group stops.
	StopOnFirstFailure bool
	// FailWhenAllFail returns an error when every message failed, so the
	// invocation itself counts as failed (for alarms and for event sources
	// that back off on errors). The whole batch is then retried, as it would
	// be from the response. Default false.
	FailWhenAllFail bool
	// Middleware wraps the Handler, the first listed outermost (see Chain).
	// Default none. NewBatchLambda refuses it: use BatchMiddleware.
	Middleware []Middleware
	// BatchMiddleware wraps the BatchHandler of NewBatchLambda, the first
	// listed outermost. Default none. NewLambda refuses it.
	BatchMiddleware []BatchMiddleware
	// TracerProvider, when set, records a CONSUMER span "process <queue>"
	// per message, from the start of the invocation until its outcome, and
	// one per BatchHandler call. Default none (smithy-go's interface; plug
	// OpenTelemetry in with smithy-go's smithyoteltracing.Adapt).
	TracerProvider tracing.TracerProvider
	// MeterProvider, when set, records messages received, handled and
	// failed, handler duration and message age. Default none (smithy-go's
	// interface; smithyotelmetrics.Adapt for OpenTelemetry).
	MeterProvider metrics.MeterProvider
	// Propagator, when set, extracts each message's trace context
	// (AWSTraceHeader, traceparent) into its handler's ctx, so the process
	// span is the producer's child. Default none.
	Propagator Propagator
	// Logger receives failures (with a panic's stack), never bodies. Default
	// silent.
	Logger *slog.Logger
	// Hooks are called for each message. Default none.
	Hooks Hooks
	// Parker, when set, carries out Hold and Escalate outcomes: a held
	// message's visibility is set to its hold through it (the message is
	// then reported to Lambda as a failure, so it stays, and comes back when
	// the hold ends), and an escalated one is parked through it (then
	// reported a success, so Lambda deletes it; a park that fails is a
	// failure). consumer.NewParker makes one over an SQS client. Default
	// none: this package links no SQS client, and Hold and Escalate
	// outcomes are failures reported to Lambda (the message comes back after
	// the queue's visibility timeout; SQS's redrive policy moves it after
	// maxReceiveCount).
	Parker Parker
}

// Lambda handles SQS events in AWS Lambda, from an event source mapping or
// as an EventBridge Pipes target, reporting partial batch failures. Use it
// as lambda.Start(l.Handle) with ReportBatchItemFailures enabled on the
// event source mapping (Pipes reads the same response).
//
// It keeps no state between invocations, so one value serves concurrent
// invocations.
type Lambda struct {
	handler Handler
	batch   BatchHandler
	// outcomes is eachMessage or wholeBatch, set by the constructor: a
	// Lambda links only the path its constructor chose.
	outcomes func(ctx context.Context, inv *invocation) []error
	opts     LambdaOptions
	tracer   telemetry.Tracer
	metrics  telemetry.ConsumerMetrics
	faults   *telemetry.Faults // what user extensions cost: counted, logged once
}

// ErrConfig matches every invalid option with errors.Is.
var ErrConfig = errors.New("handler: invalid options")

// NewLambda returns a Lambda handler around h. Invalid options return an
// error matching ErrConfig; a nil option function is skipped.
func NewLambda(h Handler, optFns ...func(*LambdaOptions)) (*Lambda, error) {
	if h == nil {
		return nil, fmt.Errorf("%w: nil handler", ErrConfig)
	}
	l, err := resolveLambda(&Lambda{handler: h}, optFns)
	if err != nil {
		return nil, err
	}
	if len(l.opts.BatchMiddleware) > 0 {
		return nil, fmt.Errorf("%w: BatchMiddleware with a Handler: use Middleware", ErrConfig)
	}
	l.handler, l.outcomes = Chain(h, l.opts.Middleware...), l.eachMessage
	return l, nil
}

// NewBatchLambda returns a Lambda handler that gives each invocation's
// messages to h at once and reports the ones it failed. Concurrency,
// DeadlineMargin and StopOnFirstFailure do not apply: h decides.
func NewBatchLambda(h BatchHandler, optFns ...func(*LambdaOptions)) (*Lambda, error) {
	if h == nil {
		return nil, fmt.Errorf("%w: nil batch handler", ErrConfig)
	}
	l, err := resolveLambda(&Lambda{batch: h}, optFns)
	if err != nil {
		return nil, err
	}
	if len(l.opts.Middleware) > 0 {
		return nil, fmt.Errorf("%w: Middleware with a BatchHandler: use BatchMiddleware", ErrConfig)
	}
	l.batch, l.outcomes = ChainBatch(h, l.opts.BatchMiddleware...), l.wholeBatch
	return l, nil
}

func resolveLambda(l *Lambda, optFns []func(*LambdaOptions)) (*Lambda, error) {
	var o LambdaOptions
	for _, fn := range optFns {
		if fn != nil { // an option left unset by a condition
			fn(&o)
		}
	}
	switch {
	case o.Concurrency < 0:
		return nil, fmt.Errorf("%w: Concurrency %d is negative", ErrConfig, o.Concurrency)
	case o.DeadlineMargin < 0:
		return nil, fmt.Errorf("%w: DeadlineMargin %v is negative", ErrConfig, o.DeadlineMargin)
	}
	if o.Concurrency == 0 {
		o.Concurrency = 1
	}
	if o.DeadlineMargin == 0 {
		o.DeadlineMargin = 2 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	l.opts = o
	l.faults = telemetry.NewFaults(o.Logger)
	l.providers(o.TracerProvider, o.MeterProvider)
	return l, nil
}

// MalformedEventError is returned for an event Lambda should not have sent:
// a record without a messageId cannot be reported on its own, so the whole
// batch is failed and retried.
type MalformedEventError struct {
	Record int
	Reason string
}

func (e *MalformedEventError) Error() string {
	return fmt.Sprintf("handler: malformed SQS event: record %d: %s", e.Record, e.Reason)
}

// ErrAllFailed is returned, with the response, when FailWhenAllFail is set
// and every message failed.
var ErrAllFailed = errors.New("handler: every message of the batch failed")

// Event is one invocation's batch of SQS records, in either shape Lambda
// delivers: an SQS event source mapping's {"Records":[…]} object, or the
// bare JSON array of the same records that EventBridge Pipes passes to a
// Lambda target. Convert an events.SQSEvent with Event(e).
type Event events.SQSEvent

// UnmarshalJSON accepts the object and the array shape.
func (e *Event) UnmarshalJSON(b []byte) error {
	if trimmed := bytes.TrimLeft(b, " \t\r\n"); len(trimmed) > 0 && trimmed[0] == '[' {
		var records []events.SQSMessage
		if err := json.Unmarshal(b, &records); err != nil {
			return err
		}
		*e = Event{Records: records}
		return nil
	}
	var ev events.SQSEvent
	if err := json.Unmarshal(b, &ev); err != nil {
		return err
	}
	*e = Event(ev)
	return nil
}

// Handle handles one invocation: use it as lambda.Start(l.Handle), for an
// SQS event source mapping or an EventBridge Pipes target. The response
// lists exactly the messageIds that failed or were not handled, each once;
// an empty list means all succeeded. An event with no records is a success.
// FIFO is recognised by the .fifo suffix of the event source ARN. Handle
// returns when every message is settled, or when ctx is done (messages not
// finished are then reported failed), even if a handler panics or calls
// runtime.Goexit.
func (l *Lambda) Handle(ctx context.Context, event Event) (events.SQSEventResponse, error) {
	inv := &invocation{l: l, msgs: make([]*Message, 0, len(event.Records)), parker: l.opts.Parker}
	seen := make(map[string]bool, len(event.Records))
	source := ""
	for i, r := range event.Records {
		if r.MessageId == "" {
			return events.SQSEventResponse{}, &MalformedEventError{Record: i, Reason: "no messageId"}
		}
		// Any record naming a FIFO source makes the event FIFO, a duplicate
		// too: Lambda gives every record of an invocation its queue's ARN,
		// so a disagreement is a malformed event, and treating it as FIFO
		// only holds back later messages of a group (redelivered, never
		// lost), where treating it as standard could break a group's order.
		inv.fifo = inv.fifo || isFIFO(r.EventSourceARN)
		if seen[r.MessageId] {
			continue // a duplicate record: handle and report it once
		}
		seen[r.MessageId] = true
		if source == "" {
			source = r.EventSourceARN
		}
		m := fromRecord(r)
		inv.msgs = append(inv.msgs, m)
		if inv.parker != nil {
			inv.originals = append(inv.originals, *m)
		}
		inv.ids, inv.groups = append(inv.ids, m.ID), append(inv.groups, m.GroupID())
	}
	inv.begin(ctx, source)
	var resp events.SQSEventResponse
	for i, err := range l.outcomes(ctx, inv) {
		if err != nil {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: inv.ids[i]})
		}
	}
	inv.signals <- signal{i: -2}
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), signalsGrace)
		defer cancel()
	}
	select {
	case <-inv.reported:
	case <-ctx.Done():
	}
	if l.opts.FailWhenAllFail && len(inv.msgs) > 0 && len(resp.BatchItemFailures) == len(inv.msgs) {
		return resp, ErrAllFailed
	}
	return resp, nil
}

// eachMessage runs the invocation's messages through the per-message
// handler and returns each one's result.
func (l *Lambda) eachMessage(ctx context.Context, inv *invocation) []error {
	run := &batchRun{
		inv: inv, handler: l.handler, concurrency: l.opts.Concurrency, margin: l.opts.DeadlineMargin,
		stopAll: l.opts.StopOnFirstFailure, logger: l.opts.Logger,
	}
	return run.run(ctx)
}

// wholeBatch runs the invocation's messages through the batch handler and
// returns each one's result.
func (l *Lambda) wholeBatch(ctx context.Context, inv *invocation) []error {
	msgs := inv.msgs
	if len(msgs) == 0 {
		return nil
	}
	bctx, span := l.startSpan(inv.tracer, ctx)
	ctxs := make(map[*Message]context.Context, len(msgs))
	for i, m := range msgs {
		ctxs[m] = inv.ctxs[i]
	}
	// Each message's own ctx, for MessageContext.
	bctx = context.WithValue(bctx, ctxkey.Messages{}, ctxs)
	start := time.Now()
	errs := l.callBatch(bctx, msgs)
	took := time.Since(start)
	inv.applyAll(ctx, errs)
	if inv.fifo {
		dispatch.HoldBack(errs, func(i int) string { return inv.groups[i] }, l.opts.StopOnFirstFailure, ErrHeldBack)
	}
	failures := 0
	for i, err := range errs {
		if err != nil {
			failures++
		}
		inv.settle(i, err, took, true)
	}
	if span.On() {
		inv.send(signal{i: -1, span: span, failures: failures})
	}
	return errs
}

// providers sets the tracer and the instruments: a provider that panics,
// or gives nil, leaves its signal off (a typed nil is none).
func (l *Lambda) providers(tp tracing.TracerProvider, mp metrics.MeterProvider) {
	k := telemetry.KindTracer
	defer l.faults.RecoverIn(&k)
	if !dispatch.IsNil(tp) {
		l.tracer = telemetry.NewTracer(tp, scope, "")
	}
	if k = telemetry.KindMeter; !dispatch.IsNil(mp) {
		l.metrics = telemetry.NewConsumerMetrics(telemetry.NewMeter(mp, scope))
	}
}

// startSpan starts a process span for a tracer that may panic or return
// nil (then ctx and no span), and keeps ctx's cancellation whatever ctx it
// returns (telemetry.Within).
func (l *Lambda) startSpan(t telemetry.Tracer, ctx context.Context) (out context.Context, span telemetry.Span) {
	out = ctx
	defer l.faults.Recover(telemetry.KindTracer)
	c, s := t.Start(ctx, tracing.SpanKindConsumer, telemetry.OperationProcess, telemetry.OperationProcess)
	return telemetry.Within(ctx, c), s
}

// callBatch runs the batch handler on its own goroutine, so a
// runtime.Goexit ends only that goroutine: a panic, a Goexit, or ctx ending
// first fails every message.
func (l *Lambda) callBatch(ctx context.Context, msgs []*Message) []error {
	done := make(chan []error, 1)
	go func() {
		returned := false
		defer func() {
			if !returned {
				done <- nil
			}
		}()
		errs := dispatch.InvokeBatch(ctx, l.batch, msgs, panicked, ErrNoResult)
		returned = true
		done <- errs
	}()
	var errs []error
	var cause error
	select {
	case errs = <-done:
		cause = ErrHandlerExited
	case <-ctx.Done():
		cause = fmt.Errorf("%w: the invocation ended before the batch handler returned", ErrNotStarted)
	}
	if errs == nil {
		errs = make([]error, len(msgs))
		for i := range errs {
			errs[i] = cause
		}
		l.opts.Logger.LogAttrs(ctx, slog.LevelError, "handler: batch handler did not return", slog.String("error", cause.Error()))
	}
	for _, err := range errs {
		if p := asPanic(err); p != nil {
			l.opts.Logger.LogAttrs(ctx, slog.LevelError, "handler: batch handler panicked", slog.String("error", p.Error()), slog.String("stack", string(p.Stack)))
			break
		}
	}
	return errs
}
