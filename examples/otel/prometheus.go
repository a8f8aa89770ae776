package main

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// prometheusMeterProvider returns a MeterProvider whose metrics a Prometheus
// server scrapes from the handler (mount it on /metrics), with sqskit's
// duration histograms in seconds (durationViews). Adapt it for sqskit with
// smithyotelmetrics.Adapt; shut it down when done.
func prometheusMeterProvider() (*sdkmetric.MeterProvider, http.Handler, error) {
	reg := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, nil, err
	}
	mp := sdkmetric.NewMeterProvider(append([]sdkmetric.Option{sdkmetric.WithReader(exporter)}, durationViews()...)...)
	return mp, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), nil
}
