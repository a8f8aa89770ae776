package main

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/sqskit/sqskit/consumer"
	"github.com/sqskit/sqskit/examples/internal/backend"
	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/sqsfake"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func inMemory(t *testing.T) {
	t.Setenv("SQSKIT_ENDPOINT", "")
	t.Setenv("SQSKIT_AWS", "")
}

const transcript = `cancelled A-1: customer
placed A-1 for 120 (via SNS topic orders)
placed B-2 for 80 (via plain JSON)
placed E-5 for 15 (via plain JSON)
9 messages: 4 handled, 2 duplicates done without running, 3 parked
parked e4: decode-failed
parked e5: unknown-type
parked e6: malformed-envelope
`

// TestRunInMemory runs the service on sqsfake in a synctest bubble: SNS
// and plain orders handled, duplicates done without running, the three
// bad messages parked with their reasons.
func TestRunInMemory(t *testing.T) {
	inMemory(t)
	synctest.Test(t, func(t *testing.T) {
		var out bytes.Buffer
		if err := run(context.Background(), &out); err != nil {
			t.Fatal(err)
		}
		if out.String() != transcript {
			t.Errorf("expect:\n%s\ngot:\n%s", transcript, out.String())
		}
	})
}

// TestBadMessagesCostOneReceive: every parked message was received exactly
// once, and every duplicate of an order in progress was held, not failed.
func TestBadMessagesCostOneReceive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		api := sqsfake.New().Client()
		queue, parking, msgs, err := setUp(ctx, api, backend.NewQueues(api, "", "t"))
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		receives := map[string]int{}
		svc := &service{}
		c, err := newConsumer(api, queue, parking, svc, &handler.MemoryStore{}, func(o *consumer.Options) {
			o.Concurrency = 4 // the duplicates meet their originals in flight
			o.Hooks.Received = func(_ context.Context, m *handler.Message) {
				mu.Lock()
				receives[m.MessageAttributes["event-id"].StringValue]++
				mu.Unlock()
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- c.Run(runCtx) }()
		for s := c.Stats(); int(s.Deleted+s.Parked) < len(msgs); s = c.Stats() {
			time.Sleep(100 * time.Millisecond)
		}
		cancel()
		if err := <-done; err != nil && err != context.Canceled {
			t.Fatal(err)
		}
		for _, id := range []string{"e4", "e5", "e6"} {
			if receives[id] != 1 {
				t.Errorf("%s: expect parked after one receive, got %d", id, receives[id])
			}
		}
		if s := c.Stats(); s.Parked != 3 || s.Failed != 0 || len(svc.done) != 4 {
			t.Errorf("expect 3 parked, no failure, 4 handled, got %+v and %v", s, svc.done)
		}
	})
}
