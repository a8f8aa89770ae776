// Command orders-service is an orders worker as services have them: one
// queue fed by an SNS topic (without raw message delivery, so each body is
// an SNS notification) and by another producer sending plain JSON; two
// message types, each decoded into its own Go type; bad messages parked at
// once on an operator queue with their reason; duplicates suppressed.
//
// The pieces, all from package handler, on a consumer.Consumer:
//
//   - handler.Envelopes unwraps SNS notifications (and EventBridge events);
//   - handler.Idempotent, over a handler.MemoryStore (DynamoDB across
//     processes: the module github.com/sqskit/sqskit/idempotency/dynamodb),
//     runs each order id once;
//   - handler.NewRouter with handler.On routes "order.placed" and
//     "order.cancelled" (the "type" attribute, an SNS message attribute
//     here) to typed handlers;
//   - consumer.Options.ParkingQueue parks what can never succeed — a body
//     that does not decode, an unknown type, a malformed envelope — after
//     one receive, in package replay's metadata format.
//
// It runs in memory (sqsfake) by default; with SQSKIT_ENDPOINT (an
// emulator) or SQSKIT_AWS=1 (real AWS) on queues named
// sqskit-example-orders-*. It sends nine messages, handles them, prints
// what it did and what was parked, and deletes its queues.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/consumer"
	"github.com/sqskit/sqskit/examples/internal/backend"
	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/replay"
	"github.com/sqskit/sqskit/sqsfake"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// The message types and their payloads.
type placed struct {
	OrderID string `json:"order_id"`
	Amount  int    `json:"amount"`
}

type cancelled struct {
	OrderID string `json:"order_id"`
	Reason  string `json:"reason"`
}

// service is the business side: what the handlers did.
type service struct {
	mu   sync.Mutex
	done []string
}

func (s *service) record(format string, args ...any) {
	s.mu.Lock()
	s.done = append(s.done, fmt.Sprintf(format, args...))
	s.mu.Unlock()
}

func (s *service) place(ctx context.Context, o placed, m *handler.Message) error {
	via := "plain JSON"
	if env := handler.EnvelopeFrom(ctx); env != nil {
		via = "SNS topic " + env.TopicARN[strings.LastIndex(env.TopicARN, ":")+1:]
	}
	s.record("placed %s for %d (via %s)", o.OrderID, o.Amount, via)
	return nil
}

func (s *service) cancel(_ context.Context, c cancelled, _ *handler.Message) error {
	s.record("cancelled %s: %s", c.OrderID, c.Reason)
	return nil
}

// newConsumer builds the worker: envelopes, then idempotency, then the
// router, parking on parking. optFns (tests') run last.
func newConsumer(api consumer.API, queue, parking string, svc *service, store handler.Store, optFns ...func(*consumer.Options)) (*consumer.Consumer, error) {
	router, err := handler.NewRouter(handler.TypeAttribute("type"),
		handler.On("order.placed", svc.place),
		handler.On("order.cancelled", svc.cancel),
	)
	if err != nil {
		return nil, err
	}
	once, err := handler.Idempotent(store, func(o *handler.IdempotencyOptions) {
		o.Namespace = "orders"
		// The producer's own id for the event: the key duplicates share.
		o.Key = func(_ context.Context, m *handler.Message) string { return m.MessageAttributes["event-id"].StringValue }
	})
	if err != nil {
		return nil, err
	}
	return consumer.New(api, queue, router, append([]func(*consumer.Options){func(o *consumer.Options) {
		o.Middleware = []handler.Middleware{handler.Envelopes(), once}
		o.ParkingQueue = parking
		o.VisibilityTimeout = 5 * time.Second // a duplicate in progress waits at most this long
	}}, optFns...)...)
}

// snsNotification wraps a body as SNS does when it delivers to an SQS
// queue without raw message delivery (the JSON of
// https://docs.aws.amazon.com/sns/latest/dg/http-notification-json.html),
// standing in for a real topic in memory.
func snsNotification(topic, body string, attrs map[string]string) string {
	type attr struct{ Type, Value string }
	n := map[string]any{
		"Type": "Notification", "MessageId": "sns-" + attrs["event-id"], "TopicArn": topic, "Message": body,
		"Timestamp": "2026-11-26T12:00:00.000Z", "SignatureVersion": "1", "Signature": "c2ln",
	}
	ma := map[string]attr{}
	for k, v := range attrs {
		ma[k] = attr{"String", v}
	}
	n["MessageAttributes"] = ma
	b, _ := json.Marshal(n)
	return string(b)
}

