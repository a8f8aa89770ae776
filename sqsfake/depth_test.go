package sqsfake

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// BenchmarkReceiveDepth measures the store: one op receives ten messages,
// deletes them and sends ten more, on a queue that also holds depth other
// messages, visible ("stored") or in flight. It calls the Server's
// operations directly, without the SDK or JSON, so the store's own cost
// shows. The cost must not grow with the depth: 100,000 within 2× of 100.
// A manual clock moves one second per op, so FIFO deduplication ids leave
// their 5-minute window as they would at ten messages a second, whatever
// the depth: the depth under test is messages, not recent sends.
func BenchmarkReceiveDepth(b *testing.B) {
	for _, kind := range []string{"standard", "fifo"} {
		for _, mode := range []string{"stored", "inflight"} {
			for _, depth := range []int{100, 100_000} {
				b.Run(kind+"/"+mode+"/"+strconv.Itoa(depth), func(b *testing.B) {
					benchDepth(b, kind == "fifo", mode == "inflight", depth)
				})
			}
		}
	}
}

type depthBench struct {
	s    *Server
	url  *string
	fifo bool
	next int
}

func (d *depthBench) send(b *testing.B, n int) {
	ctx := context.Background()
	entries := make([]types.SendMessageBatchRequestEntry, n)
	for i := range entries {
		id := strconv.Itoa(d.next)
		d.next++
		entries[i] = types.SendMessageBatchRequestEntry{Id: aws.String("e" + strconv.Itoa(i)), MessageBody: aws.String(`{"order":` + id + `}`)}
		if d.fifo {
			entries[i].MessageGroupId, entries[i].MessageDeduplicationId = aws.String("g"+id), aws.String(id)
		}
	}
	out, err := d.s.sendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: d.url, Entries: entries})
	if err != nil || len(out.Failed) > 0 {
		b.Fatalf("send: %v %v", err, out)
	}
}

func (d *depthBench) receive(b *testing.B, visibility int32) []types.Message {
	out, err := d.s.receiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: d.url, MaxNumberOfMessages: 10, VisibilityTimeout: visibility})
	if err != nil {
		b.Fatal(err)
	}
	return out.Messages
}

func benchDepth(b *testing.B, fifo, inFlight bool, depth int) {
	ctx := context.Background()
	clock := NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := New(func(o *Options) { o.Clock = clock })
	name := "depth"
	attrs := map[string]string{}
	if fifo {
		name, attrs["FifoQueue"] = "depth.fifo", "true"
	}
	q, err := s.createQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		b.Fatal(err)
	}
	d := &depthBench{s: s, url: q.QueueUrl, fifo: fifo}
	for left := depth; left > 0; left -= 10 {
		d.send(b, min(10, left))
	}
	if inFlight {
		for got := 0; got < depth; {
			n := len(d.receive(b, 43200))
			if n == 0 {
				b.Fatalf("expect %d in flight, got %d", depth, got)
			}
			got += n
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		clock.Advance(time.Second)
		d.send(b, 10)
		msgs := d.receive(b, 0)
		if len(msgs) != 10 {
			b.Fatalf("expect 10 messages, got %d", len(msgs))
		}
		del := make([]types.DeleteMessageBatchRequestEntry, len(msgs))
		for i, m := range msgs {
			del[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle}
		}
		if out, err := s.deleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: d.url, Entries: del}); err != nil || len(out.Failed) > 0 {
			b.Fatalf("delete: %v %v", err, out)
		}
	}
}
