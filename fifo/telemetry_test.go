package fifo_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/tracing"

	"github.com/sqskit/sqskit/fifo"
	"github.com/sqskit/sqskit/internal/telemetry/telemetrytest"
	"github.com/sqskit/sqskit/sqsfake"
)

// received returns the queue's messages with every attribute.
func (f *fixture) received(t *testing.T) []types.Message {
	t.Helper()
	out, err := f.client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(f.url), MaxNumberOfMessages: 10,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{"All"}, MessageAttributeNames: []string{"All"}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Messages
}

func attrs(n int) map[string]types.MessageAttributeValue {
	out := map[string]types.MessageAttributeValue{}
	for i := range n {
		out[fmt.Sprintf("a%d", i)] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("v")}
	}
	return out
}

// TraceHeader is sent as the AWSTraceHeader system attribute.
func TestSendTraceHeader(t *testing.T) {
	f := newFixture(t, "q", nil)
	s := f.sender(t)
	const h = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
	if _, err := s.Send(context.Background(), fifo.Message{Body: "one", TraceHeader: h}); err != nil {
		t.Fatal(err)
	}
	if r := s.SendBatch(context.Background(), []fifo.Message{{Body: "two", TraceHeader: h}}); r[0].Err != nil {
		t.Fatal(r[0].Err)
	}
	for _, m := range f.received(t) {
		if m.Attributes["AWSTraceHeader"] != h {
			t.Fatalf("expect the trace header on %s, got %q", *m.Body, m.Attributes["AWSTraceHeader"])
		}
	}
	f.srv.ResetCalls()
	for _, bad := range []string{strings.Repeat("x", 1025), "Root=1\n"} {
		_, err := s.Send(context.Background(), fifo.Message{Body: "x", TraceHeader: bad})
		var v *fifo.ValidationError
		if !errors.As(err, &v) || v.Field != "MessageSystemAttributes" {
			t.Errorf("expect a ValidationError for trace header %.20q, got %v", bad, err)
		}
	}
	if f.srv.Calls().Total() != 0 {
		t.Errorf("expect no call for an invalid trace header, got %d calls", f.srv.Calls().Total())
	}
}

// The Propagator writes the ctx's trace context: AWSTraceHeader and
// traceparent, into a copy of the caller's attributes.
func TestSendInjectsTraceContext(t *testing.T) {
	f := newFixture(t, "q", nil)
	tr, mt := &telemetrytest.Tracer{}, &telemetrytest.Meter{}
	s := f.sender(t, func(o *fifo.SenderOptions) {
		o.Propagator = telemetrytest.Propagator{XRay: true}
		o.TracerProvider, o.MeterProvider = tr, mt
	})
	user := attrs(2)
	res, err := s.Send(context.Background(), fifo.Message{Body: "one", Attributes: user})
	if err != nil {
		t.Fatal(err)
	}
	if len(user) != 2 {
		t.Fatalf("expect the caller's attributes untouched, got %v", user)
	}
	spans := tr.Named("send q")
	if len(spans) != 1 || spans[0].Kind != tracing.SpanKindProducer || spans[0].Attr("messaging.message.id") != res.MessageID || !spans[0].Ended() {
		t.Fatalf("expect an ended PRODUCER span with the message id, got %v", spans)
	}
	send := spans[0]
	got := f.received(t)[0]
	if want := "00-" + send.TraceID + "-" + send.SpanID + "-01"; aws.ToString(got.MessageAttributes["traceparent"].StringValue) != want {
		t.Errorf("expect traceparent %s, got %v", want, got.MessageAttributes["traceparent"])
	}
	if !strings.Contains(got.Attributes["AWSTraceHeader"], "Root="+send.TraceID) {
		t.Errorf("expect the X-Ray header, got %q", got.Attributes["AWSTraceHeader"])
	}
	if len(got.MessageAttributes) != 3 {
		t.Errorf("expect the two attributes and traceparent, got %v", got.MessageAttributes)
	}
	if mt.Sum("messaging.client.sent.messages", "messaging.destination.name=q") != 1 {
		t.Error("expect the sent message counted")
	}
	if len(mt.Points("messaging.client.operation.duration", "messaging.operation.name=send")) != 1 {
		t.Error("expect the call's duration")
	}
}

