package replay_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/internal/fauxqs"
	"github.com/sqskit/sqskit/replay"
	"github.com/sqskit/sqskit/sqsfake"
)

type countingAPI struct {
	replay.API
	calls atomic.Int64
}

func (c *countingAPI) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, f ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	c.calls.Add(1)
	return c.API.ReceiveMessage(ctx, in, f...)
}

func (c *countingAPI) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, f ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	c.calls.Add(1)
	return c.API.SendMessageBatch(ctx, in, f...)
}

func (c *countingAPI) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, f ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	c.calls.Add(1)
	return c.API.DeleteMessageBatch(ctx, in, f...)
}

func (c *countingAPI) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, f ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	c.calls.Add(1)
	return c.API.ChangeMessageVisibilityBatch(ctx, in, f...)
}

// BenchmarkReplay drains b.N dead-lettered messages back to their queue (one
// op is one message): the Replayer beside a loop like the AWS sample's, which
// receives one message, sends it and deletes it, in the same run on
// sqsfake. It reports messages/s and API calls per replayed message.
func BenchmarkReplay(b *testing.B) {
	backends := []struct {
		name string
		api  func(*testing.B) sqsfake.API
	}{
		{"sqsfake", func(*testing.B) sqsfake.API { return sqsfake.New().Client() }},
		{"fauxqs", func(b *testing.B) sqsfake.API { return fauxqs.StartT(b).Client() }},
	}
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			base := be.api(b)
			b.Run("sqskit-replayer", func(b *testing.B) { benchReplayer(b, base) })
			b.Run("sample-style-loop", func(b *testing.B) { benchSampleLoop(b, base) })
		})
	}
}

func benchReplayer(b *testing.B, base sqsfake.API) {
	{
		dlq, main := benchQueues(b, base)
		api := &countingAPI{API: base}
		var last atomic.Int64 // when the last replay went: Drain's closing empty poll is not throughput
		r, err := replay.New(api, dlq, func(o *replay.Options) {
			o.Target, o.OperatorQueue = main, main
			o.Policy = replay.Policy{MaxAttempts: 3, Backoff: backoff.Constant{}}
			o.Hooks.Replayed = func(*types.Message, replay.Decision, string) { last.Store(time.Now().UnixNano()) }
		})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		rep, err := r.Drain(context.Background())
		elapsed := time.Unix(0, last.Load()).Sub(start)
		if err != nil || rep.Replayed != b.N {
			b.Fatalf("expect %d replayed, got %+v, %v", b.N, rep, err)
		}
		b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
		b.ReportMetric(float64(api.calls.Load())/float64(b.N), "calls/msg")
	}
}

func benchSampleLoop(b *testing.B, api sqsfake.API) {
	{
		dlq, main := benchQueues(b, api)
		ctx := context.Background()
		calls := 0
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		for done := 0; done < b.N; {
			out, err := api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(dlq), MessageAttributeNames: []string{"All"}})
			calls++
			if err != nil {
				b.Fatal(err)
			}
			for _, m := range out.Messages {
				n := 1
				if v, ok := m.MessageAttributes["sqs-dlq-replay-nb"]; ok {
					n, _ = strconv.Atoi(aws.ToString(v.StringValue))
					n++
				}
				attrs := m.MessageAttributes
				if attrs == nil {
					attrs = map[string]types.MessageAttributeValue{}
				}
				attrs["sqs-dlq-replay-nb"] = types.MessageAttributeValue{DataType: aws.String("Number"), StringValue: aws.String(strconv.Itoa(n))}
				if _, err := api.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(main), MessageBody: m.Body, MessageAttributes: attrs}); err != nil {
					b.Fatal(err)
				}
				if _, err := api.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(dlq), ReceiptHandle: m.ReceiptHandle}); err != nil {
					b.Fatal(err)
				}
				calls += 2
				done++
			}
		}
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
		b.ReportMetric(float64(calls)/float64(b.N), "calls/msg")
	}
}

func benchQueues(b *testing.B, api sqsfake.API) (string, string) {
	ctx := context.Background()
	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)
	mk := func(name string) string {
		out, err := api.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name + "-" + suffix)})
		if err != nil {
			b.Fatal(err)
		}
		return *out.QueueUrl
	}
	dlq, main := mk("dlq"), mk("main")
	for i := 0; i < b.N; i += 10 {
		var entries []types.SendMessageBatchRequestEntry
		for j := i; j < min(i+10, b.N); j++ {
			entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(j)), MessageBody: aws.String(`{"order":42}`)})
		}
		if _, err := api.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(dlq), Entries: entries}); err != nil {
			b.Fatal(err)
		}
	}
	return dlq, main
}
