package s3payload_test

import (
	"context"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/consumer"
	"github.com/sqskit/sqskit/fifo"
	"github.com/sqskit/sqskit/replay"
	"github.com/sqskit/sqskit/s3payload"
	"github.com/sqskit/sqskit/sqsfake"
)

// TestDLQReplayConsume: a 5 MiB payload whose handler fails goes to the
// DLQ by SQS's redrive; package replay moves it back to the main queue as
// the same pointer (its object untouched: no S3 call, same key), and the
// consumer then gets it byte for byte and deletes the object.
func TestDLQReplayConsume(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s3api := newFaultyS3(newS3(t, nil), 0)
		srv := sqsfake.New()
		sqsapi := srv.Client()
		dlq := createQueue(t, sqsapi, "orders-dlq", nil)
		operator := createQueue(t, sqsapi, "operator", nil)
		arn, err := sqsapi.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &dlq, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
		if err != nil {
			t.Fatal(err)
		}
		main := createQueue(t, sqsapi, "orders", map[string]string{
			"RedrivePolicy": `{"deadLetterTargetArn":"` + arn.Attributes["QueueArn"] + `","maxReceiveCount":"1"}`,
		})
		body := payload(5<<20, 7)
		rs := newSender(t, s3api, sqsapi, main).SendBatch(ctx, []fifo.Message{{Body: body}})
		r, err := rs[0], rs[0].Err
		if err != nil {
			t.Fatal(err)
		}
		sent := r.Pointer.Body()
		recv, err := s3payload.NewReceiver(s3api, []string{"payloads"})
		if err != nil {
			t.Fatal(err)
		}

		// The first handling fails; the next receive moves it to the DLQ.
		var got seen
		h, calls := got.failFirst()
		drain(t, sqsapi, main, recv, h, func(o *consumer.Options) { o.OnFailure = consumer.ReleaseNow })
		if calls.Load() != 1 || len(keys(t, s3api, "payloads")) != 1 {
			t.Fatalf("expect the message in the DLQ and its object kept, got %d handled, %v", len(got.bodies), keys(t, s3api, "payloads"))
		}

		before := s3api.Calls("PutObject") + s3api.Calls("GetObject") + s3api.Calls("DeleteObjects")
		rp, err := replay.New(sqsapi, dlq, operator, func(o *replay.Options) { o.Target = main })
		if err != nil {
			t.Fatal(err)
		}
		// Record what the replayer sends (a fault that never applies).
		var moved []sqstypes.SendMessageBatchRequestEntry
		srv.Inject(sqsfake.Fault{Op: "SendMessageBatch", Match: func(_ string, in any) bool {
			moved = append(moved, in.(*sqs.SendMessageBatchInput).Entries...)
			return false
		}})
		rep, err := rp.Drain(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("replay: %+v", rep)
		if len(moved) != 1 || aws.ToString(moved[0].MessageBody) != sent {
			t.Fatalf("expect replay to move the pointer %s, got %d sends", sent, len(moved))
		}
		if v := moved[0].MessageAttributes[s3payload.SizeAttribute]; aws.ToString(v.StringValue) != strconv.Itoa(len(body)) {
			t.Errorf("expect the size attribute kept, got %v", moved[0].MessageAttributes)
		}
		if after := s3api.Calls("PutObject") + s3api.Calls("GetObject") + s3api.Calls("DeleteObjects"); after != before {
			t.Errorf("expect no S3 call during the replay, got %d", after-before)
		}
		if ks := keys(t, s3api, "payloads"); len(ks) != 1 || ks[0] != r.Pointer.Key {
			t.Errorf("expect the object replay did not create kept, got %v", ks)
		}

		time.Sleep(5 * time.Minute) // the replay's delay
		drain(t, sqsapi, main, recv, h)
		if len(got.bodies) != 1 || got.bodies[0] != body {
			t.Fatalf("expect the 5 MiB payload byte for byte after the replay, got %d bodies", len(got.bodies))
		}
		if ks := keys(t, s3api, "payloads"); len(ks) != 0 {
			t.Errorf("expect the object deleted after the final consume, got %v", ks)
		}
	})
}
