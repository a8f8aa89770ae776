// Command fifo-sender sends order events to a FIFO queue with sqskit's fifo
// package and reads them back: per-customer order, a duplicate removed by a
// deterministic deduplication id, and a batch sent in few calls.
//
// It runs in memory by default; set SQSKIT_ENDPOINT (an emulator) or
// SQSKIT_AWS=1 (real AWS) to use a real queue of its own
// (sqskit-example-*-orders.fifo), which it deletes at the end. Errors go to
// standard error.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/examples/internal/backend"
	"github.com/sqskit/sqskit/fifo"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, out io.Writer) (err error) {
	api, where, err := backend.Open(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "backend:", where)
	queues := backend.NewQueues(api, backend.Endpoint(), "sqskit-example")
	defer func() { err = errors.Join(err, queues.DeleteAll(ctx)) }()
	url, err := queues.Create(ctx, "orders.fifo", map[string]string{"FifoQueue": "true"})
	if err != nil {
		return err
	}
	sender, err := fifo.NewSender(api, url, func(o *fifo.SenderOptions) {
		o.Dedup = fifo.KeyDedup("orders")                                  // an event id makes a resend harmless
		o.GroupID = func(m *fifo.Message) string { return m.DedupKey[:5] } // customer from the event id
	})
	if err != nil {
		return err
	}

	events := []fifo.Message{
		{Body: "alice: order created", DedupKey: "alice-1"},
		{Body: "bobby: order created", DedupKey: "bobby-1"},
		{Body: "alice: order paid", DedupKey: "alice-2"},
		{Body: "bobby: order cancelled", DedupKey: "bobby-2"},
		{Body: "alice: order shipped", DedupKey: "alice-3"},
		{Body: "alice: order paid", DedupKey: "alice-2"}, // a producer retried after a crash
	}
	for i, r := range sender.SendBatch(ctx, events) {
		if r.Err != nil {
			return fmt.Errorf("event %d: %w", i, r.Err)
		}
	}
	fmt.Fprintf(out, "sent %d events (one is a duplicate)\n", len(events))

	received := 0
	for received < len(events)-1 {
		res, err := api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameMessageGroupId},
		})
		if err != nil {
			return err
		}
		if len(res.Messages) == 0 {
			break
		}
		for _, m := range res.Messages {
			fmt.Fprintf(out, "group %s: %s\n", m.Attributes["MessageGroupId"], *m.Body)
			if _, err := api.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
				return err
			}
			received++
		}
	}
	fmt.Fprintf(out, "received %d events, each once, in order per customer\n", received)
	return nil
}
