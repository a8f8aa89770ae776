package sqsfake_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/internal/fauxqs"
	"github.com/sqskit/sqskit/sqsfake"
)

// BenchmarkRoundTrip sends, receives and deletes messages in batches of ten
// on sqsfake in process, on sqsfake over HTTP with the real SDK client, and
// on the fauxqs emulator with the same client, in the same run, at 0 ms and
// 10 ms added per call. It reports messages per second and allocations per
// message (one op is one message).
func BenchmarkRoundTrip(b *testing.B) {
	for _, latency := range fauxqs.Latencies() {
		for _, name := range fauxqs.BackendNames() {
			b.Run(name+"/"+fauxqs.LatencyName(latency), func(b *testing.B) {
				benchRoundTrip(b, fauxqs.OpenBackend(b, name, latency).API)
			})
		}
	}
}

func benchRoundTrip(b *testing.B, api sqsfake.API) {
	ctx := context.Background()
	q, err := api.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("bench-" + strconv.FormatInt(time.Now().UnixNano(), 36))})
	if err != nil {
		b.Fatal(err)
	}
	entries := make([]types.SendMessageBatchRequestEntry, 10)
	for i := range entries {
		entries[i] = types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(`{"order":42,"items":["a","b"]}`)}
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for done := 0; done < b.N; {
		if _, err := api.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: q.QueueUrl, Entries: entries}); err != nil {
			b.Fatal(err)
		}
		for got := 0; got < 10; {
			out, err := api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10})
			if err != nil {
				b.Fatal(err)
			}
			if len(out.Messages) == 0 {
				continue
			}
			del := make([]types.DeleteMessageBatchRequestEntry, len(out.Messages))
			for i, m := range out.Messages {
				del[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle}
			}
			if _, err := api.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: q.QueueUrl, Entries: del}); err != nil {
				b.Fatal(err)
			}
			got += len(out.Messages)
		}
		done += 10
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
}
