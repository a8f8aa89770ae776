package consumer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/tracing"

	"github.com/sqskit/sqskit/fifo"
	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/internal/telemetry/telemetrytest"
)

// spanOf returns the smithy span a ctx carries, or nil.
func spanOf(ctx context.Context) tracing.Span {
	s, ok := tracing.GetSpan(ctx)
	if !ok {
		return nil
	}
	return s
}

// A message sent with the producer's trace context is handled in a CONSUMER
// span that is the send span's child; hooks, middleware and the handler
// see that span in their ctx; receive and settle calls have CLIENT spans;
// every metric of the issue is recorded.
func TestConsumerTelemetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr, mt, prop := &telemetrytest.Tracer{}, &telemetrytest.Meter{}, telemetrytest.Propagator{}
		f := newQueue(t, "orders", map[string]string{"VisibilityTimeout": "30"})
		sender, err := fifo.NewSender(f.client, f.url, func(o *fifo.SenderOptions) { o.TracerProvider, o.Propagator = tr, prop })
		if err != nil {
			t.Fatal(err)
		}
		sendIDs := map[string]string{} // body → SQS message id
		for _, body := range []string{"ok", "slow", "bad"} {
			res, err := sender.Send(context.Background(), fifo.Message{Body: body})
			if err != nil {
				t.Fatal(err)
			}
			sendIDs[body] = res.MessageID
		}
		time.Sleep(10 * time.Second) // the messages wait in the queue: their age

		var mu sync.Mutex
		seen := map[string][]tracing.Span{} // hook or layer → spans its ctx carried
		note := func(what string, ctx context.Context) {
			mu.Lock()
			defer mu.Unlock()
			seen[what] = append(seen[what], spanOf(ctx))
		}
		c := newConsumer(t, f, func(ctx context.Context, m *handler.Message) error {
			note("handler", ctx)
			switch m.Body {
			case "slow":
				time.Sleep(25 * time.Second) // the heartbeat extends it
			case "bad":
				return handler.RetryAfter(errors.New("bad order"), time.Hour)
			}
			return nil
		}, func(o *Options) {
			o.TracerProvider, o.MeterProvider, o.Propagator = tr, mt, prop
			o.Middleware = []handler.Middleware{func(next handler.Handler) handler.Handler {
				return func(ctx context.Context, m *handler.Message) error { note("middleware", ctx); return next(ctx, m) }
			}}
			o.Hooks.Received = func(ctx context.Context, _ *handler.Message) { note("received", ctx) }
			o.Hooks.Handled = func(ctx context.Context, _ *handler.Message, _ time.Duration) { note("handled", ctx) }
			o.Hooks.Failed = func(ctx context.Context, _ *handler.Message, _ error) { note("failed", ctx) }
			o.Hooks.Deleted = func(ctx context.Context, _ *handler.Message) { note("deleted", ctx) }
			o.Hooks.Released = func(ctx context.Context, _ *handler.Message, _ time.Duration) { note("released", ctx) }
			o.Hooks.Extended = func(ctx context.Context, _ *handler.Message, _ time.Duration) { note("extended", ctx) }
		})
		stop := started(t, c)
		until(t, "two deletes and a release", func() bool { s := c.Stats(); return s.Deleted == 2 && s.Released == 1 })
		if inFlight, ok := mt.Observe("sqskit.consumer.in_flight"); !ok || inFlight != 0 {
			t.Errorf("expect the in-flight gauge to read 0 while Run runs, got %d, %v", inFlight, ok)
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if _, ok := mt.Observe("sqskit.consumer.in_flight"); ok {
			t.Error("expect the in-flight gauge stopped with Run")
		}

		sends := map[string]*telemetrytest.Span{}
		for _, s := range tr.Named("send orders") {
			sends[s.Attr("messaging.message.id")] = s
			if s.Kind != tracing.SpanKindProducer {
				t.Errorf("expect a PRODUCER send span, got %v", s.Kind)
			}
		}
		process := map[string]*telemetrytest.Span{}
		for _, s := range tr.Named("process orders") {
			process[s.Attr("messaging.message.id")] = s
		}
		for body, id := range sendIDs {
			p, s := process[id], sends[id]
			if p == nil || s == nil {
				t.Fatalf("%s: expect a send and a process span, got %v, %v", body, s, p)
			}
			if p.TraceID != s.TraceID || p.ParentID != s.SpanID || p.Kind != tracing.SpanKindConsumer || !p.Ended() {
				t.Errorf("%s: expect an ended CONSUMER span, child of the send span %s/%s, got %s/%s", body, s.TraceID, s.SpanID, p.TraceID, p.ParentID)
			}
		}
		if p := process[sendIDs["bad"]]; !p.Failed() || p.Attr("error.type") != "handler_error" {
			t.Errorf("expect the failed message's span failed, got %v", p.Attrs)
		}
		all := map[tracing.Span]bool{}
		for _, p := range process {
			all[p] = true
		}
		for what, n := range map[string]int{"received": 3, "middleware": 3, "handler": 3, "handled": 2, "failed": 1, "deleted": 2, "released": 1} {
			if len(seen[what]) != n {
				t.Errorf("%s: expect %d calls, got %d", what, n, len(seen[what]))
			}
			for _, s := range seen[what] {
				if !all[s] {
					t.Errorf("%s: expect the message's process span in ctx, got %v", what, s)
				}
			}
		}
		if len(seen["extended"]) == 0 || seen["extended"][0] != tracing.Span(process[sendIDs["slow"]]) {
			t.Errorf("expect the slow message extended, in its ctx, got %v", seen["extended"])
		}

		receives := tr.Named("receive orders")
		if len(receives) == 0 || receives[0].Kind != tracing.SpanKindClient || receives[0].Attr("messaging.operation.type") != "receive" {
			t.Fatalf("expect CLIENT receive spans, got %v", receives)
		}
		got := 0
		for _, r := range receives {
			if r.Attr("messaging.batch.message_count") != "" && r.Attr("messaging.batch.message_count") != "0" {
				got++
			}
		}
		if got == 0 {
			t.Error("expect receive spans to carry the messages they returned")
		}
		for name, opType := range map[string]string{"delete orders": "settle", "change_visibility orders": "settle"} {
			spans := tr.Named(name)
			if len(spans) == 0 || spans[0].Kind != tracing.SpanKindClient || spans[0].Attr("messaging.operation.type") != opType || !spans[0].Ended() {
				t.Errorf("expect ended CLIENT %s spans of type %s, got %v", name, opType, spans)
			}
		}

		q := []string{"messaging.system=aws_sqs", "messaging.destination.name=orders"}
		for name, want := range map[string]float64{
			"messaging.client.consumed.messages": 3,
			"sqskit.consumer.handled":            2,
			"sqskit.consumer.failed":             1,
			"sqskit.consumer.deleted":            2,
			"sqskit.consumer.released":           1,
		} {
			if got := mt.Sum(name, q...); got != want {
				t.Errorf("%s: expect %v, got %v", name, want, got)
			}
		}
		if mt.Sum("sqskit.consumer.extended", q...) < 1 {
			t.Error("expect the heartbeat's extensions counted")
		}
		if mt.Sum("sqskit.consumer.failed", "error.type=handler_error") != 1 {
			t.Error("expect the failure's error.type")
		}
		for _, p := range mt.Points("sqskit.consumer.message.age") {
			if p.Value < 10 {
				t.Errorf("expect the age at receive to count the 10 s in the queue, got %v", p.Value)
			}
		}
		if n := len(mt.Points("sqskit.consumer.message.age")); n != 3 {
			t.Errorf("expect an age per message, got %d", n)
		}
		if n := len(mt.Points("messaging.process.duration", "error.type=handler_error")); n != 1 {
			t.Errorf("expect the failed handler's duration with its error.type, got %d", n)
		}
		slow := mt.Points("messaging.process.duration")
		if len(slow) != 3 {
			t.Errorf("expect 3 handler durations, got %d", len(slow))
		}
		for _, op := range []string{"receive", "delete", "change_visibility"} {
			if len(mt.Points("messaging.client.operation.duration", "messaging.operation.name="+op)) == 0 {
				t.Errorf("expect %s call durations", op)
			}
		}
	})
}

