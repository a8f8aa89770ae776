package main

import (
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// sqskit records every duration in seconds through smithy-go's
// metrics.MeterProvider. smithy-go's metrics.InstrumentOptions carries a
// unit and a description only, and smithyotelmetrics.Adapt passes nothing
// else to OpenTelemetry, so sqskit cannot advise bucket boundaries: with
// OpenTelemetry's defaults (0, 5, 10, 25, … 10000, meant for milliseconds)
// every SQS call and nearly every handler run lands in the (0, 5] bucket.
// The views below set boundaries in seconds, per instrument, on the
// MeterProvider.

// sqsCallBuckets suit one SQS call (messaging.client.operation.duration):
// about 5–20 ms in a region, more across regions or when throttled and
// retried by the SDK; a long poll lasts up to its 20 s wait.
func sqsCallBuckets() []float64 {
	return []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20}
}

// handlerBuckets suit a handler run (messaging.process.duration,
// sqskit.handler.duration), from milliseconds up to the consumer's default
// HandlerTimeout, 15 min.
func handlerBuckets() []float64 {
	return []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900}
}

// messageAgeBuckets suit sqskit.consumer.message.age, the queue's lag: from
// a fraction of a second up to SQS's longest retention, 14 days.
func messageAgeBuckets() []float64 {
	return []float64{0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600, 4 * 3600, 24 * 3600, 4 * 24 * 3600, 14 * 24 * 3600}
}

// durationViews gives each of sqskit's duration histograms (and the SDK's
// own client.call.* histograms) buckets in seconds.
func durationViews() []sdkmetric.Option {
	view := func(name string, bounds []float64) sdkmetric.Option {
		return sdkmetric.WithView(sdkmetric.NewView(
			sdkmetric.Instrument{Name: name, Kind: sdkmetric.InstrumentKindHistogram},
			sdkmetric.Stream{Aggregation: sdkmetric.AggregationExplicitBucketHistogram{Boundaries: bounds}},
		))
	}
	return []sdkmetric.Option{
		view("messaging.client.operation.duration", sqsCallBuckets()),
		// The SDK client's own histograms (sqs.Options.MeterProvider), all
		// durations in seconds.
		view("client.call.*", sqsCallBuckets()),
		view("client.http.*", sqsCallBuckets()),
		view("messaging.process.duration", handlerBuckets()),
		view("sqskit.handler.duration", handlerBuckets()),
		view("sqskit.consumer.message.age", messageAgeBuckets()),
	}
}
