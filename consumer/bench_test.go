package consumer_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/consumer"
	"github.com/sqskit/sqskit/internal/fauxqs"
	"github.com/sqskit/sqskit/internal/telemetry/telemetrytest"
	"github.com/sqskit/sqskit/sqsfake"
)

// BenchmarkConsume drains b.N pre-loaded messages with a no-op handler (one
// op is one message) and reports messages/s and API calls per message, at
// 0 ms and 10 ms added per call, on sqsfake and on the fauxqs emulator, in
// one run: the Consumer as users run it (Concurrency 32, every other option
// at its default), a competent hand-written loop (4 pollers, receive 10 and
// DeleteMessageBatch) and the naive loop (receive 10, delete one by one).
// Run with -benchtime 3000x.
func BenchmarkConsume(b *testing.B) {
	for _, name := range fauxqs.BackendNames() {
		b.Run(name, func(b *testing.B) {
			open := backends(b, name)
			// Every row, unmeasured, on the backend all latencies share, so
			// that none pays for a cold emulator: Node compiles the paths
			// each one uses as it goes, and needs about 10,000 messages.
			warm := open(0)
			for _, c := range consumers() {
				n := warmUp(c.Name)
				c.Run(b, warm.API, warm.Queue(b, n), n)()
			}
			for _, latency := range fauxqs.Latencies() {
				b.Run(fauxqs.LatencyName(latency), func(b *testing.B) {
					be := open(latency)
					for _, c := range consumers() {
						b.Run(c.Name, func(b *testing.B) { measureConsume(b, be, c.Run) })
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

// warmUp is how many messages a row drains before any is measured: the
// naive loop's calls are the ones the others make, one at a time.
func warmUp(row string) int {
	if row == "naive-loop" {
		return 500
	}
	return 6000
}

// consumeRow is one way to drain a queue: Run handles n messages of url and
// returns once all n are deleted, before any cleanup whose calls should not
// count (it returns that cleanup).
type consumeRow struct {
	Name string
	Run  func(b *testing.B, api sqsfake.API, url string, n int) (cleanup func())
}

// consumers are the rows this package measures.
func consumers() []consumeRow {
	return []consumeRow{
		{"sqskit-consumer", runConsumer},
		{"sqskit-consumer+telemetry", runConsumerTelemetry},
		{"hand-written-4-pollers", runPollers},
		{"naive-loop", runNaiveLoop},
	}
}

// measureConsume loads b.N messages, drains them with run and reports
// msgs/s, calls/msg, B/msg and allocs/msg.
func measureConsume(b *testing.B, be fauxqs.Backend, run func(*testing.B, sqsfake.API, string, int) func()) {
	url := be.Queue(b, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	cleanup := run(b, be.API, url, b.N)
	elapsed := time.Since(start)
	b.StopTimer()
	calls := be.Calls()
	cleanup()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
	b.ReportMetric(float64(calls)/float64(b.N), "calls/msg")
}

// runConsumer is the Consumer at Concurrency 32 and defaults otherwise.
func runConsumer(b *testing.B, api sqsfake.API, url string, n int) func() {
	return runConsumerWith(b, api, url, n, func(*consumer.Options) {})
}

// runConsumerTelemetry is runConsumer with spans, metrics and trace
// extraction on, recorded in memory (telemetrytest): what telemetry costs
// the consumer itself, before any exporter.
func runConsumerTelemetry(b *testing.B, api sqsfake.API, url string, n int) func() {
	return runConsumerWith(b, api, url, n, func(o *consumer.Options) {
		o.TracerProvider, o.MeterProvider, o.Propagator = &telemetrytest.Tracer{}, &telemetrytest.Meter{}, telemetrytest.Propagator{}
	})
}

func runConsumerWith(b *testing.B, api sqsfake.API, url string, n int, fn func(*consumer.Options)) func() {
	var deleted atomic.Int64
	all := make(chan struct{})
	c, err := consumer.New(api, url, func(context.Context, *consumer.Message) error { return nil }, fn, func(o *consumer.Options) {
		o.Concurrency = 32
		o.Hooks.Deleted = func(context.Context, *consumer.Message) {
			if deleted.Add(1) == int64(n) {
				close(all)
			}
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	select {
	case <-all:
	case err := <-done:
		b.Fatalf("Run ended early: %v", err)
	}
	return func() {
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
}

// runPollers is what a competent hand-written consumer does: 4 goroutines,
// each receiving 10 with long polling and deleting them with one
// DeleteMessageBatch.
func runPollers(b *testing.B, api sqsfake.API, url string, n int) func() {
	ctx, cancel := context.WithCancel(context.Background())
	var handled atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
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
				if handled.Add(int64(len(out.Messages))) >= int64(n) {
					cancel()
				}
			}
		}()
	}
	<-ctx.Done()
	select {
	case err := <-errc:
		b.Fatal(err)
	default:
	}
	return func() { cancel(); wg.Wait() }
}

// runNaiveLoop receives 10 and deletes them one by one.
func runNaiveLoop(b *testing.B, api sqsfake.API, url string, n int) func() {
	ctx := context.Background()
	for done := 0; done < n; {
		out, err := api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 20})
		if err != nil {
			b.Fatal(err)
		}
		for _, m := range out.Messages {
			if _, err := api.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
				b.Fatal(err)
			}
			done++
		}
	}
	return func() {}
}
