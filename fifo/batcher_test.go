package fifo_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqskit/sqskit/fifo"
	"github.com/sqskit/sqskit/sqsfake"
)

func newBatcher(t *testing.T, s *fifo.Sender, fns ...func(*fifo.BatcherOptions)) *fifo.Batcher {
	t.Helper()
	b, err := s.NewBatcher(append([]func(*fifo.BatcherOptions){func(o *fifo.BatcherOptions) { o.Linger = time.Millisecond }}, fns...)...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Each caller owns a group and sends in sequence; callers run at once. Every
// group arrives in order and batches fill up.
func TestBatcherKeepsGroupOrderAcrossConcurrentCallers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newBubbleFixture(t, "q.fifo", nil)
		b := newBatcher(t, f.sender(t))
		const callers, each = 20, 30
		var wg sync.WaitGroup
		var msgs []fifo.Message
		for c := range callers {
			for i := range each {
				msgs = append(msgs, fifo.Message{Body: fmt.Sprintf("c%d-%02d", c, i), GroupID: fmt.Sprintf("c%d", c)})
			}
		}
		for c := range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each {
					if _, err := b.Send(context.Background(), msgs[c*each+i]); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		if err := b.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		wantOrder(t, f.drain(t), msgs)
		calls := f.srv.Calls().Op["SendMessageBatch"]
		if perCall := float64(callers*each) / float64(calls); perCall < 5 {
			t.Errorf("expect batching under load, got %.1f messages per call", perCall)
		}
	})
}

func TestBatcherCloseFlushesAndRefuses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newBubbleFixture(t, "q.fifo", nil)
		b := newBatcher(t, f.sender(t), func(o *fifo.BatcherOptions) { o.Linger = time.Hour })
		result := make(chan error, 1)
		go func() {
			_, err := b.Send(context.Background(), fifo.Message{Body: "held", GroupID: "g"})
			result <- err
		}()
		synctest.Wait() // accepted, and held by the hour-long linger
		if n := f.srv.Calls().Total(); n != 0 {
			t.Fatalf("expect the message held, got %d calls", n)
		}
		if err := b.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := <-result; err != nil {
			t.Fatalf("expect Close to send the held message, got %v", err)
		}
		if got := f.drain(t); len(got["g"]) != 1 {
			t.Fatalf("expect the message on the queue, got %v", got)
		}
		if _, err := b.Send(context.Background(), fifo.Message{Body: "late", GroupID: "g"}); !errors.Is(err, fifo.ErrClosed) {
			t.Fatalf("expect ErrClosed after Close, got %v", err)
		}
	})
}

// While a group's batch is in flight its next message waits; when the batch
// fails for good, the waiting message fails with GroupBlockedError instead
// of overtaking it. A message sent after that goes through.
func TestBatcherFailureBlocksWaitingGroup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newBubbleFixture(t, "q.fifo", nil)
		f.srv.Inject(sqsfake.Fault{Op: "SendMessageBatch", Times: 1, Latency: time.Second, Entries: &sqsfake.EntryFault{Code: "InvalidParameterValue", SenderFault: true}})
		b := newBatcher(t, f.sender(t))
		defer b.Close(context.Background())
		first, second := make(chan error, 1), make(chan error, 1)
		go func() { _, err := b.Send(context.Background(), fifo.Message{Body: "g1", GroupID: "g"}); first <- err }()
		time.Sleep(10 * time.Millisecond) // past the linger: g1's batch is in flight for a second
		synctest.Wait()
		if n := f.srv.Calls().Op["SendMessageBatch"]; n != 1 {
			t.Fatalf("expect g1's batch in flight, got %d calls", n)
		}
		go func() { _, err := b.Send(context.Background(), fifo.Message{Body: "g2", GroupID: "g"}); second <- err }()
		time.Sleep(10 * time.Millisecond)
		synctest.Wait()
		if n := f.srv.Calls().Op["SendMessageBatch"]; n != 1 {
			t.Fatalf("expect g2 to wait behind g1, got %d calls", n)
		}
		var entry *fifo.EntryError
		if err := <-first; !errors.As(err, &entry) {
			t.Fatalf("expect g1's entry failure, got %v", err)
		}
		var blocked *fifo.GroupBlockedError
		if err := <-second; !errors.As(err, &blocked) || blocked.GroupID != "g" || blocked.Index != -1 || !errors.As(blocked.Cause, &entry) {
			t.Fatalf("expect g2 blocked by g1's failure, got %v", err)
		}
		if _, err := b.Send(context.Background(), fifo.Message{Body: "g3", GroupID: "g"}); err != nil {
			t.Fatalf("expect a later message to go through, got %v", err)
		}
		if got := f.drain(t); fmt.Sprint(got["g"]) != "[g3]" {
			t.Fatalf("expect only g3 on the queue, got %v", got)
		}
	})
}

func TestBatcherInvalidMessageFailsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newBubbleFixture(t, "q.fifo", nil)
		b := newBatcher(t, f.sender(t))
		defer b.Close(context.Background())
		if _, err := b.Send(context.Background(), fifo.Message{Body: "no group"}); !errors.Is(err, fifo.ErrInvalid) {
			t.Fatalf("expect ErrInvalid, got %v", err)
		}
		for _, fn := range []func(*fifo.BatcherOptions){
			func(o *fifo.BatcherOptions) { o.Linger = -1 },
			func(o *fifo.BatcherOptions) { o.SendConcurrency = -1 },
		} {
			if _, err := f.sender(t).NewBatcher(fn); !errors.Is(err, fifo.ErrConfig) {
				t.Fatalf("expect ErrConfig, got %v", err)
			}
		}
	})
}

func TestBatcherCloseDeadlineCancelsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newBubbleFixture(t, "q.fifo", nil)
		f.srv.Inject(sqsfake.Fault{Op: "SendMessageBatch", Latency: time.Hour})
		b := newBatcher(t, f.sender(t))
		result := make(chan error, 1)
		go func() {
			_, err := b.Send(context.Background(), fifo.Message{Body: "stuck", GroupID: "g"})
			result <- err
		}()
		time.Sleep(10 * time.Millisecond) // past the linger: the batch waits out its hour
		synctest.Wait()
		closeCtx, cancelClose := context.WithCancel(context.Background())
		cancelClose()
		if err := b.Close(closeCtx); !errors.Is(err, context.Canceled) {
			t.Fatalf("expect Close to report its context, got %v", err)
		}
		if err := <-result; err == nil {
			t.Fatal("expect the cancelled batch to fail its caller")
		}
	})
}

// concurrencyMeter counts the SendMessageBatch calls in flight.
type concurrencyMeter struct {
	fifo.API
	mu             sync.Mutex
	inFlight, peak int
}

func (c *concurrencyMeter) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	c.mu.Lock()
	c.inFlight++
	c.peak = max(c.peak, c.inFlight)
	c.mu.Unlock()
	defer func() { c.mu.Lock(); c.inFlight--; c.mu.Unlock() }()
	return c.API.SendMessageBatch(ctx, in, optFns...)
}

// At 10 ms per call, the Batcher keeps SendConcurrency calls in flight when
// enough groups are waiting, on FIFO and standard queues alike; on a FIFO
// queue, one group is one call at a time. 0 means the Sender's
// SendConcurrency, 10 by default.
func TestBatcherKeepsSeveralCallsInFlight(t *testing.T) {
	cases := []struct {
		queue       string
		groups      int
		sender      int // SenderOptions.SendConcurrency
		concurrency int // BatcherOptions.SendConcurrency
		peak        int
	}{
		{"q.fifo", 400, 0, 0, 10},
		{"q.fifo", 400, 0, 2, 2},
		{"q.fifo", 400, 3, 0, 3}, // the Sender's bound is the Batcher's default
		{"q.fifo", 1, 0, 0, 1},
		{"std", 0, 0, 0, 10},
		{"std", 1, 0, 0, 10}, // a fair-queue tenant orders nothing
	}
	for _, c := range cases {
		synctest.Test(t, func(t *testing.T) {
			f := newBubbleFixture(t, c.queue, nil)
			f.srv.Inject(sqsfake.Fault{Op: "SendMessageBatch", Latency: 10 * time.Millisecond})
			meter := &concurrencyMeter{API: f.client}
			s, err := fifo.NewSender(meter, f.url, func(o *fifo.SenderOptions) { o.SendConcurrency = c.sender })
			if err != nil {
				t.Fatal(err)
			}
			b := newBatcher(t, s, func(o *fifo.BatcherOptions) { o.SendConcurrency = c.concurrency })
			var wg sync.WaitGroup
			for i := range 400 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					m := fifo.Message{Body: fmt.Sprint(i)}
					if c.groups > 0 {
						m.GroupID = fmt.Sprint("g", i%c.groups)
					}
					if _, err := b.Send(context.Background(), m); err != nil {
						t.Error(err)
					}
				}()
			}
			wg.Wait()
			if err := b.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			if meter.peak != c.peak {
				t.Errorf("%s, %d groups, SendConcurrency %d/%d: expect %d calls in flight at the peak, got %d", c.queue, c.groups, c.sender, c.concurrency, c.peak, meter.peak)
			}
		})
	}
}
