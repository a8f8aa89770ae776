package consumer

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/sqsfake"
)

// The consumer holds at most MaxInFlight messages, whatever SQS returns,
// and holds none once Run has returned. A place counted twice or never
// freed stops the consumer from receiving, and a held message keeps Run
// from returning after its ctx ends.

// greedyClient asks SQS for ten messages whatever the caller asked for, as
// SQS does when a retried ReceiveRequestAttemptId returns the first
// attempt's messages.
type greedyClient struct{ API }

func (g greedyClient) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	req := *in
	req.MaxNumberOfMessages = 10
	return g.API.ReceiveMessage(ctx, &req, optFns...)
}

// inFlightWatch records the most messages a consumer held at once, sampled
// at every event.
type inFlightWatch struct {
	c   atomic.Pointer[Consumer]
	max atomic.Int64
}

func (w *inFlightWatch) sample() {
	if c := w.c.Load(); c != nil {
		n := c.Stats().InFlight
		for {
			old := w.max.Load()
			if n <= old || w.max.CompareAndSwap(old, n) {
				return
			}
		}
	}
}

func (w *inFlightWatch) hooks(o *Options) {
	o.Hooks.Received = func(context.Context, *handler.Message) { w.sample() }
	o.Hooks.Deleted = func(context.Context, *handler.Message) { w.sample() }
	o.Hooks.Released = func(context.Context, *handler.Message, time.Duration) { w.sample() }
}

// A receive that returns more messages than it asked for (a retried FIFO
// attempt returns the first attempt's messages) takes no more places than
// MaxInFlight: every message is handled once, InFlight never passes
// MaxInFlight, and Run returns after cancel holding nothing. Tracking more
// messages than places would leave InFlight above its bound and Run waiting
// for places that never free.
func TestInFlightStaysWithinMaxWhenAReceiveReturnsMore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		f.send(t, "", numbered(40)...)
		w := &inFlightWatch{}
		c, err := New(greedyClient{f.client}, f.url, func(context.Context, *handler.Message) error {
			w.sample()
			time.Sleep(time.Second)
			return nil
		}, func(o *Options) {
			o.Concurrency, o.MaxInFlight = 2, 3
			w.hooks(o)
		})
		if err != nil {
			t.Fatal(err)
		}
		w.c.Store(c)
		stop := started(t, c)
		until(t, "40 deletes", func() bool { return c.Stats().Deleted == 40 })
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if got := w.max.Load(); got > 3 {
			t.Fatalf("expect at most MaxInFlight 3 held, got %d", got)
		}
		if s := c.Stats(); s.InFlight != 0 || s.Received != 40 {
			t.Fatalf("expect every message received once and nothing held, got %+v", s)
		}
	})
}

// lossyClient loses the response of every third ReceiveMessage after SQS
// applied it: the messages are in flight, the caller sees an error.
type lossyClient struct {
	API
	n atomic.Int64
}

func (l *lossyClient) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	out, err := l.API.ReceiveMessage(ctx, in, optFns...)
	if err == nil && len(out.Messages) > 0 && l.n.Add(1)%3 == 0 {
		return nil, sqsfake.ErrInternal
	}
	return out, err
}

// The same bound under a production-like load: a FIFO queue, two consumers
// with two receivers each, and receive responses lost in transit. Retries
// reuse the attempt id and get the first attempt's messages back; each
// consumer still holds at most MaxInFlight, every message is handled, and
// Run returns holding nothing.
func TestInFlightStaysWithinMaxWhenFIFOReceiveResponsesAreLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs.fifo", nil)
		const n = 300
		for i := range n {
			f.send(t, fmt.Sprintf("g%d", i%7), fmt.Sprintf("g%d-%03d", i%7, i))
		}
		var mu sync.Mutex
		handled := map[string]int{}
		var consumers []*Consumer
		var watches []*inFlightWatch
		for range 2 {
			w := &inFlightWatch{}
			c, err := New(&lossyClient{API: f.client}, f.url, func(context.Context, *handler.Message) error { return nil }, func(o *Options) {
				o.Concurrency, o.MaxInFlight = 2, 4
				o.ReceiveConcurrency, o.MaxReceiveConcurrency = 2, 2
				w.hooks(o)
				o.Hooks.Handled = func(_ context.Context, m *handler.Message, _ time.Duration) {
					w.sample()
					mu.Lock()
					handled[m.Body]++
					mu.Unlock()
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			w.c.Store(c)
			consumers, watches = append(consumers, c), append(watches, w)
		}
		var stops []func() error
		for _, c := range consumers {
			stops = append(stops, started(t, c))
		}
		until(t, "every message deleted", func() bool {
			return consumers[0].Stats().Deleted+consumers[1].Stats().Deleted >= n
		})
		for i, stop := range stops {
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			if got := watches[i].max.Load(); got > 4 {
				t.Errorf("consumer %d: expect at most MaxInFlight 4 held, got %d", i, got)
			}
			if s := consumers[i].Stats(); s.InFlight != 0 {
				t.Errorf("consumer %d: expect nothing held after Run, got %+v", i, s)
			}
		}
		if len(handled) != n {
			t.Fatalf("expect %d messages handled, got %d", n, len(handled))
		}
	})
}
