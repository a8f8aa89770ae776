package s3payload_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/fifo"
	"github.com/sqskit/sqskit/replay"
	"github.com/sqskit/sqskit/s3payload"
	"github.com/sqskit/sqskit/sqsfake"
)

// TestReplayMovedSizeAttribute: a pointer with nine attributes of its
// producer's (ten with the size) has no room for the replayer's
// metadata, and replay moves one attribute into it: the size attribute
// itself when the others' names sort before it. The Receiver finds it
// there and still resolves the payload.
func TestReplayMovedSizeAttribute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s3api := newS3(t, nil)
		srv := sqsfake.New()
		sqsapi := srv.Client()
		dlq := createQueue(t, sqsapi, "orders-dlq", nil)
		operator := createQueue(t, sqsapi, "operator", nil)
		main := createQueue(t, sqsapi, "orders", nil)
		attrs := map[string]sqstypes.MessageAttributeValue{}
		for i := range 9 {
			attrs[fmt.Sprintf("A%d", i)] = sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("v")}
		}
		body := payload(300_000, 9)
		// As if SQS had redriven it: the pointer is in the DLQ.
		if _, err := newSender(t, s3api, sqsapi, dlq).Send(ctx, fifo.Message{Body: body, Attributes: attrs}); err != nil {
			t.Fatal(err)
		}
		var sent []sqstypes.SendMessageBatchRequestEntry
		srv.Inject(sqsfake.Fault{Op: "SendMessageBatch", Match: func(_ string, in any) bool {
			sent = append(sent, in.(*sqs.SendMessageBatchInput).Entries...)
			return false
		}})
		rp, err := replay.New(sqsapi, dlq, operator, func(o *replay.Options) { o.Target = main; o.Policy.Backoff = backoff.Constant{} })
		if err != nil {
			t.Fatal(err)
		}
		if rep, err := rp.Drain(ctx); err != nil || rep.Replayed != 1 {
			t.Fatalf("expect one replayed, got %+v, %v", rep, err)
		}
		if len(sent) != 1 {
			t.Fatalf("expect one send, got %d", len(sent))
		}
		if _, ok := sent[0].MessageAttributes[s3payload.SizeAttribute]; ok {
			t.Skip("replay kept the size attribute in place; nothing to prove")
		}
		recv, err := s3payload.NewReceiver(s3api, []string{"payloads"})
		if err != nil {
			t.Fatal(err)
		}
		var got seen
		drain(t, sqsapi, main, recv, got.handle)
		if len(got.bodies) != 1 || got.bodies[0] != body {
			t.Errorf("expect the payload resolved from the moved attribute, got %d bodies", len(got.bodies))
		}
	})
}
