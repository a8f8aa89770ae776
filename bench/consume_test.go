package bench

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"gocloud.dev/pubsub/awssnssqs"

	"github.com/sqskit/sqskit/consumer"
	"github.com/sqskit/sqskit/internal/fauxqs"
)

// BenchmarkConsumeEmulator drains b.N pre-loaded messages from the fauxqs
// emulator with a no-op handler (one op is one message): sqskit's Consumer,
// a hand-written SDK loop (receive 10, delete one by one) and gocloud.dev's
// awssnssqs subscription, in the same run.
func BenchmarkConsumeEmulator(b *testing.B) {
	be := fauxqs.OpenBackend(b, "fauxqs", 0) // every library counted per HTTP request
	for _, c := range []struct {
		name string
		run  func(b *testing.B, api *sqs.Client, url string)
	}{
		{"sqskit-consumer", runSqskit},
		{"hand-written-loop", runHandLoop},
		{"gocloud-awssnssqs", runGocloud},
	} {
		b.Run(c.name, func(b *testing.B) {
			url := be.Queue(b, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			c.run(b, be.Client, url)
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
			b.ReportMetric(float64(be.Calls())/float64(b.N), "calls/msg")
		})
	}
}

func runSqskit(b *testing.B, api *sqs.Client, url string) {
	c, err := consumer.New(api, url, func(o *consumer.Options) {
		o.Concurrency, o.MaxInFlight, o.Pollers = 32, 100, 4
		o.WaitTime = time.Second
		o.DeleteFlushInterval = 20 * time.Millisecond
		o.Handler = func(context.Context, *consumer.Message) error { return nil }
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	for c.Stats().Deleted < int64(b.N) {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}

func runHandLoop(b *testing.B, api *sqs.Client, url string) {
	ctx := context.Background()
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
}

func runGocloud(b *testing.B, api *sqs.Client, url string) {
	ctx := context.Background()
	sub := awssnssqs.OpenSubscriptionV2(ctx, api, url, nil)
	defer sub.Shutdown(ctx)
	for range b.N {
		msg, err := sub.Receive(ctx)
		if err != nil {
			b.Fatal(err)
		}
		msg.Ack()
	}
	// Acks are sent in batches in the background: wait until they are all
	// done, so the calls counted include them.
	if err := sub.Shutdown(ctx); err != nil {
		b.Fatal(err)
	}
}
