package consumer_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqskit/sqskit/consumer"
	"github.com/sqskit/sqskit/internal/fauxqs"
)

// BenchmarkConsume drains b.N pre-loaded messages with a no-op handler (one
// op is one message) and reports messages/s and consumer API calls per
// message: this Consumer beside a hand-written SDK loop (receive 10, delete
// one by one), on sqsfake and on the fauxqs emulator in the same run.
func BenchmarkConsume(b *testing.B) {
	for _, name := range fauxqs.BackendNames() {
		b.Run(name, func(b *testing.B) {
			be := fauxqs.OpenBackend(b, name, 0)
			b.Run("sqskit-consumer", func(b *testing.B) { benchConsumer(b, be) })
			b.Run("hand-written-loop", func(b *testing.B) { benchHandLoop(b, be) })
		})
	}
}

func benchConsumer(b *testing.B, be fauxqs.Backend) {
	url := be.Queue(b, b.N)
	c, err := consumer.New(be.API, url, func(o *consumer.Options) {
		o.Concurrency = 32
		o.MaxInFlight = 100
		o.Pollers = 4
		o.WaitTime = time.Second
		o.DeleteFlushInterval = 20 * time.Millisecond
		o.Handler = func(context.Context, *consumer.Message) error { return nil }
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
	calls := be.Calls() // before shutdown's last, empty receives
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
	b.ReportMetric(float64(calls)/float64(b.N), "calls/msg")
}

func benchHandLoop(b *testing.B, be fauxqs.Backend) {
	api, url := be.API, be.Queue(b, b.N)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for done := 0; done < b.N; {
		out, err := api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
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
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
	b.ReportMetric(float64(be.Calls())/float64(b.N), "calls/msg")
}
