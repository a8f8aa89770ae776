// Package telemetry is the span and instrument plumbing sqskit's packages
// share: OpenTelemetry's messaging semantic conventions for SQS, spoken
// through smithy-go's tracing and metrics interfaces, so that nothing in the
// core module depends on OpenTelemetry.
//
// It is lean on purpose (the standard library and smithy-go's tracing and
// metrics only): package handler, which a Lambda links, uses it.
//
// When a package is given no TracerProvider or MeterProvider (or smithy-go's
// no-op ones), every method here returns at once without allocating: the
// hot paths pay a nil check.
package telemetry

import (
	"context"
	"strings"

	"github.com/aws/smithy-go/metrics"
	"github.com/aws/smithy-go/tracing"
)

// Attribute keys, from OpenTelemetry's messaging semantic conventions (and
// its SQS page), plus sqskit's own under "sqskit.".
const (
	AttrSystem          = "messaging.system"
	AttrDestination     = "messaging.destination.name"
	AttrOperationType   = "messaging.operation.type"
	AttrOperationName   = "messaging.operation.name"
	AttrMessageID       = "messaging.message.id"
	AttrBatchCount      = "messaging.batch.message_count"
	AttrQueueURL        = "aws.sqs.queue.url"
	AttrErrorType       = "error.type"
	AttrReplayOutcome   = "sqskit.replay.outcome"
	AttrReplayReason    = "sqskit.replay.reason"
	AttrReceiveCount    = "sqskit.message.receive_count"
	AttrMessageGroupID  = "sqskit.message.group_id"
	AttrHandlerName     = "sqskit.handler.name"
	SystemSQS           = "aws_sqs"
	ErrorTypeOther      = "_OTHER"
	ErrorTypeCanceled   = "canceled"
	ErrorTypeTimeout    = "timeout"
	ErrorTypePanic      = "panic"
	ErrorTypeHandler    = "handler_error"
	OperationSend       = "send"
	OperationReceive    = "receive"
	OperationProcess    = "process"
	OperationSettle     = "settle"
	OperationDelete     = "delete"
	OperationVisibility = "change_visibility"
)

// QueueName is the last path element of a queue URL, or the last field of
// a queue ARN: the messaging.destination.name of a queue.
func QueueName(urlOrARN string) string {
	if i := strings.LastIndexAny(urlOrARN, "/:"); i >= 0 {
		return urlOrARN[i+1:]
	}
	return urlOrARN
}

// Tracer starts spans about one queue, or none when tracing is off (the zero
// Tracer).
type Tracer struct {
	t     tracing.Tracer
	queue string            // messaging.destination.name
	url   string            // aws.sqs.queue.url, "" when unknown (Lambda)
	names map[string]string // operation name → span name, built once by NewTracer
}

// NewTracer returns a Tracer from tp under scope (the package path), for the
// queue named by urlOrARN; a nil or no-op tp gives the zero Tracer.
func NewTracer(tp tracing.TracerProvider, scope, urlOrARN string) Tracer {
	if !TracingOn(tp) {
		return Tracer{}
	}
	t := Tracer{t: tp.Tracer(scope), queue: QueueName(urlOrARN), names: map[string]string{}}
	if strings.Contains(urlOrARN, "://") {
		t.url = urlOrARN
	}
	for _, op := range []string{OperationSend, OperationReceive, OperationProcess, OperationDelete, OperationVisibility} {
		t.names[op] = op + " " + t.queue
	}
	return t
}

// TracingOn reports whether tp records anything.
func TracingOn(tp tracing.TracerProvider) bool {
	switch tp.(type) {
	case nil, tracing.NopTracerProvider, *tracing.NopTracerProvider:
		return false
	}
	return true
}

// On reports whether spans are recorded.
func (t Tracer) On() bool { return t.t != nil }

// ForQueue returns the Tracer for another queue of the same provider (a
// replay target, a Lambda's event source).
func (t Tracer) ForQueue(urlOrARN string) Tracer {
	if t.t == nil {
		return t
	}
	o := Tracer{t: t.t, queue: QueueName(urlOrARN)}
	if strings.Contains(urlOrARN, "://") {
		o.url = urlOrARN
	}
	return o
}

