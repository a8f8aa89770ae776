package bench

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
	"gocloud.dev/pubsub/awssnssqs"

	"github.com/sqskit/sqskit/consumer"
	"github.com/sqskit/sqskit/internal/fauxqs"
)

// BenchmarkConsumeEmulator drains b.N pre-loaded messages from the fauxqs
// emulator with a no-op handler (one op is one message), at 0 ms and 10 ms
// added per HTTP request, in one run: sqskit's Consumer as users run it
// (Concurrency 32, every other option at its default), gocloud.dev's
// awssnssqs subscription (defaults), a competent hand-written loop (4
// pollers, receive 10 and DeleteMessageBatch) and the naive loop (receive
// 10, delete one by one). Run with -benchtime 3000x.
func BenchmarkConsumeEmulator(b *testing.B) {
	emu := fauxqs.StartT(b) // every library counted per HTTP request
	rows := []struct {
		name string
		run  func(b *testing.B, api *sqs.Client, url string, n int) (cleanup func())
	}{
		{"sqskit-consumer", runSqskit},
		{"gocloud-awssnssqs", runGocloud},
		{"hand-written-4-pollers", runPollers},
		{"naive-loop", runNaiveLoop},
	}
	// Every row, unmeasured, on the emulator all latencies share, so that
	// none pays for a cold emulator: Node compiles the paths each one uses
	// as it goes, and needs about 10,000 messages.
	warm := emu.Backend(0)
	for _, c := range rows {
		n := warmUp(c.name)
		c.run(b, warm.Client, warm.Queue(b, n), n)()
	}
	for _, latency := range fauxqs.Latencies() {
		b.Run(fauxqs.LatencyName(latency), func(b *testing.B) {
			be := emu.Backend(latency)
			for _, c := range rows {
				b.Run(c.name, func(b *testing.B) {
					url := be.Queue(b, b.N)
					b.ReportAllocs()
					b.ResetTimer()
					start := time.Now()
					cleanup := c.run(b, be.Client, url, b.N)
					elapsed := time.Since(start)
					b.StopTimer()
					calls := be.Calls()
					cleanup()
					b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
					b.ReportMetric(float64(calls)/float64(b.N), "calls/msg")
				})
			}
		})
	}
}

// warmUp is how many messages a row drains before any is measured: the
// naive loop's calls are the ones the others make, one at a time.
func warmUp(row string) int {
	if row == "naive-loop" {
		return 500
	}
	return 6000
}

// runSqskit returns once the Consumer has deleted n messages; the cleanup
// stops it.
func runSqskit(b *testing.B, api *sqs.Client, url string, n int) func() {
	var deleted atomic.Int64
	all := make(chan struct{})
	c, err := consumer.New(api, url, func(context.Context, *consumer.Message) error { return nil }, func(o *consumer.Options) {
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

// runGocloud receives and acks n messages with gocloud's defaults, and
// returns once its batched acks have all been sent (Shutdown waits for
// them), so the calls counted include them.
func runGocloud(b *testing.B, api *sqs.Client, url string, n int) func() {
	ctx := context.Background()
	sub := awssnssqs.OpenSubscriptionV2(ctx, api, url, nil)
	for range n {
		msg, err := sub.Receive(ctx)
		if err != nil {
			b.Fatal(err)
		}
		msg.Ack()
	}
	if err := sub.Shutdown(ctx); err != nil {
		b.Fatal(err)
	}
	return func() {}
}

// runPollers is what a competent hand-written consumer does: 4 goroutines,
// each receiving 10 with long polling and deleting them with one
// DeleteMessageBatch.
func runPollers(b *testing.B, api *sqs.Client, url string, n int) func() {
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
func runNaiveLoop(b *testing.B, api *sqs.Client, url string, n int) func() {
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
