package fifo_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqskit/sqskit/fifo"
	"github.com/sqskit/sqskit/internal/fauxqs"
	"github.com/sqskit/sqskit/internal/telemetry/telemetrytest"
)

// BenchmarkSend compares, on sqsfake and on the fauxqs emulator, at 0 ms
// and 10 ms added per call, in one run, for 1 and 100 groups: one
// SendMessage per message (what a hand-written loop does); SendBatch with
// one call in flight (its behaviour before it kept several) and with its
// default SendConcurrency; the Batcher under 32 concurrent callers with 4
// calls in flight (its former default) and with its default, and under 256
// callers. One op is one message; it reports messages/s, API calls per
// message, and the send calls in flight: at the peak and on average over
// the run.
func BenchmarkSend(b *testing.B) {
	modes := []sendMode{
		{name: "SendMessage-each"},
		{name: "SendBatch-1-call", batch: true, concurrency: 1},
		{name: "SendBatch", batch: true},
		{name: "SendBatch+telemetry", batch: true, telemetry: true},
		{name: "Batcher-32-callers-4-calls", callers: 32, concurrency: 4},
		{name: "Batcher-32-callers", callers: 32},
		{name: "Batcher-256-callers", callers: 256},
	}
	for _, name := range fauxqs.BackendNames() {
		for _, latency := range fauxqs.Latencies() {
			b.Run(name+"/"+fauxqs.LatencyName(latency), func(b *testing.B) {
				be := fauxqs.OpenBackend(b, name, latency)
				for _, groups := range []int{1, 100} {
					for _, mode := range modes {
						b.Run(fmt.Sprintf("%s/groups=%d", mode.name, groups), func(b *testing.B) {
							benchSend(b, be, mode, groups)
						})
					}
				}
			})
		}
	}
}

// sendMode is one way to send: one SendMessage per message, SendBatch
// (batch), or a Batcher with callers; concurrency is SendConcurrency (0:
// the default).
type sendMode struct {
	name        string
	batch       bool
	callers     int
	concurrency int
	telemetry   bool // spans, metrics and trace injection, in memory
}

// callMeter counts the send calls in flight: the peak, and the time spent
// in calls, which over the run's wall time is the average in flight.
type callMeter struct {
	fifo.API
	inFlight, peak, busy atomic.Int64
}

func (c *callMeter) enter() time.Time {
	n := c.inFlight.Add(1)
	for old := c.peak.Load(); n > old && !c.peak.CompareAndSwap(old, n); old = c.peak.Load() {
	}
	return time.Now()
}

func (c *callMeter) leave(start time.Time) {
	c.busy.Add(int64(time.Since(start)))
	c.inFlight.Add(-1)
}

func (c *callMeter) SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	defer c.leave(c.enter())
	return c.API.SendMessage(ctx, in, optFns...)
}

func (c *callMeter) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	defer c.leave(c.enter())
	return c.API.SendMessageBatch(ctx, in, optFns...)
}

func benchSend(b *testing.B, be fauxqs.Backend, mode sendMode, groups int) {
	ctx := context.Background()
	q, err := be.API.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("bench-" + strconv.FormatInt(time.Now().UnixNano(), 36) + ".fifo"),
		Attributes: map[string]string{"FifoQueue": "true"}})
	if err != nil {
		b.Fatal(err)
	}
	meter := &callMeter{API: be.API}
	s, err := fifo.NewSender(meter, *q.QueueUrl, func(o *fifo.SenderOptions) {
		if mode.batch {
			o.SendConcurrency = mode.concurrency
		}
		if mode.telemetry {
			o.TracerProvider, o.MeterProvider, o.Propagator = &telemetrytest.Tracer{}, &telemetrytest.Meter{}, telemetrytest.Propagator{}
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	msg := func(i int) fifo.Message {
		return fifo.Message{Body: `{"order":` + strconv.Itoa(i) + `,"items":["a","b"]}`, GroupID: "g" + strconv.Itoa(i%groups)}
	}
	be.ResetCalls()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	switch {
	case mode.batch:
		const chunk = 100
		for i := 0; i < b.N; i += chunk {
			msgs := make([]fifo.Message, min(chunk, b.N-i))
			for j := range msgs {
				msgs[j] = msg(i + j)
			}
			for _, r := range s.SendBatch(ctx, msgs) {
				if r.Err != nil {
					b.Fatal(r.Err)
				}
			}
		}
	case mode.callers > 0:
		batcher, err := s.NewBatcher(func(o *fifo.BatcherOptions) { o.SendConcurrency = mode.concurrency })
		if err != nil {
			b.Fatal(err)
		}
		var next atomic.Int64
		var wg sync.WaitGroup
		for range mode.callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := int(next.Add(1)) - 1; i < b.N; i = int(next.Add(1)) - 1 {
					if _, err := batcher.Send(ctx, msg(i)); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		if err := batcher.Close(ctx); err != nil {
			b.Fatal(err)
		}
	default:
		for i := 0; i < b.N; i++ {
			if _, err := s.Send(ctx, msg(i)); err != nil {
				b.Fatal(err)
			}
		}
	}
	elapsed := time.Since(start)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
	b.ReportMetric(float64(be.Calls())/float64(b.N), "calls/msg")
	b.ReportMetric(float64(meter.peak.Load()), "peak-calls")
	b.ReportMetric(float64(meter.busy.Load())/float64(elapsed), "avg-calls")
}
