package replay_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/internal/fauxqs"
	"github.com/sqskit/sqskit/replay"
)

// TestEmulatorEndToEnd runs a replay pass over HTTP against the fauxqs
// emulator: dead-lettered messages go back to the main queue with the
// counter and provenance, and one with spent attempts to the operator queue.
func TestEmulatorEndToEnd(t *testing.T) {
	emu := fauxqs.StartT(t)
	api := emu.Client()
	ctx := context.Background()
	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)
	queue := func(name string) string {
		out, err := api.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name + "-" + suffix)})
		if err != nil {
			t.Fatal(err)
		}
		return *out.QueueUrl
	}
	dlq, main, operator := queue("dlq"), queue("main"), queue("operator")
	for i := range 25 {
		in := &sqs.SendMessageInput{QueueUrl: aws.String(dlq), MessageBody: aws.String(fmt.Sprintf("m%02d", i)),
			MessageAttributes: map[string]types.MessageAttributeValue{"bin": {DataType: aws.String("Binary"), BinaryValue: []byte{byte(i), 0xff}}}}
		if i == 24 {
			in.MessageAttributes[replay.DefaultCounterAttribute] = types.MessageAttributeValue{DataType: aws.String("Number"), StringValue: aws.String("3")}
		}
		if _, err := api.SendMessage(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	r, err := replay.New(api, dlq, operator, func(o *replay.Options) {
		o.Target = main
		o.Policy = replay.Policy{MaxAttempts: 3, Backoff: backoff.Constant{}}
	})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := r.Drain(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Replayed != 24 || rep.Escalated != 1 || rep.Failed != 0 {
		t.Fatalf("expect 24 replayed and 1 escalated, got %+v", rep)
	}
	got := 0
	for got < 24 {
		out, err := api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(main), MaxNumberOfMessages: 10, WaitTimeSeconds: 1, MessageAttributeNames: []string{"All"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			t.Fatalf("expect 24 messages on main, got %d", got)
		}
		for _, m := range out.Messages {
			if n := aws.ToString(m.MessageAttributes[replay.DefaultCounterAttribute].StringValue); n != "1" {
				t.Errorf("%s: expect counter 1, got %q", *m.Body, n)
			}
			if b := m.MessageAttributes["bin"].BinaryValue; len(b) != 2 || b[1] != 0xff {
				t.Errorf("%s: expect the binary attribute intact, got %v", *m.Body, b)
			}
			if _, ok := m.MessageAttributes[replay.MetadataAttribute]; !ok {
				t.Errorf("%s: expect provenance", *m.Body)
			}
		}
		got += len(out.Messages)
	}
	out, err := api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(operator), WaitTimeSeconds: 1, MessageAttributeNames: []string{"All"}})
	if err != nil || len(out.Messages) != 1 || metadataOf(t, out.Messages[0]).Reason != replay.AttemptsExhausted {
		t.Fatalf("expect m24 escalated as attempts exhausted, got %v, %v", out, err)
	}
}