// Trace context never costs the caller an attribute: with ten, traceparent
// is skipped and counted; with nine, traceparent fits and tracestate does
// not; the caller's own traceparent wins; TraceHeader wins over the
// propagator's; the system attribute needs no room.
func TestSendTraceContextBudget(t *testing.T) {
	f := newFixture(t, "q", nil)
	mt := &telemetrytest.Meter{}
	tr := &telemetrytest.Tracer{}
	s := f.sender(t, func(o *fifo.SenderOptions) {
		o.Propagator = telemetrytest.Propagator{XRay: true, TraceState: "vendor=1"}
		o.TracerProvider, o.MeterProvider = tr, mt
	})
	ten, nine, own := attrs(10), attrs(9), attrs(1)
	own["traceparent"] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("mine")}
	results := s.SendBatch(context.Background(), []fifo.Message{
		{Body: "ten", Attributes: ten},
		{Body: "nine", Attributes: nine},
		{Body: "own", Attributes: own, TraceHeader: "Root=explicit"},
	})
	for _, r := range results {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	batch := tr.Named("send q")
	if len(batch) != 1 || batch[0].Attr("messaging.batch.message_count") != "3" {
		t.Fatalf("expect one span for the SendBatch call with its count, got %v", batch)
	}
	byBody := map[string]types.Message{}
	for _, m := range f.received(t) {
		byBody[*m.Body] = m
	}
	if m := byBody["ten"]; len(m.MessageAttributes) != 10 || m.MessageAttributes["traceparent"].StringValue != nil || m.Attributes["AWSTraceHeader"] == "" {
		t.Errorf("ten: expect the caller's ten attributes and the trace header only, got %v, %q", m.MessageAttributes, m.Attributes["AWSTraceHeader"])
	}
	if m := byBody["nine"]; len(m.MessageAttributes) != 10 || m.MessageAttributes["traceparent"].StringValue == nil {
		t.Errorf("nine: expect traceparent in the tenth place, got %v", m.MessageAttributes)
	}
	if m := byBody["own"]; aws.ToString(m.MessageAttributes["traceparent"].StringValue) != "mine" || m.Attributes["AWSTraceHeader"] != "Root=explicit" ||
		aws.ToString(m.MessageAttributes["tracestate"].StringValue) != "vendor=1" {
		t.Errorf("own: expect the caller's traceparent and trace header kept, tracestate added, got %v, %q", m.MessageAttributes, m.Attributes["AWSTraceHeader"])
	}
	// ten: traceparent and tracestate; nine: tracestate.
	if got := mt.Sum("sqskit.send.trace_context.skipped"); got != 3 {
		t.Errorf("expect 3 fields skipped, got %v", got)
	}
	if len(ten) != 10 || len(nine) != 9 {
		t.Error("expect the caller's maps untouched")
	}
}

// A message whose trace attribute would push it past MaxMessageBytes goes
// without it.
func TestSendTraceContextSizeBudget(t *testing.T) {
	f := newFixture(t, "q", nil)
	tr := &telemetrytest.Tracer{}
	s := f.sender(t, func(o *fifo.SenderOptions) {
		o.Propagator = telemetrytest.Propagator{}
		o.TracerProvider = tr
		o.MaxMessageBytes = 1024
	})
	if _, err := s.Send(context.Background(), fifo.Message{Body: strings.Repeat("x", 1020)}); err != nil {
		t.Fatal(err)
	}
	if m := f.received(t)[0]; len(m.MessageAttributes) != 0 {
		t.Fatalf("expect no trace attribute beyond the size limit, got %v", m.MessageAttributes)
	}
}

// The Batcher's messages carry the trace context of their Send's ctx; a
// failure is counted with its error.type and fails the span.
func TestBatcherTraceAndFailures(t *testing.T) {
	f := newFixture(t, "q.fifo", nil)
	tr, mt := &telemetrytest.Tracer{}, &telemetrytest.Meter{}
	s := f.sender(t, func(o *fifo.SenderOptions) {
		o.Propagator = telemetrytest.Propagator{}
		o.TracerProvider, o.MeterProvider = tr, mt
		o.SendMaxAttempts = 1
	})
	b, err := s.NewBatcher()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	parentCtx, parent := tr.StartSpan(context.Background(), "caller")
	if _, err := b.Send(parentCtx, fifo.Message{Body: "a", GroupID: "g"}); err != nil {
		t.Fatal(err)
	}
	f.srv.Inject(sqsfake.Fault{Op: "SendMessageBatch", Times: 1, Err: sqsfake.ErrInternal})
	if _, err := b.Send(context.Background(), fifo.Message{Body: "b", GroupID: "g"}); err == nil {
		t.Fatal("expect the injected failure")
	}
	spans := tr.Named("send q.fifo")
	if len(spans) != 2 || spans[0].ParentID != parent.Context().SpanID || spans[1].Failed() == false {
		t.Fatalf("expect a span per Send, the first under the caller's, the second failed, got %v", spans)
	}
	m := f.received(t)[0]
	if want := "00-" + spans[0].TraceID + "-" + spans[0].SpanID + "-01"; aws.ToString(m.MessageAttributes["traceparent"].StringValue) != want {
		t.Errorf("expect the Send span's traceparent, got %v", m.MessageAttributes)
	}
	if mt.Sum("messaging.client.sent.messages", "error.type=InternalFailure") != 1 || mt.Sum("messaging.client.sent.messages") != 2 {
		t.Errorf("expect one sent and one failed with its error.type, got %v", mt.Points("messaging.client.sent.messages"))
	}
}
