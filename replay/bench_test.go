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
)

// BenchmarkReplay drains b.N dead-lettered messages back to their queue (one
// op is one message): the Replayer beside a loop like the AWS sample's, which
// receives one message, sends it and deletes it, in the same run on
// sqsfake. It reports messages/s and API calls per replayed message.
func BenchmarkReplay(b *testing.B) {
	for _, name := range fauxqs.BackendNames() {
		b.Run(name, func(b *testing.B) {
			be := fauxqs.OpenBackend(b, name, 0)
			b.Run("sqskit-replayer", func(b *testing.B) { benchReplayer(b, be) })
			b.Run("sample-style-loop", func(b *testing.B) { benchSampleLoop(b, be) })
		})
	}
}

func benchReplayer(b *testing.B, be fauxqs.Backend) {
	main, operator, dlq := be.Queue(b, 0), be.Queue(b, 0), be.Queue(b, b.N)
	var last atomic.Int64 // when the last replay went: Drain's closing empty poll is not throughput
	r, err := replay.New(be.API, dlq, operator, func(o *replay.Options) {
		o.Target = main
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
	b.ReportMetric(float64(be.Calls())/float64(b.N), "calls/msg")
}

// benchSampleLoop moves messages one at a time, as the AWS sample does:
// receive one, add one to its counter, send it, delete it.
func benchSampleLoop(b *testing.B, be fauxqs.Backend) {
	main, dlq := be.Queue(b, 0), be.Queue(b, b.N)
	api, ctx := be.API, context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for done := 0; done < b.N; {
		out, err := api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(dlq), MessageAttributeNames: []string{"All"}})
		if err != nil {
			b.Fatal(err)
		}
		for _, m := range out.Messages {
			n := 1
			if v, ok := m.MessageAttributes[replay.DefaultCounterAttribute]; ok {
				n, _ = strconv.Atoi(aws.ToString(v.StringValue))
				n++
			}
			attrs := m.MessageAttributes
			if attrs == nil {
				attrs = map[string]types.MessageAttributeValue{}
			}
			attrs[replay.DefaultCounterAttribute] = types.MessageAttributeValue{DataType: aws.String("Number"), StringValue: aws.String(strconv.Itoa(n))}
			if _, err := api.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(main), MessageBody: m.Body, MessageAttributes: attrs}); err != nil {
				b.Fatal(err)
			}
			if _, err := api.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(dlq), ReceiptHandle: m.ReceiptHandle}); err != nil {
				b.Fatal(err)
			}
			done++
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
	b.ReportMetric(float64(be.Calls())/float64(b.N), "calls/msg")
}
