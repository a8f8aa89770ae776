// Package drainbench holds the rows of sqskit's consumer benchmarks: ways
// to drain a queue of pre-loaded messages with a no-op handler, measured
// alike by package consumer's benchmark (sqsfake and fauxqs) and by the
// nested bench module's comparison with gocloud.dev, so that both compare
// the Consumer with the same hand-written loops.
package drainbench

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
	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/internal/fauxqs"
)

// Row is one way to drain a queue: Run handles n messages of url and
// returns once all n are deleted, before any cleanup whose calls should not
// count (it returns that cleanup).
type Row struct {
	Name string
	Run  func(b *testing.B, be fauxqs.Backend, url string, n int) (cleanup func())
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
		r.Run(b, be, be.Queue(b, n), n)()
	}
}

// Measure loads b.N messages, drains them with run and reports msgs/s,
// calls/msg, B/msg and allocs/msg.
func Measure(b *testing.B, be fauxqs.Backend, run func(*testing.B, fauxqs.Backend, string, int) func()) {
	url := be.Queue(b, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	cleanup := run(b, be, url, b.N)
	elapsed := time.Since(start)
	b.StopTimer()
	calls := be.Calls()
	cleanup()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
	b.ReportMetric(float64(calls)/float64(b.N), "calls/msg")
}

// Consumer is sqskit's Consumer as users run it, Concurrency 32 and every
// other option at its default, with optFns applied first.
func Consumer(optFns ...func(*consumer.Options)) func(*testing.B, fauxqs.Backend, string, int) func() {
	return func(b *testing.B, be fauxqs.Backend, url string, n int) func() {
		var deleted atomic.Int64
		all := make(chan struct{})
		c, err := consumer.New(be.API, url, func(context.Context, *handler.Message) error { return nil }, append(optFns, func(o *consumer.Options) {
			o.Concurrency = 32
			o.Hooks.Deleted = func(context.Context, *handler.Message) {
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
}

// Pollers is what a competent hand-written consumer does: 4 goroutines,
// each receiving 10 with long polling and deleting them with one
// DeleteMessageBatch.
func Pollers(b *testing.B, be fauxqs.Backend, url string, n int) func() {
	api := be.API
	ctx, cancel := context.WithCancel(context.Background())
	var handled atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, 4)
	for range 4 {
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

// NaiveLoop receives 10 and deletes them one by one.
func NaiveLoop(b *testing.B, be fauxqs.Backend, url string, n int) func() {
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
			done++
		}
	}
	return func() {}
}