// Start starts a span named "<operation name> <queue>", with the
// conventions' attributes for an operation of type opType. It returns ctx
// and a zero Span when tracing is off.
func (t Tracer) Start(ctx context.Context, kind tracing.SpanKind, opType, opName string) (context.Context, Span) {
	if t.t == nil {
		return ctx, Span{}
	}
	name, ok := t.names[opName]
	if !ok {
		name = opName + " " + t.queue
	}
	ctx, s := t.t.StartSpan(ctx, name, kindOption(kind))
	s.SetProperty(AttrSystem, SystemSQS)
	s.SetProperty(AttrDestination, t.queue)
	s.SetProperty(AttrOperationType, opType)
	s.SetProperty(AttrOperationName, opName)
	if t.url != "" {
		s.SetProperty(AttrQueueURL, t.url)
	}
	return ctx, Span{s: s}
}

// kindOption sets a span's kind, with a function value that captures
// nothing, so starting a span allocates no closure.
func kindOption(kind tracing.SpanKind) tracing.SpanOption {
	switch kind {
	case tracing.SpanKindClient:
		return clientKind
	case tracing.SpanKindProducer:
		return producerKind
	case tracing.SpanKindConsumer:
		return consumerKind
	}
	return internalKind
}

func clientKind(o *tracing.SpanOptions)   { o.Kind = tracing.SpanKindClient }
func producerKind(o *tracing.SpanOptions) { o.Kind = tracing.SpanKindProducer }
func consumerKind(o *tracing.SpanOptions) { o.Kind = tracing.SpanKindConsumer }
func internalKind(o *tracing.SpanOptions) { o.Kind = tracing.SpanKindInternal }

// Span is a started span, or nothing (the zero Span). Its methods are safe
// on the zero value.
type Span struct{ s tracing.Span }

// On reports whether the span records anything.
func (s Span) On() bool { return s.s != nil }

// Set sets an attribute.
func (s Span) Set(key string, value any) {
	if s.s != nil {
		s.s.SetProperty(key, value)
	}
}

// Event records an event on the span.
func (s Span) Event(name string) {
	if s.s != nil {
		s.s.AddEvent(name)
	}
}

// Fail marks the span failed with an error.type.
func (s Span) Fail(errorType string) {
	if s.s != nil {
		s.s.SetProperty(AttrErrorType, errorType)
		s.s.SetStatus(tracing.SpanStatusError)
	}
}

// End ends the span, failed with ErrorType(err) when err is not nil.
func (s Span) End(err error) {
	if s.s == nil {
		return
	}
	if err != nil {
		s.Fail(ErrorType(err))
	}
	s.s.End()
}

// ErrorType is a low-cardinality error.type for an error from SQS or a
// context: the API error code without SQS's legacy prefix, "canceled",
// "timeout", or "_OTHER". Packages map their own sentinel errors first.
func ErrorType(err error) string {
	t := ErrorTypeOther
	Walk(err, func(e error) bool {
		switch e {
		case context.Canceled:
			t = ErrorTypeCanceled
			return true
		case context.DeadlineExceeded:
			t = ErrorTypeTimeout
			return true
		}
		if api, ok := e.(interface{ ErrorCode() string }); ok {
			t = strings.TrimPrefix(api.ErrorCode(), "AWS.SimpleQueueService.")
			return true
		}
		return false
	})
	return t
}

// Failure is a sentinel failure of a message that names its error.type:
// the handler's and the consumer's errors are Failures, so one walk names
// them all (FailureType) and no package copies another's list.
type Failure struct {
	Msg  string
	Type string // low cardinality, snake_case
}

func (f *Failure) Error() string { return f.Msg }

// NewFailure returns a sentinel *Failure: the message's failure is msg, its
// error.type is errorType.
func NewFailure(msg, errorType string) error { return &Failure{Msg: msg, Type: errorType} }

// FailureType is the error.type of a message's failure: that of the first
// *Failure in err's chain, or "handler_error" for an error a handler
// returned. A panic is the caller's to name first (ErrorTypePanic): its
// error type belongs to package handler.
func FailureType(err error) string {
	t := ErrorTypeHandler
	Walk(err, func(e error) bool {
		f, ok := e.(*Failure)
		if ok {
			t = f.Type
		}
		return ok
	})
	return t
}

// Walk calls visit on err and every error it wraps, depth first, until
// visit returns true, which it reports. It is errors.Is and errors.As
// without their reflection, which a lean Lambda binary does without.
func Walk(err error, visit func(error) bool) bool {
	for err != nil {
		if visit(err) {
			return true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if Walk(e, visit) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}

// MetricsOn reports whether mp records anything.
func MetricsOn(mp metrics.MeterProvider) bool {
	switch mp.(type) {
	case nil, metrics.NopMeterProvider, *metrics.NopMeterProvider:
		return false
	}
	return true
}
