// Package drainbench holds the rows of sqskit's consumer benchmarks: ways
// to drain a queue of pre-loaded messages with a no-op handler, measured
// alike by package consumer's benchmark (sqsfake and fauxqs) and by the
// nested bench module's comparison with gocloud.dev, so that both compare
// the Consumer with the same hand-written loops.
package drainbench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/consumer"
	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/internal/fauxqs"
	"github.com/sqskit/sqskit/sqsfake"
)

// Row is one way to drain a queue: Run handles n messages of url, tells d
// of each deletion (d.Add), and returns once all n are deleted, before any cleanup
// whose calls should not count (it returns that cleanup).
type Row struct {
	Name string
	// Receives is the most receive calls the row keeps in flight, which
	// bounds it at Receives × 10 messages per round trip.
	Receives int
	Run      RunFunc
}

// RunFunc drains n messages of url, telling d of each deletion.
type RunFunc func(b *testing.B, be fauxqs.Backend, url string, n int, d *fauxqs.Progress) (cleanup func())

// Ceilings holds what bounds each row of a backend: the backend's own
// 0 ms rate, the best steady rate of any row at 0 ms in this run (it is
// unknown, and not a bound, until a 0 ms row ran).
type Ceilings struct {
	mu    sync.Mutex
	rate0 float64
}

// Of returns the ceiling of a row keeping receives calls in flight at
// latency: min(receives × 10 ÷ latency, the backend's 0 ms rate); 0 when
// neither is known.
func (c *Ceilings) Of(receives int, latency time.Duration) float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	ceiling := c.rate0
	if latency > 0 && receives > 0 {
		byCalls := float64(receives) * 10 / latency.Seconds()
		if ceiling == 0 || byCalls < ceiling {
			ceiling = byCalls
		}
	}
	return ceiling
}

func (c *Ceilings) saw0ms(steady float64) {
	c.mu.Lock()
	c.rate0 = max(c.rate0, steady)
	c.mu.Unlock()
}

// NaiveLoopName is the row name of NaiveLoop, which warms up on fewer
// messages.
const NaiveLoopName = "naive-loop"

// WarmUp drains messages with every row, unmeasured, on be, so that none
// pays for a cold emulator: Node compiles the paths each row uses as it
// goes, and needs about 10,000 messages. The naive loop's calls are the
// ones the others make, one at a time, so it drains 500.
func WarmUp(b *testing.B, be fauxqs.Backend, rows []Row) {
	for _, r := range rows {
		n := 6000
		if r.Name == NaiveLoopName {
			n = 500
		}
		r.Run(b, be, be.Queue(b, n), n, &fauxqs.Progress{})()
	}
}

// Measure loads b.N messages, drains them with r on be, where latency is
// added to every call, and reports msgs/s over the whole run, the steady
// rate (steady-msgs/s: see fauxqs.Progress.Steady), the run's ceiling
// (ceiling-msgs/s: see Ceilings.Of) and the steady rate's fraction of it
// (of-ceiling), the mean round trip of the receives that brought messages
// (recv-rtt-ms: the latency added, and what the backend and the client
// take on top; rows that call be.API only), calls/msg, B/msg and
// allocs/msg. A run at 0 ms records the backend's 0 ms rate in c.
func Measure(b *testing.B, be fauxqs.Backend, latency time.Duration, c *Ceilings, r Row) {
	url := be.Queue(b, b.N)
	rtt := &receiveTimer{API: be.API}
	be.API = rtt
	d := &fauxqs.Progress{}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	cleanup := r.Run(b, be, url, b.N, d)
	elapsed := time.Since(start)
	b.StopTimer()
	calls := be.Calls()
	cleanup()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
	b.ReportMetric(float64(calls)/float64(b.N), "calls/msg")
	steady := d.Steady(b.N)
	if steady == 0 {
		return
	}
	b.ReportMetric(steady, "steady-msgs/s")
	if ms := rtt.mean(); ms > 0 {
		b.ReportMetric(ms, "recv-rtt-ms")
	}
	if latency == 0 {
		c.saw0ms(steady)
	}
	if ceiling := c.Of(r.Receives, latency); ceiling > 0 {
		b.ReportMetric(ceiling, "ceiling-msgs/s")
		b.ReportMetric(steady/ceiling, "of-ceiling")
	}
}

// ConsumerReceives is the most receive calls the Consumer keeps in flight
// with its defaults (MaxReceiveConcurrency).
const ConsumerReceives = 24

