package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/smithy-go/metrics/smithyotelmetrics"
	"github.com/aws/smithy-go/tracing/smithyoteltracing"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// One order's trace, from its send through two failed handlings, SQS's
// redrive to the dead-letter queue and the replay, to the handling that
// succeeds: every span of sqskit's is in the producer's trace, and the
// SDK's own spans nest under them. The spans are kept in memory here so
// the output is stable; the command prints them with the stdout exporter.
func Example() {
	ctx := context.Background()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	id, err := Story(ctx, Telemetry{
		Tracer:     smithyoteltracing.Adapt(tp),
		Meter:      smithyotelmetrics.Adapt(mp),
		Propagator: Propagator{propagation.TraceContext{}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	printTrace(spans.Ended(), id)
	printMetrics(ctx, reader)
	// Output:
	// send orders (producer)
	//   SQS.SendMessage (client)
	//   process orders (consumer) error.type=handler_error
	//   process orders (consumer) error.type=handler_error
	//   process orders-dlq (consumer) sqskit.replay.outcome=replayed
	//     send orders (producer)
	//       SQS.SendMessageBatch (client)
	//   process orders (consumer)
	// messaging.client.consumed.messages orders 3
	// messaging.client.consumed.messages orders-dlq 1
	// sqskit.consumer.failed orders 2
	// sqskit.consumer.handled orders 1
	// sqskit.consumer.handled orders-dlq 1
	// sqskit.replay.decisions orders-dlq 1
}

// printTrace prints the trace of the order's send span as a tree: each
// span under its parent, in the order they started, with its kind and the
// attribute that tells its outcome.
func printTrace(ended []sdktrace.ReadOnlySpan, messageID string) {
	var root sdktrace.ReadOnlySpan
	for _, s := range ended {
		if s.Name() == "send orders" && attr(s, "messaging.message.id") == messageID {
			root = s
		}
	}
	if root == nil {
		fmt.Println("no send span")
		return
	}
	children := map[string][]sdktrace.ReadOnlySpan{}
	for _, s := range ended {
		if s.SpanContext().TraceID() == root.SpanContext().TraceID() && s.Parent().IsValid() {
			children[s.Parent().SpanID().String()] = append(children[s.Parent().SpanID().String()], s)
		}
	}
	var walk func(s sdktrace.ReadOnlySpan, depth int)
	walk = func(s sdktrace.ReadOnlySpan, depth int) {
		line := strings.Repeat("  ", depth) + s.Name() + " (" + strings.ToLower(s.SpanKind().String()) + ")"
		for _, key := range []string{"error.type", "sqskit.replay.outcome"} {
			if v := attr(s, key); v != "" {
				line += " " + key + "=" + v
			}
		}
		fmt.Println(line)
		kids := children[s.SpanContext().SpanID().String()]
		slices.SortFunc(kids, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
		for _, k := range kids {
			if strings.HasPrefix(k.Name(), "SQS.") || k.InstrumentationScope().Name != "" && strings.Contains(k.InstrumentationScope().Name, "sqskit") {
				walk(k, depth+1)
			}
		}
	}
	walk(root, 0)
}

func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.Emit()
		}
	}
	return ""
}

// printMetrics prints a few of sqskit's counters, summed per queue.
func printMetrics(ctx context.Context, reader *sdkmetric.ManualReader) {
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		fmt.Println(err)
		return
	}
	var lines []string
	for _, sm := range rm.ScopeMetrics {
		if !strings.HasPrefix(sm.Scope.Name, "github.com/sqskit/") {
			continue
		}
		for _, m := range sm.Metrics {
			switch m.Name {
			case "messaging.client.consumed.messages", "sqskit.consumer.failed", "sqskit.consumer.handled", "sqskit.replay.decisions":
			default:
				continue
			}
			sum, ok := m.Data.(metricdata.Sum[int64])
			if !ok {
				continue
			}
			perQueue := map[string]int64{}
			for _, p := range sum.DataPoints {
				q, _ := p.Attributes.Value(attribute.Key("messaging.destination.name"))
				perQueue[q.AsString()] += p.Value
			}
			for q, v := range perQueue {
				lines = append(lines, fmt.Sprintf("%s %s %d", m.Name, q, v))
			}
		}
	}
	slices.Sort(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
}
