package bench

import (
	"context"
	"net/http"
	"strconv"
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

// countingHTTP counts requests, so every consumer's API calls are counted
// the same way.
type countingHTTP struct {
	calls atomic.Int64
}

func (c *countingHTTP) Do(r *http.Request) (*http.Response, error) {
	c.calls.Add(1)
	return http.DefaultClient.Do(r)
}

// BenchmarkConsumeEmulator drains b.N pre-loaded messages from the fauxqs
// emulator with a no-op handler (one op is one message): sqskit's Consumer,
// a hand-written SDK loop (receive 10, delete one by one) and gocloud.dev's
// awssnssqs subscription, in the same run.
func BenchmarkConsumeEmulator(b *testing.B) {
	emu := fauxqs.StartT(b)
	for _, c := range []struct {
		name string
		run  func(b *testing.B, api *sqs.Client, url string)
	}{
		{"sqskit-consumer", runSqskit},
		{"hand-written-loop", runHandLoop},
		{"gocloud-awssnssqs", runGocloud},
	} {
		b.Run(c.name, func(b *testing.B) {
			counter := &countingHTTP{}
			api := emu.Client(func(o *sqs.Options) { o.HTTPClient = counter })
			url := preload(b, api, b.N)
			counter.calls.Store(0)
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			c.run(b, api, url)
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
			b.ReportMetric(float64(counter.calls.Load())/float64(b.N), "calls/msg")
		})
	}
}

func preload(b *testing.B, api *sqs.Client, n int) string {
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
