package handler_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/consumer"
	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/sqsfake"
)

// TestIdempotentAcrossTwoConsumers: two consumers of one queue share a
// store. A runs the first copy of each order and blocks past several
// heartbeats; B receives the second copies and holds them, however long A
// runs, because A's claims follow its leases; once A is done, B's copies
// are done without running. (idempotency/dynamodb runs the same story on
// DynamoDB.)
func TestIdempotentAcrossTwoConsumers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		api := sqsfake.New().Client()
		q, err := api.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders")})
		if err != nil {
			t.Fatal(err)
		}
		const orders = 5
		send := func() {
			for i := range orders {
				_, err := api.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("order"),
					MessageAttributes: map[string]types.MessageAttributeValue{"order-id": {DataType: aws.String("String"), StringValue: aws.String(strconv.Itoa(i))}}})
				if err != nil {
					t.Fatal(err)
				}
			}
		}
		idem, err := handler.Idempotent(&handler.MemoryStore{}, func(o *handler.IdempotencyOptions) {
			o.Key = func(_ context.Context, m *handler.Message) string { return m.MessageAttributes["order-id"].StringValue }
		})
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		runs := map[string]int{}
		gate := make(chan struct{})
		h := func(context.Context, *handler.Message) error { <-gate; return nil }
		count := func(_ context.Context, m *handler.Message) {
			mu.Lock()
			runs[m.MessageAttributes["order-id"].StringValue]++
			mu.Unlock()
		}
		var started, heldByB atomic.Int32
		runCtx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		consumers := make([]*consumer.Consumer, 0, 2)
		start := func(hooks consumer.Hooks) {
			c, err := consumer.New(api, *q.QueueUrl, h, func(o *consumer.Options) {
				// The handler runs inside the idempotency claim: count there.
				o.Middleware = []handler.Middleware{idem, func(next handler.Handler) handler.Handler {
					return func(ctx context.Context, m *handler.Message) error {
						count(ctx, m)
						started.Add(1)
						return next(ctx, m)
					}
				}}
				o.Concurrency, o.MaxInFlight = orders, orders
				o.VisibilityTimeout, o.HeartbeatInterval = 30*time.Second, 10*time.Second
				o.Hooks = hooks
			})
			if err != nil {
				t.Fatal(err)
			}
			consumers = append(consumers, c)
			wg.Add(1)
			go func() { defer wg.Done(); _ = c.Run(runCtx) }()
		}
		start(consumer.Hooks{}) // A
		send()
		for started.Load() < orders {
			time.Sleep(100 * time.Millisecond)
		}
		start(consumer.Hooks{Held: func(context.Context, *handler.Message, time.Duration) { heldByB.Add(1) }}) // B
		send()
		// A runs for five minutes, ten times its visibility timeout.
		time.Sleep(5 * time.Minute)
		close(gate)
		for consumers[0].Stats().Deleted+consumers[1].Stats().Deleted < 2*orders {
			time.Sleep(100 * time.Millisecond)
		}
		cancel()
		wg.Wait()
		if heldByB.Load() < orders {
			t.Errorf("expect B to hold every second copy while A ran, got %d holds", heldByB.Load())
		}
		for i := range orders {
			if n := runs[strconv.Itoa(i)]; n != 1 {
				t.Errorf("order %d: expect one run, got %d", i, n)
			}
		}
	})
}
