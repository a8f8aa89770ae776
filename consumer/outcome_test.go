package consumer

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/handler"
)

// fakeParker records parks, failing the first failFirst of them.
type fakeParker struct {
	mu        sync.Mutex
	failFirst int
	parked    []handler.Message
	reasons   []string
	calls     int
}

func (p *fakeParker) Park(_ context.Context, m *handler.Message, reason string, _ error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	if p.calls <= p.failFirst {
		return errors.New("parking queue unavailable")
	}
	p.parked = append(p.parked, *m)
	p.reasons = append(p.reasons, reason)
	return nil
}

func (p *fakeParker) Hold(context.Context, *handler.Message, time.Duration) error { return nil }

func (p *fakeParker) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.parked)
}

func TestHoldKeepsTheMessageInvisibleWithoutAFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		f.send(t, "", "m")
		var heldFor atomic.Int64
		var failures atomic.Int32
		held := make(chan struct{})
		c := newConsumer(t, f, func(context.Context, *handler.Message) error { return handler.Hold(90 * time.Second) }, func(o *Options) {
			o.OnFailure = ReleaseNow
			o.Hooks.Held = func(_ context.Context, _ *handler.Message, d time.Duration) { heldFor.Store(int64(d)); close(held) }
			o.Hooks.Failed = func(context.Context, *handler.Message, error) { failures.Add(1) }
		})
		stop := started(t, c)
		<-held
		heldAt := time.Now()
		synctest.Wait()
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if got := time.Duration(heldFor.Load()); got != 90*time.Second {
			t.Errorf("expect Held with 90s, got %v", got)
		}
		if s := c.Stats(); s.Held != 1 || s.Failed != 0 || failures.Load() != 0 || s.Released != 0 {
			t.Errorf("expect one hold and no failure or release, got %+v (Failed hook %d)", s, failures.Load())
		}
		time.Sleep(90*time.Second - time.Since(heldAt) - time.Second)
		if v, _ := f.counts(t); v != 0 {
			t.Fatal("expect the message hidden just before the hold ends")
		}
		time.Sleep(2 * time.Second)
		if v, _ := f.counts(t); v != 1 {
			t.Fatal("expect the message visible once the hold ended")
		}
	})
}

func TestHoldOnFIFOKeepsGroupMatesBehind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs.fifo", nil)
		f.send(t, "g", "a", "b", "c")
		var mu sync.Mutex
		var order []string
		heldOnce := false
		c := newConsumer(t, f, func(_ context.Context, m *handler.Message) error {
			mu.Lock()
			defer mu.Unlock()
			if m.Body == "a" && !heldOnce {
				heldOnce = true
				return handler.Hold(30 * time.Second)
			}
			order = append(order, m.Body)
			return nil
		}, func(o *Options) { o.VisibilityTimeout = 10 * time.Second })
		stop := started(t, c)
		until(t, "all three handled", func() bool { mu.Lock(); defer mu.Unlock(); return len(order) == 3 })
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(order, []string{"a", "b", "c"}) {
			t.Fatalf("expect a, b, c after the hold, got %v", order)
		}
	})
}

func TestEscalateWithoutParkingQueueIsAFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		f.send(t, "", "m")
		failed := make(chan error, 1)
		c := newConsumer(t, f, func(context.Context, *handler.Message) error {
			return handler.Escalate("invalid-order", errors.New("no such customer"))
		}, func(o *Options) {
			o.OnFailure = LeaveToTimeout
			o.Hooks.Failed = func(_ context.Context, _ *handler.Message, err error) {
				select {
				case failed <- err:
				default:
				}
			}
		})
		stop := started(t, c)
		err := <-failed
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if esc := handler.EscalationOf(err); esc == nil || esc.Reason != "invalid-order" {
			t.Fatalf("expect the failure to carry the escalation, got %v", err)
		}
		if s := c.Stats(); s.Parked != 0 || s.Deleted != 0 {
			t.Fatalf("expect nothing parked or deleted, got %+v", s)
		}
	})
}

