package consumer_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sqskit/sqskit/consumer"
	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/internal/drainbench"
	"github.com/sqskit/sqskit/internal/fauxqs"
	"github.com/sqskit/sqskit/internal/telemetry/telemetrytest"
	"github.com/sqskit/sqskit/sqsfake"
)

// fifoQuota is SQS's quota on a FIFO queue without high-throughput mode:
// 300 calls a second per action, so 3,000 messages a second in batches of
// ten. The bucket holds 100 ms of it (30 calls), so a run's rate is its
// sustained rate after the first 300 messages.
var fifoQuota = sqsfake.Quota{FIFO: 300, Burst: 100 * time.Millisecond}

// quotaGroups is how many message groups the FIFO queue at the quota
// holds: enough for a consumer to keep many receives in flight (SQS locks
// a group while any of its messages is in flight) and for a sender to keep
// many calls in flight (no two share a group).
const quotaGroups = 30

// drainFIFO drains the n messages of a FIFO queue made by be.FIFOQueue
// with the Consumer as users run it (Concurrency 32, every other option at
// its default; metrics recorded in mt when it is not nil), checks each
// group's order, and tells p of each deletion; sawThrottled, when not nil,
// is set when Status said throttled at a deletion. It returns once all n
// are deleted, with the Consumer (still running) and the cleanup that
// stops it.
func drainFIFO(tb testing.TB, be fauxqs.Backend, url string, n int, order *fauxqs.GroupOrder, p *fauxqs.Progress, mt *telemetrytest.Meter, sawThrottled *atomic.Bool) (*consumer.Consumer, func()) {
	tb.Helper()
	all := make(chan struct{})
	deleted := 0
	var c *consumer.Consumer
	c, err := consumer.New(be.API, url, func(_ context.Context, m *handler.Message) error {
		if err := order.See(m.GroupID(), m.Body); err != nil {
			tb.Error(err)
		}
		return nil
	}, func(o *consumer.Options) {
		o.Concurrency = 32
		if mt != nil {
			o.MeterProvider = mt
		}
		o.Hooks.Deleted = func(context.Context, *handler.Message) { // one goroutine tells every hook
			p.Add(1)
			if sawThrottled != nil && c.Status().Throttled {
				sawThrottled.Store(true)
			}
			if deleted++; deleted == n {
				close(all)
			}
		}
	})
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	if err := drainbench.AwaitDeleted(c, n, all, done); err != nil {
		tb.Fatal(err)
	}
	return c, func() {
		cancel()
		if err := <-done; err != nil {
			tb.Error(err)
		}
	}
}

// The Consumer drains a FIFO queue at its quota, throttled, in order: each
// group's messages are handled in the order sent, each once, at 0 ms and
// with 20 ms per call (in fake time).
func TestDrainKeepsFIFOOrderAtTheQuota(t *testing.T) {
	for _, latency := range []time.Duration{0, 20 * time.Millisecond} {
		t.Run(fauxqs.LatencyName(latency), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const n = 1500
				be := fauxqs.FakeQuota(latency, fifoQuota)
				url := be.FIFOQueue(t, n, quotaGroups)
				var order fauxqs.GroupOrder
				_, cleanup := drainFIFO(t, be, url, n, &order, &fauxqs.Progress{}, nil, nil)
				cleanup()
				if got := order.Seen(); got != n {
					t.Errorf("expect %d messages in order, got %d", n, got)
				}
			})
		})
	}
}

// BenchmarkConsumeFIFOQuota drains b.N messages in 30 groups from a FIFO
// queue at SQS's quota without high-throughput mode (300 calls a second
// per action: 3,000 messages a second in batches of ten, 100 ms of burst)
// on sqsfake, with the SDK's standard retryer and 0, 10 and 20 ms added to
// every request, with the Consumer as users run it, and checks each
// group's order. It reports msgs/s over the whole run and its fraction of
// what the quota allows in that time, burst included (of-quota: see
// fauxqs.QuotaMessages), msgs/s in steady state (see
// fauxqs.Progress.Steady) and its fraction of the 3,000 ceiling
// (steady-of-ceiling), the fraction of requests throttled, and
// calls/msg (every request, throttled ones and the SDK's retries
// included). Run with -benchtime 9000x.
func BenchmarkConsumeFIFOQuota(b *testing.B) {
	for _, latency := range fauxqs.Latencies() {
		b.Run(fauxqs.LatencyName(latency), func(b *testing.B) {
			be := fauxqs.FakeQuota(latency, fifoQuota)
			url := be.FIFOQueue(b, b.N, quotaGroups)
			var order fauxqs.GroupOrder
			p := &fauxqs.Progress{}
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			_, cleanup := drainFIFO(b, be, url, b.N, &order, p, nil, nil)
			elapsed := time.Since(start)
			b.StopTimer()
			calls, throttled := be.Calls(), be.Throttled()
			cleanup()
			if got := order.Seen(); got != b.N {
				b.Fatalf("expect %d messages in order, got %d", b.N, got)
			}
			reportQuota(b, elapsed, p.Steady(b.N), calls, throttled)
		})
	}
}

// reportQuota reports a run of b.N messages at the FIFO quota.
func reportQuota(b *testing.B, elapsed time.Duration, steady float64, calls, throttled int64) {
	const ceiling = 3000 // 300 calls a second × 10 messages
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
	b.ReportMetric(float64(b.N)/fauxqs.QuotaMessages(fifoQuota, elapsed), "of-quota")
	b.ReportMetric(steady, "steady-msgs/s")
	b.ReportMetric(steady/ceiling, "steady-of-ceiling")
	b.ReportMetric(float64(calls)/float64(b.N), "calls/msg")
	if calls > 0 {
		b.ReportMetric(float64(throttled)/float64(calls), "throttled")
	}
}