// A lost lease is counted with its error.type.
func TestConsumerLeaseLostMetric(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mt := &telemetrytest.Meter{}
		f := newQueue(t, "jobs", nil)
		f.send(t, "", "long")
		c := newConsumer(t, f, func(ctx context.Context, m *handler.Message) error {
			if m.ReceiveCount() > 1 {
				return nil
			}
			<-ctx.Done()
			return ctx.Err()
		}, func(o *Options) {
			o.MeterProvider = mt
			o.VisibilityTimeout = 10 * time.Second
			o.MaxExtension = 30 * time.Second
		})
		stop := started(t, c)
		until(t, "lease lost", func() bool { return c.Stats().LeaseLost == 1 && c.Stats().Failed == 1 })
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if mt.Sum("sqskit.consumer.lease_lost") != 1 || mt.Sum("sqskit.consumer.failed", "error.type=lease_lost") != 1 {
			t.Fatalf("expect the lost lease counted, got %v, %v", mt.Sum("sqskit.consumer.lease_lost"), mt.Points("sqskit.consumer.failed"))
		}
	})
}

// A handler.BatchHandler call has its own CONSUMER span; each message keeps its own.
func TestConsumerBatchSpan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &telemetrytest.Tracer{}
		f := newQueue(t, "jobs", nil)
		f.send(t, "", "a", "b")
		var calls []tracing.Span
		c, err := NewBatch(f.client, f.url, func(ctx context.Context, msgs []*handler.Message) []error {
			calls = append(calls, spanOf(ctx))
			return make([]error, len(msgs))
		}, func(o *Options) { o.TracerProvider = tr })
		if err != nil {
			t.Fatal(err)
		}
		stop := started(t, c)
		until(t, "deletes", func() bool { return c.Stats().Deleted == 2 })
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, s := range tr.Named("process jobs") {
			if s.Attr("messaging.batch.message_count") != "" {
				n++
				if calls[0] != tracing.Span(s) {
					t.Error("expect the batch handler's ctx to carry its call's span")
				}
			}
		}
		if n == 0 || len(tr.Named("process jobs")) != 2+n {
			t.Fatalf("expect a span per message and one per call, got %d calls of %d spans", n, len(tr.Named("process jobs")))
		}
	})
}

