package fifo_test

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/fifo"
	"github.com/sqskit/sqskit/sqsfake"
)

// Messages keep their order per group; the same key sent twice within five
// minutes is delivered once.
func Example() {
	ctx := context.Background()
	client := sqsfake.New().Client()
	q, _ := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders.fifo"), Attributes: map[string]string{"FifoQueue": "true"}})

	sender, _ := fifo.NewSender(client, *q.QueueUrl, func(o *fifo.SenderOptions) { o.Dedup = fifo.KeyDedup("orders") })
	results := sender.SendBatch(ctx, []fifo.Message{
		{Body: "alice: created", GroupID: "alice", DedupKey: "a-1"},
		{Body: "bob: created", GroupID: "bob", DedupKey: "b-1"},
		{Body: "alice: paid", GroupID: "alice", DedupKey: "a-2"},
		{Body: "alice: paid", GroupID: "alice", DedupKey: "a-2"}, // a retry from elsewhere
	})
	fmt.Println("same message id for the duplicate:", results[2].MessageID == results[3].MessageID)

	out, _ := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{"MessageGroupId"}})
	for _, m := range out.Messages {
		fmt.Println(*m.Body)
	}
	// Output:
	// same message id for the duplicate: true
	// alice: created
	// alice: paid
	// bob: created
}

// On a standard queue a retry after a lost acknowledgement leaves a second
// copy: Unconfirmed says how many requests may have done so.
func ExampleResult_unconfirmed() {
	ctx := context.Background()
	srv := sqsfake.New()
	client := srv.Client()
	q, _ := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("events")})
	sender, _ := fifo.NewSender(client, *q.QueueUrl, func(o *fifo.SenderOptions) {
		o.SendBackoff = backoff.Constant{D: time.Millisecond}
	})

	srv.Inject(sqsfake.Fault{Op: "SendMessage", Times: 1, AfterApply: true}) // stored, then the answer is lost
	res, err := sender.Send(ctx, fifo.Message{Body: "payment received"})
	fmt.Println("error:", err, "attempts:", res.Attempts, "unconfirmed:", res.Unconfirmed)

	out, _ := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10})
	fmt.Println("copies on the queue:", len(out.Messages))
	// Output:
	// error: <nil> attempts: 2 unconfirmed: 1
	// copies on the queue: 2
}
