package handler

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/smithy-go/tracing"

	"github.com/sqskit/sqskit/internal/telemetry/telemetrytest"
)

// tracedEvent is an invocation whose records carry a producer's trace
// context: traceparent on the first, AWSTraceHeader on the second, none on
// the third.
func tracedEvent() Event {
	sent := strconv.FormatInt(time.Now().Add(-90*time.Second).UnixMilli(), 10)
	str := func(s string) *string { return &s }
	return Event{Records: []events.SQSMessage{
		{MessageId: "m1", Body: "ok", EventSourceARN: stdArn, Attributes: map[string]string{"SentTimestamp": sent},
			MessageAttributes: map[string]events.SQSMessageAttribute{"traceparent": {DataType: "String", StringValue: str("00-tproducer-sproducer-01")}}},
		{MessageId: "m2", Body: "bad", EventSourceARN: stdArn, Attributes: map[string]string{"SentTimestamp": sent,
			"AWSTraceHeader": "Root=txray;Parent=sxray;Sampled=1"}},
		{MessageId: "m3", Body: "ok", EventSourceARN: stdArn, Attributes: map[string]string{"SentTimestamp": sent}},
	}}
}

// The Lambda adapter gives each message a CONSUMER span, the producer's
// child when a Propagator finds its context (traceparent or AWSTraceHeader),
// hands the handler and the hooks that ctx, and records its metrics.
func TestLambdaTelemetry(t *testing.T) {
	tr, mt := &telemetrytest.Tracer{}, &telemetrytest.Meter{}
	var hookSpans []tracing.Span
	l := newLambda(t, func(ctx context.Context, m *Message) error {
		if s, ok := tracing.GetSpan(ctx); !ok || s.Name() != "process orders" {
			t.Errorf("expect the handler's ctx to carry the process span, got %v", s)
		}
		if m.Body == "bad" {
			return errors.New("bad")
		}
		return nil
	}, func(o *LambdaOptions) {
		o.TracerProvider, o.MeterProvider, o.Propagator = tr, mt, telemetrytest.Propagator{}
		o.Hooks.Received = func(ctx context.Context, _ *Message) {
			s, _ := tracing.GetSpan(ctx)
			hookSpans = append(hookSpans, s)
		}
	})
	resp, err := l.Handle(context.Background(), tracedEvent())
	if err != nil || failedIDs(resp) != "m2" {
		t.Fatalf("expect m2 failed, got %v, %v", failedIDs(resp), err)
	}
	spans := tr.Named("process orders")
	if len(spans) != 3 {
		t.Fatalf("expect a process span per message, got %d", len(spans))
	}
	for i, want := range []struct{ trace, parent string }{{"tproducer", "sproducer"}, {"txray", "sxray"}, {"", ""}} {
		s := spans[i]
		if s.Kind != tracing.SpanKindConsumer || !s.Ended() {
			t.Errorf("span %d: expect an ended CONSUMER span, got kind %v, ends %d", i, s.Kind, s.Ends)
		}
		if want.trace != "" && (s.TraceID != want.trace || s.ParentID != want.parent || !s.RemoteParent) {
			t.Errorf("span %d: expect the producer's child (%s/%s), got %s/%s", i, want.trace, want.parent, s.TraceID, s.ParentID)
		}
		if want.trace == "" && s.ParentID != "" {
			t.Errorf("span %d: expect a root span without trace context, got parent %s", i, s.ParentID)
		}
		if got := s.Attr("messaging.message.id"); got != "m"+strconv.Itoa(i+1) {
			t.Errorf("span %d: expect its message id, got %q", i, got)
		}
		if s.Attr("messaging.system") != "aws_sqs" || s.Attr("messaging.destination.name") != "orders" || s.Attr("messaging.operation.type") != "process" {
			t.Errorf("span %d: expect the semantic conventions' attributes, got %v", i, s.Attrs)
		}
		if hookSpans[i] != tracing.Span(s) {
			t.Errorf("span %d: expect the Received hook's ctx to carry it", i)
		}
	}
	if !spans[1].Failed() || spans[1].Attr("error.type") != "handler_error" || spans[0].Failed() {
		t.Errorf("expect only the failed message's span failed with error.type, got %v / %v", spans[1].Attrs, spans[0].Attrs)
	}

	for name, want := range map[string]float64{
		"messaging.client.consumed.messages": 3,
		"sqskit.consumer.handled":            2,
		"sqskit.consumer.failed":             1,
	} {
		if got := mt.Sum(name, "messaging.system=aws_sqs", "messaging.destination.name=orders"); got != want {
			t.Errorf("%s: expect %v, got %v", name, want, got)
		}
	}
	if got := mt.Sum("sqskit.consumer.failed", "error.type=handler_error"); got != 1 {
		t.Errorf("expect the failure's error.type, got %v", got)
	}
	if n := len(mt.Points("messaging.process.duration")); n != 3 || mt.Unit("messaging.process.duration") != "s" {
		t.Errorf("expect 3 handler durations in seconds, got %d (%q)", n, mt.Unit("messaging.process.duration"))
	}
	ages := mt.Points("sqskit.consumer.message.age")
	if len(ages) != 3 || ages[0].Value < 89 || ages[0].Value > 120 {
		t.Errorf("expect each message's age at receive (about 90 s), got %v", ages)
	}
}

