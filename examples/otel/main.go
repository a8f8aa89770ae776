// Command otel wires OpenTelemetry into sqskit and follows one order
// through the pipeline as a single trace: sent with its trace context,
// failed twice by the consumer, moved to the dead-letter queue by SQS's
// redrive, replayed, and handled. It runs on sqsfake, in memory, and prints
// the spans and the metrics with OpenTelemetry's stdout exporters.
//
// It lives in a module of its own: sqskit's packages speak smithy-go's
// tracing and metrics interfaces, as the AWS SDK's clients do, and never
// import OpenTelemetry; this module adapts an OpenTelemetry SDK with
// smithy-go's adapters (smithyoteltracing, smithyotelmetrics) and a
// trace-context propagator in a few lines (propagator.go).
package main

import (
	"context"
	"io"
	"log"
	"os"

	"github.com/aws/smithy-go/metrics/smithyotelmetrics"
	"github.com/aws/smithy-go/tracing/smithyoteltracing"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run tells the story with spans and metrics exported to out as JSON.
func run(ctx context.Context, out io.Writer) error {
	spans, err := stdouttrace.New(stdouttrace.WithWriter(out), stdouttrace.WithPrettyPrint())
	if err != nil {
		return err
	}
	measures, err := stdoutmetric.New(stdoutmetric.WithWriter(out), stdoutmetric.WithPrettyPrint())
	if err != nil {
		return err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	reader := sdkmetric.NewPeriodicReader(measures)
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() {
		_ = tp.Shutdown(ctx)
		_ = mp.Shutdown(ctx) // exports the metrics once more, then stops
	}()
	telemetry := Telemetry{
		Tracer:     smithyoteltracing.Adapt(tp),
		Meter:      smithyotelmetrics.Adapt(mp),
		Propagator: Propagator{propagation.TraceContext{}},
	}
	_, err = Story(ctx, telemetry)
	return err
}