// outgoing is one message the story sends.
type outgoing struct {
	body  string
	attrs map[string]string // String message attributes on the SQS message
}

func story(topic string) []outgoing {
	a := func(event, typ string) map[string]string { return map[string]string{"event-id": event, "type": typ} }
	return []outgoing{
		{snsNotification(topic, `{"order_id":"A-1","amount":120}`, a("e1", "order.placed")), nil},
		{`{"order_id":"B-2","amount":80}`, a("e2", "order.placed")},
		{snsNotification(topic, `{"order_id":"A-1","amount":120}`, a("e1", "order.placed")), nil}, // SNS delivered it twice
		{`{"order_id":"B-2","amount":80}`, a("e2", "order.placed")},                               // the producer retried
		{snsNotification(topic, `{"order_id":"A-1","reason":"customer"}`, a("e3", "order.cancelled")), nil},
		{`{"order_id":"C-3","amount":"lots"}`, a("e4", "order.placed")},                 // does not decode
		{`{"order_id":"D-4"}`, a("e5", "order.refunded")},                               // no route
		{`{"Type":"Notification","TopicArn":"` + topic + `"}`, a("e6", "order.placed")}, // no Message
		{`{"order_id":"E-5","amount":15}`, a("e7", "order.placed")},
	}
}

func run(ctx context.Context, out io.Writer) (err error) {
	endpoint := backend.Endpoint()
	var api *sqs.Client
	closeIdle := func() {}
	if endpoint == "" {
		api = sqsfake.New().Client()
	} else if api, closeIdle, err = backend.Client(ctx, endpoint); err != nil {
		return err
	}
	defer closeIdle()
	queues := backend.NewQueues(api, endpoint, "sqskit-example-orders")
	defer func() { err = errors.Join(err, queues.DeleteAll(ctx)) }()
	queue, parking, msgs, err := setUp(ctx, api, queues)
	if err != nil {
		return err
	}

	svc := &service{}
	c, err := newConsumer(api, queue, parking, svc, &handler.MemoryStore{})
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- c.Run(runCtx) }()
	// Done when every message is deleted: handled, a duplicate, or parked.
	for s := c.Stats(); int(s.Deleted+s.Parked) < len(msgs) && ctx.Err() == nil; s = c.Stats() {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-stopped; err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	s := c.Stats()
	slices.Sort(svc.done)
	for _, line := range svc.done {
		fmt.Fprintln(out, line)
	}
	fmt.Fprintf(out, "%d messages: %d handled, %d duplicates done without running, %d parked\n",
		len(msgs), len(svc.done), int(s.Deleted)-len(svc.done), s.Parked)
	return printParked(ctx, api, parking, out)
}

// setUp creates the queue and its parking queue and sends the story.
func setUp(ctx context.Context, api *sqs.Client, queues *backend.Queues) (queue, parking string, msgs []outgoing, err error) {
	if queue, err = queues.Create(ctx, "in", nil); err != nil {
		return "", "", nil, err
	}
	if parking, err = queues.Create(ctx, "parking", nil); err != nil {
		return "", "", nil, err
	}
	msgs = story("arn:aws:sns:us-east-1:123456789012:orders")
	for _, m := range msgs {
		in := &sqs.SendMessageInput{QueueUrl: aws.String(queue), MessageBody: aws.String(m.body), MessageAttributes: map[string]types.MessageAttributeValue{}}
		for k, v := range m.attrs {
			in.MessageAttributes[k] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
		}
		if _, err := api.SendMessage(ctx, in); err != nil {
			return "", "", nil, err
		}
	}
	return queue, parking, msgs, nil
}

// printParked reads the parking queue as an operator would: each message
// with its reason from replay's metadata.
func printParked(ctx context.Context, api *sqs.Client, parking string, out io.Writer) error {
	var lines []string
	for {
		res, err := api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(parking), MaxNumberOfMessages: 10, MessageAttributeNames: []string{"All"}})
		if err != nil {
			return err
		}
		if len(res.Messages) == 0 {
			break
		}
		for _, m := range res.Messages {
			var md replay.Metadata
			if a, ok := m.MessageAttributes[replay.MetadataAttribute]; ok {
				_ = json.Unmarshal([]byte(aws.ToString(a.StringValue)), &md)
			}
			lines = append(lines, fmt.Sprintf("parked %s: %s", aws.ToString(m.MessageAttributes["event-id"].StringValue), md.Reason))
			if _, err := api.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(parking), ReceiptHandle: m.ReceiptHandle}); err != nil {
				return err
			}
		}
	}
	slices.Sort(lines)
	for _, l := range lines {
		fmt.Fprintln(out, l)
	}
	return nil
}
