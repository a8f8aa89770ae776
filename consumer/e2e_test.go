package consumer_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/consumer"
	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/internal/fauxqs"
)

// TestEmulatorEndToEnd runs the consumer over HTTP against the fauxqs
// emulator: 200 messages on a queue with a dead-letter queue; one poison
// message fails every time and is moved to the DLQ by the emulator's
// redrive; everything else is handled once and deleted.
func TestEmulatorEndToEnd(t *testing.T) {
	emu := fauxqs.StartT(t)
	api := emu.Client()
	ctx := context.Background()
	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)
	dlq, err := api.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("e2e-dlq-" + suffix)})
	if err != nil {
		t.Fatal(err)
	}
	dlqAttrs, err := api.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: dlq.QueueUrl, AttributeNames: []types.QueueAttributeName{"QueueArn"}})
	if err != nil {
		t.Fatal(err)
	}
	q, err := api.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("e2e-" + suffix), Attributes: map[string]string{
		"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":2}`, dlqAttrs.Attributes["QueueArn"]),
	}})
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	for i := 0; i < n; i += 10 {
		var entries []types.SendMessageBatchRequestEntry
		for j := i; j < i+10; j++ {
			body := strconv.Itoa(j)
			if j == 7 {
				body = "poison"
			}
			entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(j)), MessageBody: aws.String(body)})
		}
		if _, err := api.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: q.QueueUrl, Entries: entries}); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	seen := map[string]int{}
	c, err := consumer.New(api, *q.QueueUrl, func(_ context.Context, m *handler.Message) error {
		mu.Lock()
		defer mu.Unlock()
		seen[m.Body]++
		if m.Body == "poison" {
			return fmt.Errorf("cannot handle %s", m.Body)
		}
		return nil
	}, func(o *consumer.Options) {
		o.Concurrency = 16
		o.WaitTime = time.Second
		o.OnFailure = consumer.ReleaseNow
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(runCtx) }()
	deadline := time.Now().Add(30 * time.Second)
	for c.Stats().Deleted < n-1 || inDLQ(t, api, *dlq.QueueUrl) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("timed out: stats %+v", c.Stats())
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for i := range n {
		body := strconv.Itoa(i)
		if i == 7 {
			body = "poison"
			if seen[body] != 2 {
				t.Errorf("expect the poison message tried twice before redrive, got %d", seen[body])
			}
			continue
		}
		if seen[body] != 1 {
			t.Errorf("message %s: handled %d times", body, seen[body])
		}
	}
}

func inDLQ(t *testing.T, api *sqs.Client, url string) int {
	t.Helper()
	out, err := api.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{"ApproximateNumberOfMessages"}})
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(out.Attributes["ApproximateNumberOfMessages"])
	return n
}
