package fifo_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqskit/sqskit/fifo"
	"github.com/sqskit/sqskit/internal/fauxqs"
	"github.com/sqskit/sqskit/sqsfake"
)

// fifoQuota is SQS's quota on a FIFO queue without high-throughput mode:
// 300 calls a second per action, so 3,000 messages a second in batches of
// ten. The bucket holds 100 ms of it (30 calls).
var fifoQuota = sqsfake.Quota{FIFO: 300, Burst: 100 * time.Millisecond}

// quotaGroups is how many message groups are sent to the FIFO queue at the
// quota: no two calls in flight may share a group, so the groups bound the
// calls in flight.
const quotaGroups = 30

// quotaMode is one way to send at the quota: SendBatch with chunk messages
// per call, or a Batcher with callers concurrent callers.
type quotaMode struct {
	name    string
	chunk   int
	callers int
}

var quotaModes = []quotaMode{
	{name: "SendBatch-1000", chunk: 1000},
	{name: "SendBatch-100", chunk: 100},
	{name: "Batcher-256-callers", callers: 256},
}

// quotaMeter counts the send calls in flight (the peak, and the time spent
// in calls) and records when messages were stored.
type quotaMeter struct {
	fifo.API
	stored                      fauxqs.Progress
	calls, inFlight, peak, busy atomic.Int64
}

func (m *quotaMeter) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	m.calls.Add(1)
	n := m.inFlight.Add(1)
	for old := m.peak.Load(); n > old && !m.peak.CompareAndSwap(old, n); old = m.peak.Load() {
	}
	start := time.Now()
	out, err := m.API.SendMessageBatch(ctx, in, optFns...)
	m.busy.Add(int64(time.Since(start)))
	m.inFlight.Add(-1)
	if err == nil {
		m.stored.Add(len(out.Successful))
	}
	return out, err
}

// sendAtQuota sends n messages, message i to group i % quotaGroups, with
// mode on be, and checks that each group's messages were stored in order:
// with SendBatch, the sequence numbers SQS gave a group's messages rise in
// the order given; with the Batcher, each caller sends one group's
// messages, one at a time, and their sequence numbers rise likewise. No
// Result may say Reordered.
func sendAtQuota(tb testing.TB, be fauxqs.Backend, mode quotaMode, n int) *quotaMeter {
	tb.Helper()
	ctx := context.Background()
	q, err := be.API.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("quota-" + strconv.FormatInt(time.Now().UnixNano(), 36) + ".fifo"),
		Attributes: map[string]string{"FifoQueue": "true"}})
	if err != nil {
		tb.Fatal(err)
	}
	meter := &quotaMeter{API: be.API}
	s, err := fifo.NewSender(meter, *q.QueueUrl)
	if err != nil {
		tb.Fatal(err)
	}
	be.ResetCalls()
	msg := func(i int) fifo.Message {
		return fifo.Message{Body: `{"order":` + strconv.Itoa(i) + `}`, GroupID: fauxqs.GroupName(i % quotaGroups)}
	}
	var order groupSequences
	if mode.callers == 0 {
		for first := 0; first < n; first += mode.chunk {
			msgs := make([]fifo.Message, min(mode.chunk, n-first))
			for j := range msgs {
				msgs[j] = msg(first + j)
			}
			for j, r := range s.SendBatch(ctx, msgs) {
				order.see(tb, msgs[j].GroupID, r)
			}
		}
		return meter
	}
	b, err := s.NewBatcher()
	if err != nil {
		tb.Fatal(err)
	}
	var wg sync.WaitGroup
	for c := range mode.callers {
		wg.Go(func() {
			var mine groupSequences // this caller's messages, all of one group
			for i := c; i < n; i += mode.callers {
				m := msg(c % quotaGroups)
				m.Body = `{"order":` + strconv.Itoa(i) + `}`
				r, _ := b.Send(ctx, m)
				mine.see(tb, m.GroupID, r)
			}
		})
	}
	wg.Wait()
	if err := b.Close(ctx); err != nil {
		tb.Fatal(err)
	}
	return meter
}

// groupSequences checks that each group's sequence numbers rise.
type groupSequences struct {
	last map[string]string
}

func (g *groupSequences) see(tb testing.TB, group string, r fifo.Result) {
	if r.Err != nil || r.Reordered {
		tb.Errorf("group %s: %+v", group, r)
		return
	}
	if g.last == nil {
		g.last = map[string]string{}
	}
	prev, seen := g.last[group]
	if seen && !sequenceBefore(prev, r.SequenceNumber) {
		tb.Errorf("group %s: sequence number %s after %s", group, r.SequenceNumber, prev)
	}
	g.last[group] = r.SequenceNumber
}