func TestEscalateParksTheMessageAsReceivedThenDeletes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		f.send(t, "", "poison")
		p := &fakeParker{failFirst: 1}
		parkedReason := make(chan string, 1)
		var failures atomic.Int32
		c := newConsumer(t, f, func(_ context.Context, m *handler.Message) error {
			m.Body = "rewritten by the handler"
			return handler.Permanent(errors.New("cannot ever work"))
		}, func(o *Options) {
			o.OnFailure = ReleaseNow
			o.Hooks.Parked = func(_ context.Context, _ *handler.Message, reason string) { parkedReason <- reason }
			o.Hooks.Failed = func(context.Context, *handler.Message, error) { failures.Add(1) }
		})
		c.parker = p
		stop := started(t, c)
		reason := <-parkedReason
		synctest.Wait()
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if reason != handler.ReasonPermanent {
			t.Errorf("expect reason %q, got %q", handler.ReasonPermanent, reason)
		}
		if p.count() != 1 || p.parked[0].Body != "poison" {
			t.Fatalf("expect the message parked once as received, got %+v", p.parked)
		}
		// The first park failed: the message was released, not deleted, and
		// parked on its next receive.
		if s := c.Stats(); s.Parked != 1 || s.Deleted != 0 || s.Handled != 0 || s.Failed != 1 || failures.Load() != 1 {
			t.Errorf("expect one failed park then one park, got %+v", s)
		}
		if v, inFlight := f.counts(t); v != 0 || inFlight != 0 {
			t.Fatalf("expect the queue empty, got %d visible and %d in flight", v, inFlight)
		}
	})
}

func TestDrainReturnsOnceTheQueueIsEmptyAndAllIsSettled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		f.send(t, "", numbered(45)...)
		rec := &recorder{failN: map[string]int{"7": 1}}
		c := newConsumer(t, f, rec.handle, func(o *Options) { o.OnFailure = ReleaseNow; o.WaitTime = time.Second })
		if err := c.Drain(context.Background()); err != nil {
			t.Fatal(err)
		}
		if rec.count() != 45 {
			t.Fatalf("expect 45 handled, got %d", rec.count())
		}
		if v, inFlight := f.counts(t); v != 0 || inFlight != 0 {
			t.Fatalf("expect the queue drained, got %d visible and %d in flight", v, inFlight)
		}
	})
}

func TestDrainEndsAtItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		f.send(t, "", "slow")
		c := newConsumer(t, f, func(ctx context.Context, _ *handler.Message) error { <-ctx.Done(); return ctx.Err() },
			func(o *Options) { o.ShutdownTimeout = time.Second })
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := c.Drain(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("expect the drain cut short by its ctx, got %v", err)
		}
	})
}

func TestRateLimitCapsTheMessagesReceived(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		f.send(t, "", numbered(110)...)
		rec := &recorder{}
		c := newConsumer(t, f, rec.handle, func(o *Options) { o.RateLimit = 20; o.WaitTime = time.Second })
		start := time.Now()
		if err := c.Drain(context.Background()); err != nil {
			t.Fatal(err)
		}
		// A burst of ten, then 20 a second: the hundredth message after
		// the burst cannot come before 5 s.
		if took := time.Since(start); took < 5*time.Second || took > 8*time.Second {
			t.Fatalf("expect 110 messages at 20/s (burst 10) in 5 s to 8 s, took %v", took)
		}
		if rec.count() != 110 {
			t.Fatalf("expect 110 handled, got %d", rec.count())
		}
	})
}

func TestRateLimitMustBeFinite(t *testing.T) {
	f := newQueue(t, "jobs", nil)
	for _, bad := range []float64{-1, posInf(), nan()} {
		if _, err := New(f.client, f.url, (&recorder{}).handle, func(o *Options) { o.RateLimit = bad }); !errors.Is(err, ErrConfig) {
			t.Errorf("RateLimit %v: expect ErrConfig, got %v", bad, err)
		}
	}
}

