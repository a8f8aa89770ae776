package consumer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqskit/sqskit/consumer"
	"github.com/sqskit/sqskit/sqsfake"
)

// A Consumer handles every message of a queue until its ctx ends; here an
// in-memory queue from sqsfake, stopped once three messages are deleted.
func ExampleNew() {
	client := sqsfake.New().Client()
	ctx := context.Background()
	q, _ := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders")})
	for _, body := range []string{"apples", "pears", "plums"} {
		_, _ = client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String(body)})
	}

	var mu sync.Mutex
	var handled []string
	runCtx, stop := context.WithCancel(ctx)
	c, err := consumer.New(client, *q.QueueUrl, func(_ context.Context, m *consumer.Message) error {
		mu.Lock()
		defer mu.Unlock()
		handled = append(handled, m.Body)
		return nil
	}, func(o *consumer.Options) {
		o.Concurrency = 4
		o.Hooks.Deleted = func(*consumer.Message) {
			mu.Lock()
			defer mu.Unlock()
			if len(handled) == 3 {
				stop() // a service would run until SIGTERM
			}
		}
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := c.Run(runCtx); err != nil {
		fmt.Println(err)
	}
	slices.Sort(handled)
	fmt.Println(handled, c.Stats().Deleted)
	// Output: [apples pears plums] 3
}

// A Lambda handler serves an SQS event source mapping and an EventBridge
// Pipes target alike: Pipes passes the records as a bare JSON array.
func ExampleLambda_Handle() {
	l, err := consumer.NewLambda(func(_ context.Context, m *consumer.Message) error {
		if m.Body == "bad" {
			return fmt.Errorf("cannot handle %q", m.Body)
		}
		return nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	pipes := []byte(`[{"messageId":"m1","body":"good"},{"messageId":"m2","body":"bad"}]`)
	out, err := lambda.NewHandler(l.Handle).Invoke(context.Background(), pipes)
	if err != nil {
		fmt.Println(err)
		return
	}
	var resp struct {
		BatchItemFailures []struct{ ItemIdentifier string } `json:"batchItemFailures"`
	}
	_ = json.Unmarshal(out, &resp)
	fmt.Println(resp.BatchItemFailures)
	// Output: [{m2}]
}
