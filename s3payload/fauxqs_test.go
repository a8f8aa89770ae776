package s3payload_test

import (
	"context"
	"net/url"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/consumer"
	"github.com/sqskit/sqskit/fifo"
	"github.com/sqskit/sqskit/internal/fauxqs"
	"github.com/sqskit/sqskit/replay"
	"github.com/sqskit/sqskit/s3payload"
)

// TestEmulatorEndToEnd runs a 5 MiB body through the fauxqs emulator's
// S3, SQS and SNS: send → consume, SNS fan-out to a raw and a wrapped
// subscription, and DLQ → replay → consume, each byte for byte.
func TestEmulatorEndToEnd(t *testing.T) {
	emu := fauxqs.StartT(t)
	ctx := context.Background()
	sqsapi := emu.Client()
	s3api := s3Client(emu.Endpoint, nil)
	if _, err := s3api.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("payloads")}); err != nil {
		t.Fatal(err)
	}
	body := payload(5<<20, 11)
	recv := func(t *testing.T, keep bool) *s3payload.Receiver {
		r, err := s3payload.NewReceiver(s3api, []string{"payloads"}, func(o *s3payload.ReceiverOptions) { o.KeepObjects = keep })
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	objects := func(t *testing.T) int { return len(keys(t, s3api, "payloads")) }

	t.Run("send-consume", func(t *testing.T) {
		q := createQueue(t, sqsapi, "e2e-orders", nil)
		if _, err := newSender(t, s3api, sqsapi, q).Send(ctx, fifo.Message{Body: body}); err != nil {
			t.Fatal(err)
		}
		var got seen
		drain(t, sqsapi, q, recv(t, false), got.handle)
		if len(got.bodies) != 1 || got.bodies[0] != body || objects(t) != 0 {
			t.Errorf("expect the payload byte for byte and no object left, got %d bodies, %d objects", len(got.bodies), objects(t))
		}
	})

	t.Run("sns-fan-out", func(t *testing.T) {
		topic := emu.SNS(t, url.Values{"Action": {"CreateTopic"}, "Name": {"e2e-orders"}}, "TopicArn")
		var queues []string
		for _, raw := range []bool{true, false} {
			q := createQueue(t, sqsapi, "e2e-fan-"+strconv.FormatBool(raw), nil)
			arn, err := sqsapi.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &q, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
			if err != nil {
				t.Fatal(err)
			}
			form := url.Values{"Action": {"Subscribe"}, "TopicArn": {topic}, "Protocol": {"sqs"}, "Endpoint": {arn.Attributes["QueueArn"]}}
			if raw {
				form.Set("Attributes.entry.1.key", "RawMessageDelivery")
				form.Set("Attributes.entry.1.value", "true")
			}
			emu.SNS(t, form, "SubscriptionArn")
			queues = append(queues, q)
		}
		// The producer offloads, then publishes the pointer with its size
		// attribute, as the SNS Extended Client does.
		m, p, err := newSender(t, s3api, sqsapi, queues[0]).Offload(ctx, fifo.Message{Body: body})
		if err != nil || p == nil {
			t.Fatalf("offload: %v, %v", p, err)
		}
		size := m.Attributes[s3payload.SizeAttribute]
		emu.SNS(t, url.Values{"Action": {"Publish"}, "TopicArn": {topic}, "Message": {m.Body},
			"MessageAttributes.entry.1.Name":              {s3payload.SizeAttribute},
			"MessageAttributes.entry.1.Value.DataType":    {"Number"},
			"MessageAttributes.entry.1.Value.StringValue": {aws.ToString(size.StringValue)},
		}, "MessageId")
		for i, q := range queues {
			var got seen
			drain(t, sqsapi, q, recv(t, true), got.handle)
			if len(got.bodies) != 1 || got.bodies[0] != body {
				t.Errorf("subscription %d (raw %v): expect the payload byte for byte, got %d bodies", i, i == 0, len(got.bodies))
			}
		}
		if objects(t) != 1 {
			t.Errorf("expect the fan-out object kept, got %d", objects(t))
		}
		if _, err := s3api.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(p.Bucket), Key: aws.String(p.Key)}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("dlq-replay-consume", func(t *testing.T) {
		dlq := createQueue(t, sqsapi, "e2e-dlq", nil)
		operator := createQueue(t, sqsapi, "e2e-operator", nil)
		arn, err := sqsapi.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &dlq, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
		if err != nil {
			t.Fatal(err)
		}
		q := createQueue(t, sqsapi, "e2e-main", map[string]string{
			"RedrivePolicy": `{"deadLetterTargetArn":"` + arn.Attributes["QueueArn"] + `","maxReceiveCount":"1"}`,
		})
		if _, err := newSender(t, s3api, sqsapi, q).Send(ctx, fifo.Message{Body: body}); err != nil {
			t.Fatal(err)
		}
		var got seen
		h, _ := got.failFirst()
		r := recv(t, false)
		drain(t, sqsapi, q, r, h, func(o *consumer.Options) { o.OnFailure = consumer.ReleaseNow })
		rp, err := replay.New(sqsapi, dlq, operator, func(o *replay.Options) {
			o.Target = q
			o.Policy.Backoff = backoff.Constant{}
		})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := rp.Drain(ctx)
		if err != nil || rep.Replayed != 1 {
			t.Fatalf("expect one replayed, got %+v, %v", rep, err)
		}
		if objects(t) != 1 {
			t.Errorf("expect the object kept through the replay, got %d", objects(t))
		}
		drain(t, sqsapi, q, r, h)
		if len(got.bodies) != 1 || got.bodies[0] != body || objects(t) != 0 {
			t.Errorf("expect the payload byte for byte after the replay and no object left, got %d bodies, %d objects", len(got.bodies), objects(t))
		}
	})
}
