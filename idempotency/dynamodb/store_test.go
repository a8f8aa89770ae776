package dynamodb_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/consumer"
	"github.com/sqskit/sqskit/handler"
	store "github.com/sqskit/sqskit/idempotency/dynamodb"
	"github.com/sqskit/sqskit/sqsfake"
)

func TestNewConfig(t *testing.T) {
	var api store.API = nopAPI{} // option checks make no call
	cases := map[string]func() (*store.Store, error){
		"nil client":  func() (*store.Store, error) { return store.New(nil, "t") },
		"empty table": func() (*store.Store, error) { return store.New(api, "") },
		"key is status": func() (*store.Store, error) {
			return store.New(api, "t", func(o *store.Options) { o.KeyAttribute = "status" })
		},
		"ttl is the key": func() (*store.Store, error) {
			return store.New(api, "t", func(o *store.Options) { o.TTLAttribute = "id" })
		},
		"ttl is a result": func() (*store.Store, error) {
			return store.New(api, "t", func(o *store.Options) { o.TTLAttribute = "result" })
		},
	}
	for name, mk := range cases {
		t.Run(name, func(t *testing.T) {
			if s, err := mk(); !errors.Is(err, store.ErrConfig) || s != nil {
				t.Errorf("expect ErrConfig, got %v", err)
			}
		})
	}
}

type nopAPI struct{ store.API }

