package consumer_test

import (
	"testing"
	"time"

	"github.com/sqskit/sqskit/consumer"
	"github.com/sqskit/sqskit/internal/drainbench"
	"github.com/sqskit/sqskit/internal/fauxqs"
	"github.com/sqskit/sqskit/internal/telemetry/telemetrytest"
)

// BenchmarkConsume drains b.N pre-loaded messages with a no-op handler (one
// op is one message) and reports messages/s over the whole run and in
// steady state (see fauxqs.Progress.Steady), the run's ceiling and the
// steady rate's fraction of it (see drainbench.Measure), and API calls per
// message, at 0, 10 and 20 ms added per call, on sqsfake and on the
// fauxqs emulator, in one run: the Consumer as users run it (Concurrency
// 32, every other option at its default), with telemetry on, a competent
// hand-written loop (4 pollers, receive 10 and DeleteMessageBatch) and the
// naive loop (receive 10, delete one by one). Run with -benchtime 3000x.
func BenchmarkConsume(b *testing.B) {
	rows := []drainbench.Row{
		{Name: "sqskit-consumer", Receives: drainbench.ConsumerReceives, Run: drainbench.Consumer()},
		// Spans, metrics and trace extraction recorded in memory
		// (telemetrytest): what telemetry costs the consumer itself,
		// before any exporter.
		{Name: "sqskit-consumer+telemetry", Receives: drainbench.ConsumerReceives, Run: drainbench.Consumer(func(o *consumer.Options) {
			o.TracerProvider, o.MeterProvider, o.Propagator = &telemetrytest.Tracer{}, &telemetrytest.Meter{}, telemetrytest.Propagator{}
		})},
		{Name: "hand-written-4-pollers", Receives: drainbench.PollersReceives, Run: drainbench.Pollers},
		{Name: drainbench.NaiveLoopName, Receives: 1, Run: drainbench.NaiveLoop},
	}
	for _, name := range fauxqs.BackendNames() {
		b.Run(name, func(b *testing.B) {
			open := backends(b, name)
			drainbench.WarmUp(b, open(0), rows) // on the backend all latencies share
			var ceilings drainbench.Ceilings
			for _, latency := range fauxqs.Latencies() {
				b.Run(fauxqs.LatencyName(latency), func(b *testing.B) {
					be := open(latency)
					for _, r := range rows {
						b.Run(r.Name, func(b *testing.B) { drainbench.Measure(b, be, latency, &ceilings, r) })
					}
				})
			}
		})
	}
}

// backends returns a function that gives the named backend with a latency
// added to every call; with fauxqs, all share one emulator.
func backends(b *testing.B, name string) func(time.Duration) fauxqs.Backend {
	if name != "fauxqs" {
		return func(latency time.Duration) fauxqs.Backend { return fauxqs.OpenBackend(b, name, latency) }
	}
	emu := fauxqs.StartT(b)
	return emu.Backend
}
