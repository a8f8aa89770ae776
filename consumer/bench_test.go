package consumer_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/consumer"
	"github.com/sqskit/sqskit/internal/fauxqs"
	"github.com/sqskit/sqskit/sqsfake"
)

// countingClient counts the calls the consumer side makes.
type countingClient struct {
	consumer.API
	calls atomic.Int64
}

func (c *countingClient) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, fns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	c.calls.Add(1)
	return c.API.ReceiveMessage(ctx, in, fns...)
}

func (c *countingClient) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, fns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	c.calls.Add(1)
	return c.API.DeleteMessageBatch(ctx, in, fns...)
}

func (c *countingClient) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, fns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	c.calls.Add(1)
	return c.API.ChangeMessageVisibilityBatch(ctx, in, fns...)
}

// BenchmarkConsume drains b.N pre-loaded messages with a no-op handler (one
// op is one message) and reports messages/s and consumer API calls per
// message: this Consumer beside a hand-written SDK loop (receive 10, delete
// one by one), on sqsfake and on the fauxqs emulator in the same run.
func BenchmarkConsume(b *testing.B) {
	backends := []struct {
		name string
		api  func(*testing.B) sqsfake.API
	}{
		{"sqsfake", func(*testing.B) sqsfake.API { return sqsfake.New().Client() }},
		{"fauxqs", func(b *testing.B) sqsfake.API { return fauxqs.StartT(b).Client() }},
	}
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			api := be.api(b)
			b.Run("sqskit-consumer", func(b *testing.B) { benchConsumer(b, api) })
			b.Run("hand-written-loop", func(b *testing.B) { benchHandLoop(b, api) })
		})
	}
}

func preload(b *testing.B, api sqsfake.API, n int) string {
	ctx := context.Background()
	q, err := api.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("bench-" + strconv.FormatInt(time.Now().UnixNano(), 36))})
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < n; i += 10 {
		var entries []types.SendMessageBatchRequestEntry
		for j := i; j < min(i+10, n); j++ {
			entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(j)), MessageBody: aws.String(`{"order":42}`)})
		}
		if _, err := api.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: q.QueueUrl, Entries: entries}); err != nil {
			b.Fatal(err)
		}
	}
	return *q.QueueUrl
}

func benchConsumer(b *testing.B, api sqsfake.API) {
	url := preload(b, api, b.N)
	counter := &countingClient{API: api}
	var handled atomic.Int64
	c, err := consumer.New(counter, url, func(o *consumer.Options) {
		o.Concurrency = 32
		o.MaxInFlight = 100
		o.Pollers = 4
		o.WaitTime = time.Second
		o.DeleteFlushInterval = 20 * time.Millisecond
		o.Handler = func(context.Context, *consumer.Message) error { handled.Add(1); return nil }
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	go func() { done <- c.Run(ctx) }()
	for c.Stats().Deleted < int64(b.N) {
		time.Sleep(time.Millisecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	calls := counter.calls.Load() // before shutdown's last, empty receives
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
	b.ReportMetric(float64(calls)/float64(b.N), "calls/msg")
}

func benchHandLoop(b *testing.B, api sqsfake.API) {
	url := preload(b, api, b.N)
	ctx := context.Background()
	calls := 0
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for done := 0; done < b.N; {
		out, err := api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		calls++
		if err != nil {
			b.Fatal(err)
		}
		for _, m := range out.Messages {
			if _, err := api.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
				b.Fatal(err)
			}
			calls++
			done++
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
	b.ReportMetric(float64(calls)/float64(b.N), "calls/msg")
}