// TestStoreConditions walks one key through every state on the emulator,
// each write checked against its condition.
func TestStoreConditions(t *testing.T) {
	api := startDynalite(t)
	createTable(t, api, "idem")
	s, err := store.New(api, "idem")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	now := time.Now().Truncate(time.Millisecond)
	key := handler.IdempotencyKey("q", "order-1")

	if _, claimed, err := s.Claim(ctx, key, "a", now, now.Add(30*time.Second)); err != nil || !claimed {
		t.Fatalf("expect the first claim, got %v, %v", claimed, err)
	}
	rec, claimed, err := s.Claim(ctx, key, "b", now.Add(time.Second), now.Add(31*time.Second))
	if err != nil || claimed || rec.Status != handler.StatusInProgress || !rec.Until.Equal(now.Add(30*time.Second)) {
		t.Fatalf("expect a's live claim returned, got %+v, %v, %v", rec, claimed, err)
	}
	for name, err := range map[string]error{
		"extend":   s.Extend(ctx, key, "b", now.Add(time.Minute)),
		"complete": s.Complete(ctx, key, "b", nil, now.Add(time.Hour)),
		"release":  s.Release(ctx, key, "b"),
	} {
		if !errors.Is(err, handler.ErrNotHeld) {
			t.Errorf("%s by another token: expect ErrNotHeld, got %v", name, err)
		}
	}
	if err := s.Extend(ctx, key, "a", now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	// Past the first expiry, the extended claim still holds.
	if rec, claimed, _ := s.Claim(ctx, key, "b", now.Add(45*time.Second), now.Add(75*time.Second)); claimed || !rec.Until.Equal(now.Add(time.Minute)) {
		t.Fatalf("expect the extended claim to hold, got %+v, %v", rec, claimed)
	}
	// Past it, another token takes the key; the first one's writes fail.
	if _, claimed, err := s.Claim(ctx, key, "b", now.Add(61*time.Second), now.Add(91*time.Second)); err != nil || !claimed {
		t.Fatalf("expect an expired claim taken over, got %v, %v", claimed, err)
	}
	if err := s.Complete(ctx, key, "a", nil, now.Add(time.Hour)); !errors.Is(err, handler.ErrNotHeld) {
		t.Errorf("expect the expired holder refused, got %v", err)
	}
	if err := s.Complete(ctx, key, "b", []byte("reply"), now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	rec, claimed, err = s.Claim(ctx, key, "c", now.Add(2*time.Minute), now.Add(3*time.Minute))
	if err != nil || claimed || rec.Status != handler.StatusCompleted || string(rec.Result) != "reply" {
		t.Fatalf("expect the completed record with its result, got %+v, %v, %v", rec, claimed, err)
	}
	if err := s.Release(ctx, key, "b"); !errors.Is(err, handler.ErrNotHeld) {
		t.Errorf("expect a completed record not released, got %v", err)
	}
	// A released claim frees the key at once.
	other := handler.IdempotencyKey("q", "order-2")
	if _, claimed, _ := s.Claim(ctx, other, "a", now, now.Add(time.Minute)); !claimed {
		t.Fatal("expect a claim")
	}
	if err := s.Release(ctx, other, "a"); err != nil {
		t.Fatal(err)
	}
	if _, claimed, _ := s.Claim(ctx, other, "b", now, now.Add(time.Minute)); !claimed {
		t.Error("expect the released key claimed again")
	}
}

// TestConcurrentDuplicatesAcrossTwoConsumers: two consumers share one
// queue and one DynamoDB table. Consumer A runs the first copy of every
// order and blocks; consumer B then receives the second copies, finds them
// in progress and holds them; once A finishes, B's copies come back, find
// the orders completed and are deleted: every order ran exactly once.
func TestConcurrentDuplicatesAcrossTwoConsumers(t *testing.T) {
	api := startDynalite(t)
	createTable(t, api, "orders-idem")
	st, err := store.New(api, "orders-idem")
	if err != nil {
		t.Fatal(err)
	}
	srv := sqsfake.New()
	sq := srv.Client()
	ctx := context.Background()
	q, err := sq.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders")})
	if err != nil {
		t.Fatal(err)
	}
	const orders = 10
	send := func(copy int) {
		var entries []types.SendMessageBatchRequestEntry
		for i := range orders {
			entries = append(entries, types.SendMessageBatchRequestEntry{
				Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(fmt.Sprintf("order %d, copy %d", i, copy)),
				MessageAttributes: map[string]types.MessageAttributeValue{
					"order-id": {DataType: aws.String("String"), StringValue: aws.String(strconv.Itoa(i))},
					"copy":     {DataType: aws.String("String"), StringValue: aws.String(strconv.Itoa(copy))},
				},
			})
		}
		if _, err := sq.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: q.QueueUrl, Entries: entries}); err != nil {
			t.Fatal(err)
		}
	}
	idem, err := handler.Idempotent(st, func(o *handler.IdempotencyOptions) {
		o.Namespace = "orders"
		o.Key = func(_ context.Context, m *handler.Message) string { return m.MessageAttributes["order-id"].StringValue }
	})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	runs := map[string]int{}
	gate, started := make(chan struct{}), make(chan struct{}, 2*orders)
	h := func(_ context.Context, m *handler.Message) error {
		mu.Lock()
		runs[m.MessageAttributes["order-id"].StringValue]++
		mu.Unlock()
		started <- struct{}{}
		<-gate
		return nil
	}
	var heldByB atomic.Int32
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	start := func(hooks consumer.Hooks) {
		c, err := consumer.New(sq, *q.QueueUrl, h, func(o *consumer.Options) {
			o.Middleware = []handler.Middleware{idem}
			o.Concurrency, o.MaxInFlight = orders, orders
			o.VisibilityTimeout, o.HeartbeatInterval = 2*time.Second, 500*time.Millisecond
			o.WaitTime = time.Second
			o.Hooks = hooks
		})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() { defer wg.Done(); _ = c.Run(runCtx) }()
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}

	start(consumer.Hooks{}) // A
	send(0)
	for range orders {
		<-started
	}
	start(consumer.Hooks{Held: func(context.Context, *handler.Message, time.Duration) { heldByB.Add(1) }}) // B
	send(1)
	waitFor("B to hold every second copy", func() bool { return heldByB.Load() >= orders })
	close(gate)
	waitFor("the queue drained", func() bool {
		out, err := sq.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl, AttributeNames: []types.QueueAttributeName{"All"}})
		if err != nil {
			t.Fatal(err)
		}
		a := out.Attributes
		return a["ApproximateNumberOfMessages"] == "0" && a["ApproximateNumberOfMessagesNotVisible"] == "0"
	})
	cancel()
	wg.Wait()
	if len(runs) != orders {
		t.Errorf("expect %d orders run, got %d", orders, len(runs))
	}
	for id, n := range runs {
		if n != 1 {
			t.Errorf("order %s: expect one run, got %d", id, n)
		}
	}
}
