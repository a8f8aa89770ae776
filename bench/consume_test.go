package bench

import (
	"context"
	"testing"

	"gocloud.dev/pubsub/awssnssqs"

	"github.com/sqskit/sqskit/internal/drainbench"
	"github.com/sqskit/sqskit/internal/fauxqs"
)

// BenchmarkConsumeEmulator drains b.N pre-loaded messages from the fauxqs
// emulator with a no-op handler (one op is one message), at 0, 10 and
// 20 ms added per HTTP request, in one run, and reports messages/s over
// the whole run and in steady state, the run's ceiling and the steady
// rate's fraction of it (see drainbench.Measure): sqskit's Consumer as users run it
// (Concurrency 32, every other option at its default), gocloud.dev's
// awssnssqs subscription (defaults), a competent hand-written loop (4
// pollers, receive 10 and DeleteMessageBatch) and the naive loop (receive
// 10, delete one by one). Run with -benchtime 3000x.
func BenchmarkConsumeEmulator(b *testing.B) {
	emu := fauxqs.StartT(b) // every library counted per HTTP request
	rows := []drainbench.Row{
		{Name: "sqskit-consumer", Receives: drainbench.ConsumerReceives, Run: drainbench.Consumer()},
		{Name: "gocloud-awssnssqs", Receives: gocloudReceives, Run: runGocloud},
		{Name: "hand-written-4-pollers", Receives: drainbench.PollersReceives, Run: drainbench.Pollers},
		{Name: drainbench.NaiveLoopName, Receives: 1, Run: drainbench.NaiveLoop},
	}
	drainbench.WarmUp(b, emu.Backend(0), rows) // on the emulator all latencies share
	var ceilings drainbench.Ceilings
	for _, latency := range fauxqs.Latencies() {
		b.Run(fauxqs.LatencyName(latency), func(b *testing.B) {
			be := emu.Backend(latency)
			for _, r := range rows {
				b.Run(r.Name, func(b *testing.B) { drainbench.Measure(b, be, latency, &ceilings, r) })
			}
		})
	}
}

// gocloudReceives is the most receive calls gocloud's awssnssqs keeps in
// flight (its receive batcher's MaxHandlers).
const gocloudReceives = 100

// runGocloud receives and acks n messages with gocloud's defaults, and
// returns once its batched acks have all been sent (Shutdown waits for
// them), so the calls counted include them. Its acks are batched out of
// sight, so d is told of each at Ack, before its delete is sent.
func runGocloud(b *testing.B, be fauxqs.Backend, url string, n int, d *fauxqs.Progress) func() {
	ctx := context.Background()
	sub := awssnssqs.OpenSubscriptionV2(ctx, be.Client, url, nil)
	for range n {
		msg, err := sub.Receive(ctx)
		if err != nil {
			b.Fatal(err)
		}
		msg.Ack()
		d.Add(1)
	}
	if err := sub.Shutdown(ctx); err != nil {
		b.Fatal(err)
	}
	return func() {}
}