// Consumer is sqskit's Consumer as users run it, Concurrency 32 and every
// other option at its default, with optFns applied first.
func Consumer(optFns ...func(*consumer.Options)) RunFunc {
	return func(b *testing.B, be fauxqs.Backend, url string, n int, d *fauxqs.Progress) func() {
		var deleted atomic.Int64
		all := make(chan struct{})
		c, err := consumer.New(be.API, url, func(context.Context, *handler.Message) error { return nil }, append(optFns, func(o *consumer.Options) {
			o.Concurrency = 32
			o.Hooks.Deleted = func(context.Context, *handler.Message) {
				d.Add(1)
				if deleted.Add(1) == int64(n) {
					close(all)
				}
			}
		})...)
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx) }()
		if err := AwaitDeleted(c, n, all, done); err != nil {
			b.Fatal(err)
		}
		return func() {
			cancel()
			if err := <-done; err != nil {
				b.Fatal(err)
			}
		}
	}
}

// receiveTimer times the receives that bring messages.
type receiveTimer struct {
	sqsfake.API
	mu    sync.Mutex
	total time.Duration
	n     int
}

func (t *receiveTimer) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	start := time.Now()
	out, err := t.API.ReceiveMessage(ctx, in, optFns...)
	if err == nil && len(out.Messages) > 0 {
		took := time.Since(start)
		t.mu.Lock()
		t.total += took
		t.n++
		t.mu.Unlock()
	}
	return out, err
}

// mean returns the mean round trip in milliseconds, 0 when none was timed.
func (t *receiveTimer) mean() float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n == 0 {
		return 0
	}
	return float64(t.total) / float64(t.n) / float64(time.Millisecond)
}

// AwaitDeleted waits until c has deleted n messages: when its Deleted hook
// closes all, or, should hooks fall behind and drop signals (they do, by
// design, when the machine is too busy to report them), when its Stats say
// so, polled every 2 ms. It returns Run's error if Run ends first (done).
func AwaitDeleted(c *consumer.Consumer, n int, all <-chan struct{}, done <-chan error) error {
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-all:
			return nil
		case <-tick.C:
			if c.Stats().Deleted >= int64(n) {
				return nil
			}
		case err := <-done:
			return fmt.Errorf("consumer.Run ended early: %w", err)
		}
	}
}

// PollersReceives is the receive calls Pollers keeps in flight.
const PollersReceives = 4

// Pollers is what a competent hand-written consumer does: 4 goroutines,
// each receiving 10 with long polling and deleting them with one
// DeleteMessageBatch.
func Pollers(b *testing.B, be fauxqs.Backend, url string, n int, d *fauxqs.Progress) func() {
	api := be.API
	ctx, cancel := context.WithCancel(context.Background())
	var handled atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, PollersReceives)
	for range PollersReceives {
		wg.Go(func() {
			for ctx.Err() == nil {
				out, err := api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 20})
				if err != nil {
					if ctx.Err() == nil {
						errc <- err
					}
					return
				}
				if len(out.Messages) == 0 {
					continue
				}
				entries := make([]types.DeleteMessageBatchRequestEntry, len(out.Messages))
				for i, m := range out.Messages {
					entries[i] = types.DeleteMessageBatchRequestEntry{Id: m.MessageId, ReceiptHandle: m.ReceiptHandle}
				}
				del, err := api.DeleteMessageBatch(context.Background(), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
				if err == nil && len(del.Failed) > 0 {
					err = errors.New(aws.ToString(del.Failed[0].Message))
				}
				if err != nil {
					errc <- err
					return
				}
				d.Add(len(out.Messages))
				if handled.Add(int64(len(out.Messages))) >= int64(n) {
					cancel()
				}
			}
		})
	}
	<-ctx.Done()
	select {
	case err := <-errc:
		b.Fatal(err)
	default:
	}
	return func() { cancel(); wg.Wait() }
}

// NaiveLoop receives 10 and deletes them one by one, one receive in
// flight.
func NaiveLoop(b *testing.B, be fauxqs.Backend, url string, n int, d *fauxqs.Progress) func() {
	ctx := context.Background()
	for done := 0; done < n; {
		out, err := be.API.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 20})
		if err != nil {
			b.Fatal(err)
		}
		for _, m := range out.Messages {
			if _, err := be.API.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
				b.Fatal(err)
			}
			d.Add(1)
			done++
		}
	}
	return func() {}
}
