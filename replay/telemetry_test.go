package replay_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/tracing"

	"github.com/sqskit/sqskit/consumer"
	"github.com/sqskit/sqskit/fifo"
	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/internal/telemetry/telemetrytest"
	"github.com/sqskit/sqskit/replay"
)

// A replayed message keeps its trace context: the AWSTraceHeader system
// attribute and its W3C attributes, traceparent staying in place even when
// the message has ten attributes and one must move into the metadata.
func TestReplayKeepsTraceContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, false)
		const header = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
		const parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
		attrs := map[string]types.MessageAttributeValue{
			"traceparent": {DataType: aws.String("String"), StringValue: aws.String(parent)},
			"tracestate":  {DataType: aws.String("String"), StringValue: aws.String("vendor=1")},
		}
		for i := range 8 {
			attrs[fmt.Sprintf("user%d", i)] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("v")}
		}
		if _, err := w.api.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(w.dlq), MessageBody: aws.String("traced"),
			MessageAttributes:       attrs,
			MessageSystemAttributes: map[string]types.MessageSystemAttributeValue{"AWSTraceHeader": {DataType: aws.String("String"), StringValue: aws.String(header)}},
		}); err != nil {
			t.Fatal(err)
		}
		if rep := w.drain(t, w.replayer(t)); rep.Replayed != 1 {
			t.Fatalf("expect a replay, got %+v", rep)
		}
		got := w.receiveAll(t, w.main)
		if len(got) != 1 {
			t.Fatalf("expect the message on its queue, got %d", len(got))
		}
		m := got[0]
		if m.Attributes["AWSTraceHeader"] != header {
			t.Errorf("expect AWSTraceHeader kept, got %q", m.Attributes["AWSTraceHeader"])
		}
		if aws.ToString(m.MessageAttributes["traceparent"].StringValue) != parent || aws.ToString(m.MessageAttributes["tracestate"].StringValue) != "vendor=1" {
			t.Errorf("expect traceparent and tracestate in place, got %v", m.MessageAttributes)
		}
		if _, moved := m.MessageAttributes["user7"]; moved || len(m.MessageAttributes) != 10 {
			t.Errorf("expect the last user attribute moved aside, not a trace attribute, got %v", m.MessageAttributes)
		}
	})
}

// Decisions are spans in the producer's trace and metrics by outcome and
// reason; hooks get the decision's ctx; calls have spans and durations.
func TestReplayTelemetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, false)
		tr, mt, prop := &telemetrytest.Tracer{}, &telemetrytest.Meter{}, telemetrytest.Propagator{}
		producerCtx, producer := tr.StartSpan(context.Background(), "producer")
		carrier := map[string]types.MessageAttributeValue{}
		prop.Inject(producerCtx, attrCarrier(carrier))
		w.seedDLQ(t, "fresh", "", carrier)
		exhausted := counterAttrs("3")
		exhausted["traceparent"] = carrier["traceparent"]
		w.seedDLQ(t, "exhausted", "", exhausted)

		var mu sync.Mutex
		hookSpans := map[string]tracing.Span{}
		r := w.replayer(t, func(o *replay.Options) {
			o.TracerProvider, o.MeterProvider, o.Propagator = tr, mt, prop
			o.Hooks.Replayed = func(ctx context.Context, m *types.Message, _ replay.Decision, _ string) {
				mu.Lock()
				defer mu.Unlock()
				hookSpans[*m.Body], _ = tracing.GetSpan(ctx)
			}
			o.Hooks.Escalated = func(ctx context.Context, m *types.Message, _ replay.Decision) {
				mu.Lock()
				defer mu.Unlock()
				hookSpans[*m.Body], _ = tracing.GetSpan(ctx)
			}
		})
		if rep := w.drain(t, r); rep.Replayed != 1 || rep.Escalated != 1 {
			t.Fatalf("expect a replay and an escalation, got %+v", rep)
		}
		decisions := messageSpans(tr.Named("process dlq"))
		if len(decisions) != 2 {
			t.Fatalf("expect a decision span per message, got %d", len(decisions))
		}
		outcomes := map[string]*telemetrytest.Span{}
		for _, d := range decisions {
			outcomes[d.Attr("sqskit.replay.outcome")] = d
			if d.Kind != tracing.SpanKindConsumer || d.TraceID != producer.Context().TraceID || d.ParentID != producer.Context().SpanID || !d.Ended() {
				t.Errorf("expect an ended CONSUMER span, the producer's child, got %s/%s", d.TraceID, d.ParentID)
			}
		}
		if outcomes["replayed"] == nil || outcomes["replayed"].Attr("sqskit.replay.attempt") != "1" {
			t.Errorf("expect the replay's span with its attempt, got %v", outcomes)
		}
		if e := outcomes["escalated"]; e == nil || e.Attr("sqskit.replay.reason") != string(replay.AttemptsExhausted) {
			t.Errorf("expect the escalation's span with its reason, got %v", e)
		}
		if hookSpans["fresh"] != tracing.Span(outcomes["replayed"]) || hookSpans["exhausted"] != tracing.Span(outcomes["escalated"]) {
			t.Error("expect each hook's ctx to carry the message's decision span")
		}
		sends := append(tr.Named("send main"), tr.Named("send operator")...)
		if len(sends) != 2 || sends[0].Kind != tracing.SpanKindProducer || sends[0].TraceID != producer.Context().TraceID {
			t.Errorf("expect PRODUCER send spans under the decisions, got %v", sends)
		}
		for _, name := range []string{"receive dlq", "delete dlq"} {
			if len(tr.Named(name)) == 0 || tr.Named(name)[0].Kind != tracing.SpanKindClient {
				t.Errorf("expect CLIENT %s spans", name)
			}
		}
		if mt.Sum("sqskit.replay.decisions", "sqskit.replay.outcome=replayed", "messaging.destination.name=dlq") != 1 ||
			mt.Sum("sqskit.replay.decisions", "sqskit.replay.outcome=escalated", "sqskit.replay.reason=attempts-exhausted") != 1 {
			t.Errorf("expect decisions by outcome and reason, got %v", mt.Points("sqskit.replay.decisions"))
		}
		if mt.Sum("messaging.client.consumed.messages", "messaging.destination.name=dlq") != 2 {
			t.Errorf("expect the DLQ's messages counted, got %v", mt.Points("messaging.client.consumed.messages"))
		}
		if mt.Sum("messaging.client.sent.messages", "messaging.destination.name=main") != 1 || mt.Sum("messaging.client.sent.messages", "messaging.destination.name=operator") != 1 {
			t.Errorf("expect sends by destination, got %v", mt.Points("messaging.client.sent.messages"))
		}
		for _, op := range []string{"receive", "send", "delete"} {
			if len(mt.Points("messaging.client.operation.duration", "messaging.operation.name="+op)) == 0 {
				t.Errorf("expect %s durations", op)
			}
		}
	})
}