func TestMiddlewareOptions(t *testing.T) {
	client := newSpy(nil)
	if _, err := New(client, "https://sqs.us-east-1.amazonaws.com/1/q", func(context.Context, *handler.Message) error { return nil }, func(o *Options) {
		o.BatchMiddleware = []handler.BatchMiddleware{func(h handler.BatchHandler) handler.BatchHandler { return h }}
	}); !errors.Is(err, ErrConfig) {
		t.Errorf("expect handler.BatchMiddleware refused with a handler.Handler, got %v", err)
	}
	if _, err := NewBatch(client, "https://sqs.us-east-1.amazonaws.com/1/q", func(context.Context, []*handler.Message) []error { return nil }, func(o *Options) {
		o.Middleware = []handler.Middleware{func(h handler.Handler) handler.Handler { return h }}
	}); !errors.Is(err, ErrConfig) {
		t.Errorf("expect handler.Middleware refused with a handler.BatchHandler, got %v", err)
	}
}

func TestSDKAttributesRoundTrip(t *testing.T) {
	sdk := map[string]types.MessageAttributeValue{
		"s": {DataType: aws.String("String"), StringValue: aws.String("v")},
		"n": {DataType: aws.String("Number.int"), StringValue: aws.String("7")},
		"b": {DataType: aws.String("Binary"), BinaryValue: []byte{1, 2}},
	}
	back := SDKAttributes(fromSDKAttributes(sdk))
	if len(back) != 3 || *back["s"].StringValue != "v" || *back["n"].DataType != "Number.int" || *back["n"].StringValue != "7" ||
		string(back["b"].BinaryValue) != "\x01\x02" || back["b"].StringValue != nil {
		t.Fatalf("expect the attributes back as sent, got %+v", back)
	}
	if SDKAttributes(nil) != nil || fromSDKAttributes(nil) != nil {
		t.Fatal("expect nil for none")
	}
}

// The consumer's own failures name their error.type beside the handler's.
func TestConsumerFailuresNameTheirErrorType(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{ErrLeaseLost, "lease_lost"},
		{fmt.Errorf("extend: %w", ErrLeaseLost), "lease_lost"},
		{ErrShutdownTimeout, "shutdown_timeout"},
		{&handler.PanicError{Value: 1}, "panic"},
		{handler.ErrHeldBack, "held_back"},
		{errors.New("plain"), "handler_error"},
	} {
		if got := errorType(tc.err); got != tc.want {
			t.Errorf("errorType(%v): expect %q, got %q", tc.err, tc.want, got)
		}
	}
}
