package service_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqskit/sqskit/consumer"
	"github.com/sqskit/sqskit/fifo"
	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/replay"
	"github.com/sqskit/sqskit/service"
	"github.com/sqskit/sqskit/sqsfake"
)

// Two consumers forward what they handle to a ledger queue through one
// Batcher, next to a replayer; Run stops them together, then flushes the
// Batcher. A service would stop on SIGTERM with
// signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt);
// here ctx ends once four messages are handled.
func ExampleRun() {
	client := sqsfake.New().Client()
	ctx, stop := context.WithCancel(context.Background())
	url := map[string]*string{}
	for _, name := range []string{"orders", "refunds", "orders-dlq", "operator", "ledger"} {
		q, _ := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
		url[name] = q.QueueUrl
	}
	for _, body := range []string{"order 1", "order 2"} {
		_, _ = client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: url["orders"], MessageBody: aws.String(body)})
	}
	for _, body := range []string{"refund 1", "refund 2"} {
		_, _ = client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: url["refunds"], MessageBody: aws.String(body)})
	}

	sender, _ := fifo.NewSender(client, *url["ledger"])
	ledger, _ := sender.NewBatcher()
	var handled atomic.Int32
	forward := func(hctx context.Context, m *handler.Message) error {
		_, err := ledger.Send(hctx, fifo.Message{Body: m.Body})
		if handled.Add(1) == 4 {
			stop()
		}
		return err
	}
	orders, _ := consumer.New(client, *url["orders"], forward)
	refunds, _ := consumer.New(client, *url["refunds"], forward)
	replayer, _ := replay.New(client, *url["orders-dlq"], *url["operator"], func(o *replay.Options) { o.Target = *url["orders"] })

	err := service.Run(ctx, service.Components{
		Runners: map[string]service.Runner{"orders": orders, "refunds": refunds, "replay": replayer},
		Closers: map[string]service.Closer{"ledger": ledger},
	})
	fmt.Println("Run:", err)

	out, _ := client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: url["ledger"], MaxNumberOfMessages: 10})
	var bodies []string
	for _, m := range out.Messages {
		bodies = append(bodies, *m.Body)
	}
	slices.Sort(bodies)
	fmt.Println("ledger:", bodies)
	// Output:
	// Run: <nil>
	// ledger: [order 1 order 2 refund 1 refund 2]
}
