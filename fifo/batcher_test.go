package fifo_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

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
	f := newFixture(t, "q.fifo", nil)
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
}

// lingerTimers reports each start of the linger timer, which happens when a
// message has been accepted and waits for a batch.
func lingerTimers(d time.Duration) (func(time.Duration) (<-chan time.Time, func() bool), <-chan struct{}) {
	started := make(chan struct{}, 100)
	return func(time.Duration) (<-chan time.Time, func() bool) {
		started <- struct{}{}
		t := time.NewTimer(d)
		return t.C, t.Stop
	}, started
}

func TestBatcherCloseFlushesAndRefuses(t *testing.T) {
	f := newFixture(t, "q.fifo", nil)
	after, started := lingerTimers(time.Hour)
	b := newBatcher(t, f.sender(t), func(o *fifo.BatcherOptions) { o.After = after })
	result := make(chan error, 1)
	go func() {
		_, err := b.Send(context.Background(), fifo.Message{Body: "held", GroupID: "g"})
		result <- err
	}()
	<-started // accepted, and held by the hour-long linger
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
}

// While a group's batch is in flight its next message waits; when the batch
// fails for good, the waiting message fails with GroupBlockedError instead
// of overtaking it. A message sent after that goes through.
func TestBatcherFailureBlocksWaitingGroup(t *testing.T) {
	f := newFixture(t, "q.fifo", nil)
	f.srv.Inject(sqsfake.Fault{Op: "SendMessageBatch", Times: 1, Latency: time.Second, Entries: &sqsfake.EntryFault{Code: "InvalidParameterValue", SenderFault: true}})
	after, started := lingerTimers(time.Millisecond)
	b := newBatcher(t, f.sender(t), func(o *fifo.BatcherOptions) { o.After = after })
	defer b.Close(context.Background())
	first, second := make(chan error, 1), make(chan error, 1)
	go func() { _, err := b.Send(context.Background(), fifo.Message{Body: "g1", GroupID: "g"}); first <- err }()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := f.clock.WaitForTimers(ctx, 1); err != nil { // g1's batch is in flight
		t.Fatal(err)
	}
	go func() { _, err := b.Send(context.Background(), fifo.Message{Body: "g2", GroupID: "g"}); second <- err }()
	<-started // g2 waits behind g1
	f.clock.Advance(time.Second)
	var entry *fifo.EntryError
	if err := <-first; !errors.As(err, &entry) {
		t.Fatalf("expect g1's entry failure, got %v", err)
	}
	var blocked *fifo.GroupBlockedError
	if err := <-second; !errors.As(err, &blocked) || blocked.GroupID != "g" {
		t.Fatalf("expect g2 blocked, got %v", err)
	}
	if _, err := b.Send(context.Background(), fifo.Message{Body: "g3", GroupID: "g"}); err != nil {
		t.Fatalf("expect a later message to go through, got %v", err)
	}
	if got := f.drain(t); fmt.Sprint(got["g"]) != "[g3]" {
		t.Fatalf("expect only g3 on the queue, got %v", got)
	}
}

func TestBatcherInvalidMessageFailsAtOnce(t *testing.T) {
	f := newFixture(t, "q.fifo", nil)
	b := newBatcher(t, f.sender(t))
	defer b.Close(context.Background())
	if _, err := b.Send(context.Background(), fifo.Message{Body: "no group"}); !errors.Is(err, fifo.ErrInvalid) {
		t.Fatalf("expect ErrInvalid, got %v", err)
	}
	if _, err := f.sender(t).NewBatcher(func(o *fifo.BatcherOptions) { o.Linger = -1 }); !errors.Is(err, fifo.ErrConfig) {
		t.Fatalf("expect ErrConfig, got %v", err)
	}
}

func TestBatcherCloseDeadlineCancelsInFlight(t *testing.T) {
	f := newFixture(t, "q.fifo", nil)
	f.srv.Inject(sqsfake.Fault{Op: "SendMessageBatch", Latency: time.Hour}) // on the manual clock: never
	b := newBatcher(t, f.sender(t))
	result := make(chan error, 1)
	go func() {
		_, err := b.Send(context.Background(), fifo.Message{Body: "stuck", GroupID: "g"})
		result <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := f.clock.WaitForTimers(ctx, 1); err != nil {
		t.Fatal(err)
	}
	closeCtx, cancelClose := context.WithCancel(context.Background())
	cancelClose()
	if err := b.Close(closeCtx); !errors.Is(err, context.Canceled) {
		t.Fatalf("expect Close to report its context, got %v", err)
	}
	if err := <-result; err == nil {
		t.Fatal("expect the cancelled batch to fail its caller")
	}
}