// sequenceBefore compares two SQS sequence numbers, decimal strings.
func sequenceBefore(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// SendBatch and the Batcher send to a FIFO queue at its quota, throttled,
// and each group's messages are stored in order, at 0 ms and with 20 ms
// per call (in fake time).
func TestSendKeepsFIFOOrderAtTheQuota(t *testing.T) {
	for _, latency := range []time.Duration{0, 20 * time.Millisecond} {
		for _, mode := range quotaModes {
			t.Run(fmt.Sprintf("%s/%s", fauxqs.LatencyName(latency), mode.name), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					const n = 1500
					be := fauxqs.FakeQuota(latency, fifoQuota)
					meter := sendAtQuota(t, be, mode, n)
					if got := meter.stored.Steady(n); got == 0 {
						t.Errorf("expect %d messages stored, got fewer", n)
					}
				})
			})
		}
	}
}

// At the quota, SendBatch paces itself: throttled calls are few, and the
// SDK sends no request of its own after one (it would wait up to seconds
// holding the call's groups, and the pipeline would not know to slow
// down). Before, ten calls in flight at 10 ms offered 1,000 calls a second
// to a quota of 300, and 3 calls in 30 groups could fly at once.
func TestSendBatchPacesItselfAtTheQuota(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 6000
		be := fauxqs.FakeQuota(10*time.Millisecond, fifoQuota)
		meter := sendAtQuota(t, be, quotaMode{name: "SendBatch", chunk: n}, n)
		calls, requests, throttled := meter.calls.Load(), be.Calls(), be.Throttled()
		if requests != calls {
			t.Errorf("expect one request per call, got %d requests for %d calls", requests, calls)
		}
		if throttled*20 > requests {
			t.Errorf("expect fewer than 5%% of the requests throttled, got %d of %d", throttled, requests)
		}
		if meter.peak.Load() <= 3 {
			t.Errorf("expect more than 3 calls in flight, got %d", meter.peak.Load())
		}
	})
}

// BenchmarkSendFIFOQuota sends b.N messages in 30 groups to a FIFO queue at
// SQS's quota without high-throughput mode (300 calls a second per action:
// 3,000 messages a second in batches of ten, 100 ms of burst) on sqsfake,
// with the SDK's standard retryer and 0, 10 and 20 ms added to every
// request: SendBatch with 1,000 and 100 messages per call, and the Batcher
// under 256 callers, each sending one group's messages one at a time. It
// checks each group's order and reports msgs/s over the whole run and its
// fraction of what the quota allows in that time, burst included
// (of-quota: see fauxqs.QuotaMessages), msgs/s in steady state (see
// fauxqs.Progress.Steady) and its fraction of the 3,000 ceiling
// (steady-of-ceiling), the fraction of requests throttled, calls/msg
// (every request), and the calls in flight, at the peak and on average.
// Run with -benchtime 9000x.
func BenchmarkSendFIFOQuota(b *testing.B) {
	for _, latency := range fauxqs.Latencies() {
		for _, mode := range quotaModes {
			b.Run(fauxqs.LatencyName(latency)+"/"+mode.name, func(b *testing.B) {
				be := fauxqs.FakeQuota(latency, fifoQuota)
				b.ReportAllocs()
				b.ResetTimer()
				start := time.Now()
				meter := sendAtQuota(b, be, mode, b.N)
				elapsed := time.Since(start)
				b.StopTimer()
				const ceiling = 3000 // 300 calls a second × 10 messages
				steady := meter.stored.Steady(b.N)
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
				b.ReportMetric(float64(b.N)/fauxqs.QuotaMessages(fifoQuota, elapsed), "of-quota")
				b.ReportMetric(steady, "steady-msgs/s")
				b.ReportMetric(steady/ceiling, "steady-of-ceiling")
				b.ReportMetric(float64(be.Calls())/float64(b.N), "calls/msg")
				b.ReportMetric(float64(be.Throttled())/float64(max(be.Calls(), 1)), "throttled")
				b.ReportMetric(float64(meter.peak.Load()), "peak-calls")
				b.ReportMetric(float64(meter.busy.Load())/float64(elapsed), "avg-calls")
			})
		}
	}
}