func posInf() float64 { return 1 / zero() }
func nan() float64    { z := zero(); return z / z }
func zero() float64   { return 0 }

func TestParkingQueueParksOnTheRealQueueAfterOneReceive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "orders", nil)
		operator := newQueueOn(t, f, "operator")
		f.send(t, "", "poison", "fine")
		c := newConsumer(t, f, func(_ context.Context, m *handler.Message) error {
			if m.Body == "poison" {
				return handler.Escalate("invalid-order", errors.New("no such customer"))
			}
			return nil
		}, func(o *Options) { o.ParkingQueue = operator; o.WaitTime = time.Second })
		if err := c.Drain(context.Background()); err != nil {
			t.Fatal(err)
		}
		if s := c.Stats(); s.Parked != 1 || s.Deleted != 1 || s.Failed != 0 || s.Received != 2 {
			t.Fatalf("expect one parked after its one receive and one deleted, got %+v", s)
		}
		out, err := f.client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(operator), MessageAttributeNames: []string{"All"}})
		if err != nil || len(out.Messages) != 1 {
			t.Fatalf("expect one message on the parking queue, got %v, %v", out, err)
		}
		m := out.Messages[0]
		meta := aws.ToString(m.MessageAttributes["sqskit-replay"].StringValue)
		if aws.ToString(m.Body) != "poison" || !strings.Contains(meta, `"reason":"invalid-order"`) || !strings.Contains(meta, "no such customer") {
			t.Fatalf("expect the body and the reason with its detail, got %q with metadata %s", aws.ToString(m.Body), meta)
		}
		if v, inFlight := f.counts(t); v != 0 || inFlight != 0 {
			t.Fatalf("expect the queue empty, got %d visible and %d in flight", v, inFlight)
		}
	})
}

func TestParkingQueueOptionsRefused(t *testing.T) {
	f := newQueue(t, "orders", nil)
	cases := map[string]func(*Options){
		"the queue itself": func(o *Options) { o.ParkingQueue = f.url },
	}
	for name, fn := range cases {
		if _, err := New(f.client, f.url, (&recorder{}).handle, fn); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: expect ErrConfig, got %v", name, err)
		}
	}
	if _, err := New(receiveOnly{f.client}, f.url, (&recorder{}).handle, func(o *Options) { o.ParkingQueue = f.url + "-operator" }); !errors.Is(err, ErrConfig) {
		t.Errorf("a client that cannot send: expect ErrConfig, got %v", err)
	}
}

// receiveOnly is a client with only the calls a Consumer needs.
type receiveOnly struct{ API }

func newQueueOn(t *testing.T, f *qfix, name string) string {
	t.Helper()
	out, err := f.client.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.QueueUrl)
}

func TestParkingOnFIFOKeepsTheGroupInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "orders.fifo", nil)
		out, err := f.client.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String("operator.fifo"),
			Attributes: map[string]string{"FifoQueue": "true"}})
		if err != nil {
			t.Fatal(err)
		}
		f.send(t, "g", "a", "poison", "b", "c")
		var mu sync.Mutex
		var order []string
		c := newConsumer(t, f, func(_ context.Context, m *handler.Message) error {
			mu.Lock()
			order = append(order, m.Body)
			mu.Unlock()
			if m.Body == "poison" {
				return handler.Permanent(errors.New("never"))
			}
			return nil
		}, func(o *Options) { o.ParkingQueue = aws.ToString(out.QueueUrl); o.WaitTime = time.Second })
		if err := c.Drain(context.Background()); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(order, []string{"a", "poison", "b", "c"}) {
			t.Fatalf("expect the group handled once each in order, got %v", order)
		}
		got, err := f.client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: out.QueueUrl, MaxNumberOfMessages: 10,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameMessageGroupId}})
		if err != nil || len(got.Messages) != 1 || aws.ToString(got.Messages[0].Body) != "poison" || got.Messages[0].Attributes["MessageGroupId"] != "g" {
			t.Fatalf("expect poison parked in its group, got %+v, %v", got, err)
		}
	})
}
