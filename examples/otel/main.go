// Command otel wires OpenTelemetry into sqskit and follows one order
// through the pipeline as a single trace: sent with its trace context,
// failed twice by the consumer, moved to the dead-letter queue by SQS's
// redrive, replayed, and handled. It runs on sqsfake, in memory, and prints
// the spans and the metrics with OpenTelemetry's stdout exporters; with
// -prometheus it prints the metrics as a Prometheus server scrapes them
// from OpenTelemetry's Prometheus exporter (prometheus.go). Duration
// histograms get buckets in seconds from the views in views.go.
//
// It lives in a module of its own: sqskit's packages speak smithy-go's
// tracing and metrics interfaces, as the AWS SDK's clients do, and never
// import OpenTelemetry; this module adapts an OpenTelemetry SDK with
// smithy-go's adapters (smithyoteltracing, smithyotelmetrics) and a
// trace-context propagator in a few lines (propagator.go).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/aws/smithy-go/metrics/smithyotelmetrics"
	"github.com/aws/smithy-go/tracing"
	"github.com/aws/smithy-go/tracing/smithyoteltracing"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

func main() {
	prom := flag.Bool("prometheus", false, "print the metrics as a Prometheus scrape instead of the stdout exporters' JSON")
	flag.Parse()
	do := run
	if *prom {
		do = runPrometheus
	}
	if err := do(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// runPrometheus tells the story with metrics on OpenTelemetry's Prometheus
// exporter, serves them on a loopback port, scrapes them once as Prometheus
// would, and copies the scrape to out.
func runPrometheus(ctx context.Context, out io.Writer) error {
	mp, metricsHandler, err := prometheusMeterProvider()
	if err != nil {
		return err
	}
	defer func() { _ = mp.Shutdown(ctx) }()
	// The SDK client takes the providers too, and wants a tracer set.
	if _, err := Story(ctx, Telemetry{Tracer: tracing.NopTracerProvider{}, Meter: smithyotelmetrics.Adapt(mp)}); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: metricsHandler, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer func() { _ = srv.Close() }()
	resp, err := http.Get("http://" + ln.Addr().String() + "/metrics")
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("scrape: %s", resp.Status)
	}
	_, err = io.Copy(out, resp.Body)
	return err
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
	mp := sdkmetric.NewMeterProvider(append([]sdkmetric.Option{sdkmetric.WithReader(reader)}, durationViews()...)...)
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