// messageSpans leaves out the engine's span of each batch handler call
// (with messaging.batch.message_count): the decision spans are the
// messages' own.
func messageSpans(spans []*telemetrytest.Span) []*telemetrytest.Span {
	var out []*telemetrytest.Span
	for _, s := range spans {
		if s.Attr("messaging.batch.message_count") == "" {
			out = append(out, s)
		}
	}
	return out
}

// attrCarrier writes trace context into message attributes, as fifo does.
type attrCarrier map[string]types.MessageAttributeValue

func (c attrCarrier) Get(key string) string { return aws.ToString(c[key].StringValue) }
func (c attrCarrier) Set(key, value string) {
	c[key] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(value)}
}
func (c attrCarrier) Keys() []string { return nil }

// One trace from the send through every handling, the redrive and the
// replay: the producer's send span is the parent of each process span of
// the consumer and of the replayer's decision.
func TestLinkedTraceAcrossRedriveAndReplay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, false)
		tr, prop := &telemetrytest.Tracer{}, telemetrytest.Propagator{XRay: true}
		sender, err := fifo.NewSender(w.api, w.main, func(o *fifo.SenderOptions) { o.TracerProvider, o.Propagator = tr, prop })
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sender.Send(context.Background(), fifo.Message{Body: "order"}); err != nil {
			t.Fatal(err)
		}
		var handled sync.WaitGroup
		handled.Add(1)
		attempts := 0
		c, err := consumer.New(w.api, w.main, func(context.Context, *handler.Message) error {
			attempts++
			if attempts <= 2 {
				return errors.New("not yet")
			}
			handled.Done()
			return nil
		}, func(o *consumer.Options) {
			o.OnFailure = consumer.ReleaseNow
			o.TracerProvider, o.Propagator = tr, prop
		})
		if err != nil {
			t.Fatal(err)
		}
		r := w.replayer(t, func(o *replay.Options) { o.TracerProvider, o.Propagator = tr, prop })
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{}, 2)
		go func() { _ = c.Run(ctx); done <- struct{}{} }()
		go func() { _ = r.Run(ctx); done <- struct{}{} }()
		handled.Wait()
		time.Sleep(time.Second)
		cancel()
		<-done
		<-done

		send := tr.Named("send main")[0]
		process, decisions := tr.Named("process main"), messageSpans(tr.Named("process dlq"))
		if len(process) != 3 || len(decisions) != 1 {
			t.Fatalf("expect 3 handlings and 1 replay decision, got %d and %d", len(process), len(decisions))
		}
		for _, s := range append(process, decisions...) {
			if s.TraceID != send.TraceID || s.ParentID != send.SpanID {
				t.Errorf("%s: expect the send span's child in its trace, got %s/%s", s.Name(), s.TraceID, s.ParentID)
			}
		}
		if !process[0].Failed() || !process[1].Failed() || process[2].Failed() {
			t.Error("expect two failed handlings, then a success")
		}
	})
}
