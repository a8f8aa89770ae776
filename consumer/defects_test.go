package consumer

// Regression tests for the defects of issue 10, one section per defect.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/sqsfake"
)

// Defect 6: on FIFO queues every failure of a group's head released the
// messages received with it, costing each a receive; behind a poison
// message they reached maxReceiveCount unhandled and were dead-lettered
// with it.
func TestDefectFIFOGroupMatesSurvivePoisonHead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sqsfake.New()
		client := srv.Client()
		ctx := context.Background()
		dlq, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("jobs-dlq.fifo"), Attributes: map[string]string{"FifoQueue": "true"}})
		if err != nil {
			t.Fatal(err)
		}
		arn, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: dlq.QueueUrl, AttributeNames: []types.QueueAttributeName{"QueueArn"}})
		if err != nil {
			t.Fatal(err)
		}
		q, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("jobs.fifo"), Attributes: map[string]string{
			"FifoQueue": "true", "ContentBasedDeduplication": "true",
			"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":3}`, arn.Attributes["QueueArn"]),
		}})
		if err != nil {
			t.Fatal(err)
		}
		f := &qfix{srv: srv, client: client, url: *q.QueueUrl}
		f.send(t, "g", "poison", "m1", "m2", "m3", "m4", "m5")
		f.send(t, "h", "h1", "h2")
		var mu sync.Mutex
		var handled []string
		c := newConsumer(t, f, func(_ context.Context, m *handler.Message) error {
			if m.Body == "poison" {
				return errors.New("cannot handle")
			}
			mu.Lock()
			handled = append(handled, m.Body)
			mu.Unlock()
			return nil
		})
		stop := started(t, c)
		until(t, "every good message handled", func() bool { mu.Lock(); defer mu.Unlock(); return len(handled) == 7 })
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: dlq.QueueUrl, MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		var dead []string
		for _, m := range out.Messages {
			dead = append(dead, aws.ToString(m.Body))
		}
		if !slices.Equal(dead, []string{"poison"}) {
			t.Fatalf("expect only the poison message dead-lettered, got %v", dead)
		}
		var g []string
		for _, b := range handled {
			if b[0] == 'm' {
				g = append(g, b)
			}
		}
		if !slices.Equal(g, []string{"m1", "m2", "m3", "m4", "m5"}) {
			t.Fatalf("expect the group's messages handled once each, in order, got %v", g)
		}
	})
}
