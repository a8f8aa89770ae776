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
	"github.com/sqskit/sqskit/internal/telemetry/telemetrytest"
	"github.com/sqskit/sqskit/replay"
)

// BenchmarkReplay drains b.N dead-lettered messages back to their queue (one
// op is one message), on sqsfake and on the fauxqs emulator, with 0 ms and
// 10 ms added to every call, in one run:
//
//   - sqskit-replayer: the Replayer's Drain, defaults but for the policy;
//   - one-batch-pipeline: receive ten, send them in one batch, delete them
//     in one batch, one batch at a time, as a careful hand-written loop
//     does;
//   - sample-style-loop: receive one, send it, delete it, as the AWS sample
//     does.
//
// It reports messages per second (timed to the last message moved: Drain's
// closing empty poll is not throughput) and API calls per message.
func BenchmarkReplay(b *testing.B) {
	for _, name := range fauxqs.BackendNames() {
		for _, latency := range fauxqs.Latencies() {
			b.Run(name+"/"+fauxqs.LatencyName(latency), func(b *testing.B) {
				be := fauxqs.OpenBackend(b, name, latency)
				b.Run("sqskit-replayer", func(b *testing.B) { benchReplayer(b, be) })
				b.Run("sqskit-replayer+telemetry", func(b *testing.B) {
					benchReplayer(b, be, func(o *replay.Options) {
						o.TracerProvider, o.MeterProvider, o.Propagator = &telemetrytest.Tracer{}, &telemetrytest.Meter{}, telemetrytest.Propagator{}
					})
				})
				b.Run("one-batch-pipeline", func(b *testing.B) { benchOneBatch(b, be) })
				b.Run("sample-style-loop", func(b *testing.B) { benchSampleLoop(b, be) })
			})
		}
	}
}

func report(b *testing.B, be fauxqs.Backend, elapsed time.Duration) {
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
	b.ReportMetric(float64(be.Calls())/float64(b.N), "calls/msg")
}

func benchReplayer(b *testing.B, be fauxqs.Backend, fns ...func(*replay.Options)) {
	main, operator, dlq := be.Queue(b, 0), be.Queue(b, 0), be.Queue(b, b.N)
	var last atomic.Int64
	r, err := replay.New(be.API, dlq, operator, append(fns, func(o *replay.Options) {
		o.Target = main
		o.Policy = replay.Policy{MaxAttempts: 3, Backoff: backoff.Constant{}}
		o.Hooks.Replayed = func(context.Context, *types.Message, replay.Decision, string) { last.Store(time.Now().UnixNano()) }
	})...)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	rep, err := r.Drain(context.Background())
	b.StopTimer()
	if err != nil || rep.Replayed != b.N {
		b.Fatalf("expect %d replayed, got %+v, %v", b.N, rep, err)
	}
	report(b, be, time.Unix(0, last.Load()).Sub(start))
}

// benchOneBatch is the reference pipeline: one batch of ten at a time,
// receive, send, delete.
func benchOneBatch(b *testing.B, be fauxqs.Backend) {
	main, dlq := be.Queue(b, 0), be.Queue(b, b.N)
	api, ctx := be.API, context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for done := 0; done < b.N; {
		out, err := api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(dlq), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
			MessageAttributeNames: []string{"All"}})
		if err != nil {
			b.Fatal(err)
		}
		if len(out.Messages) == 0 {
			continue
		}
		sends := make([]types.SendMessageBatchRequestEntry, len(out.Messages))
		deletes := make([]types.DeleteMessageBatchRequestEntry, len(out.Messages))
		for i, m := range out.Messages {
			sends[i] = types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: m.Body, MessageAttributes: counted(m)}
			deletes[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle}
		}
		sent, err := api.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(main), Entries: sends})
		if err != nil || len(sent.Failed) > 0 {
			b.Fatalf("send: %v %v", err, sent)
		}
		if _, err := api.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(dlq), Entries: deletes}); err != nil {
			b.Fatal(err)
		}
		done += len(out.Messages)
	}
	b.StopTimer()
	report(b, be, time.Since(start))
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
			if _, err := api.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(main), MessageBody: m.Body, MessageAttributes: counted(m)}); err != nil {
				b.Fatal(err)
			}
			if _, err := api.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(dlq), ReceiptHandle: m.ReceiptHandle}); err != nil {
				b.Fatal(err)
			}
			done++
		}
	}
	b.StopTimer()
	report(b, be, time.Since(start))
}

// counted returns m's attributes with the sample's counter incremented.
func counted(m types.Message) map[string]types.MessageAttributeValue {
	n := 1
	if v, ok := m.MessageAttributes[replay.DefaultCounterAttribute]; ok {
		n, _ = strconv.Atoi(aws.ToString(v.StringValue))
		n++
	}
	attrs := map[string]types.MessageAttributeValue{}
	for k, v := range m.MessageAttributes {
		attrs[k] = types.MessageAttributeValue{DataType: v.DataType, StringValue: v.StringValue, BinaryValue: v.BinaryValue}
	}
	attrs[replay.DefaultCounterAttribute] = types.MessageAttributeValue{DataType: aws.String("Number"), StringValue: aws.String(strconv.Itoa(n))}
	return attrs
}
