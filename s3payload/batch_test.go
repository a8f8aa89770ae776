package s3payload_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqskit/sqskit/consumer"
	"github.com/sqskit/sqskit/fifo"
	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/s3payload"
	"github.com/sqskit/sqskit/sqsfake"
)

// TestBatchMiddleware: with consumer.NewBatch, offloaded and inline
// messages reach the BatchHandler with their bodies, a forged pointer is
// parked with its reason without reaching it, and the objects go after
// the deletes.
func TestBatchMiddleware(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s3api := newS3(t, nil)
		sqsapi := sqsfake.New().Client()
		q := createQueue(t, sqsapi, "orders", nil)
		parking := createQueue(t, sqsapi, "operator", nil)
		bodies := []string{payload(300_000, 1), payload(300_000, 2), "small"}
		for _, r := range newSender(t, s3api, sqsapi, q).SendBatch(ctx, []fifo.Message{{Body: bodies[0]}, {Body: bodies[1]}, {Body: bodies[2]}}) {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
		forged := s3payload.Pointer{Bucket: "secrets", Key: "k"}.Body()
		if _, err := sqsapi.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &q, MessageBody: &forged, MessageAttributes: sizeAttr(s3payload.SizeAttribute, "5")}); err != nil {
			t.Fatal(err)
		}
		recv, err := s3payload.NewReceiver(s3api, []string{"payloads"})
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var got []string
		parked := map[string]int{}
		c, err := consumer.NewBatch(sqsapi, q, func(_ context.Context, msgs []*handler.Message) []error {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range msgs {
				got = append(got, m.Body)
			}
			return make([]error, len(msgs))
		}, func(o *consumer.Options) {
			o.BatchMiddleware = []handler.BatchMiddleware{recv.BatchMiddleware()}
			o.Hooks = recv.Hooks(consumer.Hooks{Parked: func(_ context.Context, _ *handler.Message, reason string) { parked[reason]++ }})
			o.ParkingQueue = parking
			o.WaitTime = time.Second
		})
		if err != nil {
			t.Fatal(err)
		}
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- recv.Run(runCtx) }()
		if err := c.Drain(ctx); err != nil {
			t.Fatal(err)
		}
		stop()
		<-done
		if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(bodies))) || parked[s3payload.ReasonBucket] != 1 {
			t.Errorf("expect the three bodies and one parked forgery, got %d bodies, parked %v", len(got), parked)
		}
		if ks := keys(t, s3api, "payloads"); len(ks) != 0 {
			t.Errorf("expect the objects deleted, got %v", ks)
		}
	})
}