// Without providers nothing is recorded and a handler's ctx is the
// invocation's.
func TestLambdaTelemetryOffByDefault(t *testing.T) {
	type key struct{}
	ctx := context.WithValue(context.Background(), key{}, "invocation")
	l := newLambda(t, func(ctx context.Context, _ *Message) error {
		if ctx.Value(key{}) != "invocation" {
			t.Error("expect the invocation's ctx values")
		}
		if _, ok := tracing.GetSpan(ctx); ok {
			t.Error("expect no span")
		}
		return nil
	})
	if _, err := l.Handle(ctx, tracedEvent()); err != nil {
		t.Fatal(err)
	}
}

func TestBatchLambdaSpan(t *testing.T) {
	tr := &telemetrytest.Tracer{}
	l, err := NewBatchLambda(func(ctx context.Context, msgs []*Message) []error {
		if s, ok := tracing.GetSpan(ctx); !ok || s.Name() != "process orders" {
			t.Error("expect the batch call's ctx to carry its span")
		}
		return []error{nil, errors.New("bad")}
	}, func(o *LambdaOptions) { o.TracerProvider = tr })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Handle(context.Background(), sqsEvent(stdArn, ":a", ":b")); err != nil {
		t.Fatal(err)
	}
	spans := tr.Named("process orders")
	if len(spans) != 3 {
		t.Fatalf("expect one span per message and one for the call, got %d", len(spans))
	}
	call := spans[2]
	if call.Attr("messaging.batch.message_count") != "2" || !call.Failed() || !call.Ended() {
		t.Errorf("expect the call's span with its batch count, failed, got %v", call.Attrs)
	}
}

func TestExtractWithoutPropagator(t *testing.T) {
	ctx := context.Background()
	if got := Extract(ctx, nil, &Message{}); got != ctx {
		t.Fatal("expect ctx itself without a Propagator")
	}
	m := &Message{Attributes: map[string]string{"AWSTraceHeader": "Root=1"}, MessageAttributes: map[string]AttributeValue{
		"traceparent": {DataType: "String", StringValue: "00-a-b-01"}, "n": {DataType: "Number", StringValue: "1"},
		"b": {DataType: "Binary", BinaryValue: []byte("x")}, "tracestate": {DataType: "String.w3c", StringValue: "k=v"},
	}}
	c := messageCarrier{m}
	if c.Get(TraceHeaderKey) != "Root=1" || c.Get("traceparent") != "00-a-b-01" || c.Get("tracestate") != "k=v" || c.Get("n") != "" || c.Get("b") != "" {
		t.Fatalf("expect String attributes and the trace header, got %q %q %q", c.Get(TraceHeaderKey), c.Get("traceparent"), c.Get("n"))
	}
	if got := len(c.Keys()); got != 3 {
		t.Fatalf("expect 3 keys (trace header, traceparent, tracestate), got %v", c.Keys())
	}
}

// Every failure the library makes names its error.type, wrapped or joined
// too; an error the handler returned is "handler_error".
func TestFailuresNameTheirErrorType(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&PanicError{Value: "boom"}, "panic"},
		{fmt.Errorf("batch: %w", &PanicError{Value: "boom"}), "panic"},
		{ErrHandlerTimeout, "timeout"},
		{fmt.Errorf("slow: %w", ErrHandlerTimeout), "timeout"},
		{ErrHandlerExited, "exited"},
		{ErrNotStarted, "not_started"},
		{errors.Join(errors.New("first"), ErrHeldBack), "held_back"},
		{ErrNoResult, "no_result"},
		{Permanent(errors.New("bad")), "handler_error"},
		{errors.New("plain"), "handler_error"},
	} {
		if got := errorType(tc.err); got != tc.want {
			t.Errorf("errorType(%v): expect %q, got %q", tc.err, tc.want, got)
		}
	}
	if ErrHandlerTimeout.Error() != "handler: handler timed out" || !errors.Is(fmt.Errorf("x: %w", ErrHeldBack), ErrHeldBack) || errors.Is(ErrHeldBack, ErrNoResult) {
		t.Error("expect the sentinels to keep their messages and identities")
	}
}
