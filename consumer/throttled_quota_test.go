package consumer_test

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sqskit/sqskit/internal/fauxqs"
	"github.com/sqskit/sqskit/internal/telemetry/telemetrytest"
	"github.com/sqskit/sqskit/sqsfake"
)

// lowQuota is a tenth of SQS's FIFO quota, as a throttled KMS key behind
// an SSE-KMS queue behaves: 30 calls a second per action, so 300 messages
// a second in batches of ten, with 100 ms of burst.
var lowQuota = sqsfake.Quota{FIFO: 30, Burst: 100 * time.Millisecond}

// lowQuotaCeiling is what lowQuota lets through: 30 calls a second × 10.
const lowQuotaCeiling = 300

// At a quota of 30 calls a second per action the Consumer, at its
// defaults, drains a 30-group FIFO queue in order, each message once, and
// says it is throttled: Status().Throttled and the sqskit.consumer.throttled
// counter, by operation. (Its pace is BenchmarkConsumeThrottledQuota's to
// measure; the test logs it, in fake time.)
func TestThrottledQuotaDrainsInOrderAndShowsThrottled(t *testing.T) {
	for _, latency := range []time.Duration{10 * time.Millisecond, 20 * time.Millisecond} {
		t.Run(fauxqs.LatencyName(latency), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const n = 3000
				be := fauxqs.FakeQuota(latency, lowQuota)
				url := be.FIFOQueue(t, n, quotaGroups)
				var order fauxqs.GroupOrder
				p, mt := &fauxqs.Progress{}, &telemetrytest.Meter{}
				start := time.Now()
				var sawThrottled atomic.Bool
				c, cleanup := drainFIFO(t, be, url, n, &order, p, mt, &sawThrottled)
				elapsed := time.Since(start)
				s := c.Status()
				cleanup()
				if got := order.Seen(); got != n {
					t.Errorf("expect %d messages in order, got %d", n, got)
				}
				if st := c.Stats(); st.Deleted != n || st.Failed != 0 {
					t.Errorf("expect each message deleted once and none failed, got %+v", st)
				}
				// Throttled holds for 10 s after a throttle; the drain may end
				// later than that, so Status is read at every deletion.
				if !sawThrottled.Load() || be.Throttled() == 0 {
					t.Errorf("expect Status to show throttling while it was (%d requests throttled), got %+v at the end", be.Throttled(), s)
				}
				var byOp float64
				for _, op := range []string{"receive", "delete", "change_visibility"} {
					byOp += mt.Sum("sqskit.consumer.throttled", "messaging.operation.name="+op)
				}
				if total := mt.Sum("sqskit.consumer.throttled"); total == 0 || total != byOp || total != float64(be.Throttled()) {
					t.Errorf("expect the metric to count the %d throttled calls by operation, got %v (%v by operation)", be.Throttled(), total, byOp)
				}
				t.Logf("%.3f of the quota, steady %.0f msgs/s, %.1f %% of %d calls throttled (fake time)",
					float64(n)/fauxqs.QuotaMessages(lowQuota, elapsed), p.Steady(n), 100*float64(be.Throttled())/float64(be.Calls()), be.Calls())
			})
		})
	}
}

// BenchmarkConsumeThrottledQuota drains b.N messages in 30 groups from a
// FIFO queue at a tenth of SQS's quota (30 calls a second per action:
// lowQuota) on sqsfake with the SDK's standard retryer and 0, 10 and 20 ms
// added to every request, with the Consumer at its defaults, and checks
// each group's order. It reports the fraction of what the quota allows
// over the run (of-quota, burst included: fauxqs.QuotaMessages), the
// steady rate's fraction of the 300 msgs/s ceiling (steady-of-ceiling),
// the fraction of requests throttled, and what Status and the throttled
// metric said (status-throttled 1 or 0; metric-throttled, calls). Run with
// -benchtime 6000x (20 s per latency).
func BenchmarkConsumeThrottledQuota(b *testing.B) {
	for _, latency := range fauxqs.Latencies() {
		b.Run(fauxqs.LatencyName(latency), func(b *testing.B) {
			be := fauxqs.FakeQuota(latency, lowQuota)
			url := be.FIFOQueue(b, b.N, quotaGroups)
			var order fauxqs.GroupOrder
			p, mt := &fauxqs.Progress{}, &telemetrytest.Meter{}
			b.ResetTimer()
			start := time.Now()
			c, cleanup := drainFIFO(b, be, url, b.N, &order, p, mt, nil)
			elapsed := time.Since(start)
			b.StopTimer()
			s := c.Status()
			calls, throttled := be.Calls(), be.Throttled()
			cleanup()
			if got := order.Seen(); got != b.N {
				b.Fatalf("expect %d messages in order, got %d", b.N, got)
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
			b.ReportMetric(float64(b.N)/fauxqs.QuotaMessages(lowQuota, elapsed), "of-quota")
			b.ReportMetric(p.Steady(b.N)/lowQuotaCeiling, "steady-of-ceiling")
			if calls > 0 {
				b.ReportMetric(float64(throttled)/float64(calls), "throttled")
			}
			st := 0.0
			if s.Throttled {
				st = 1
			}
			b.ReportMetric(st, "status-throttled")
			b.ReportMetric(mt.Sum("sqskit.consumer.throttled"), "metric-throttled")
		})
	}
}
