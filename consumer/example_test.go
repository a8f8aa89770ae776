package consumer_test

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqskit/sqskit/consumer"
	"github.com/sqskit/sqskit/handler"
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
	c, err := consumer.New(client, *q.QueueUrl, func(_ context.Context, m *handler.Message) error {
		mu.Lock()
		defer mu.Unlock()
		handled = append(handled, m.Body)
		return nil
	}, func(o *consumer.Options) {
		o.Concurrency = 4
		o.Hooks.Deleted = func(context.Context, *handler.Message) {
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
