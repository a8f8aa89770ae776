package consumer

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sqskit/sqskit/handler"
)

// semaphore is a Budget of n slots that counts what it gave.
type semaphore struct {
	slots              chan struct{}
	acquired, released atomic.Int64
}

func newSemaphore(n int) *semaphore { return &semaphore{slots: make(chan struct{}, n)} }

func (s *semaphore) Acquire(ctx context.Context) error {
	select {
	case s.slots <- struct{}{}:
		s.acquired.Add(1)
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *semaphore) Release() {
	s.released.Add(1)
	<-s.slots
}

// peak tracks the handler calls running at once.
type peak struct {
	mu       sync.Mutex
	now, max int
}

func (p *peak) enter() func() {
	p.mu.Lock()
	p.now++
	p.max = max(p.max, p.now)
	p.mu.Unlock()
	return func() { p.mu.Lock(); p.now--; p.mu.Unlock() }
}

// Two consumers sharing a Budget of 3 run at most 3 handlers at once
// between them, though each may run 10; every message is handled and
// every slot given back.
func TestBudgetBoundsHandlersAcrossConsumers(t *testing.T) {
	for _, batch := range []bool{false, true} {
		name := map[bool]string{false: "Handler", true: "BatchHandler"}[batch]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				budget := newSemaphore(3)
				var running peak
				opts := func(o *Options) { o.Concurrency, o.Budget = 10, budget }
				var cs []*Consumer
				for _, q := range []string{"orders", "jobs"} {
					f := newQueue(t, q, nil)
					f.send(t, "", numbered(100)...)
					var c *Consumer
					var err error
					if batch {
						c, err = NewBatch(f.client, f.url, func(_ context.Context, ms []*handler.Message) []error {
							defer running.enter()()
							time.Sleep(100 * time.Millisecond)
							return make([]error, len(ms))
						}, opts)
					} else {
						c, err = New(f.client, f.url, func(context.Context, *handler.Message) error {
							defer running.enter()()
							time.Sleep(100 * time.Millisecond)
							return nil
						}, opts)
					}
					if err != nil {
						t.Fatal(err)
					}
					cs = append(cs, c)
				}
				stop1, stop2 := started(t, cs[0]), started(t, cs[1])
				until(t, "every message", func() bool { return cs[0].Stats().Deleted == 100 && cs[1].Stats().Deleted == 100 })
				if err := stop1(); err != nil {
					t.Fatal(err)
				}
				if err := stop2(); err != nil {
					t.Fatal(err)
				}
				if running.max != 3 {
					t.Errorf("expect 3 handlers at most at once across both, got %d", running.max)
				}
				if a, r := budget.acquired.Load(), budget.released.Load(); a != r || a == 0 {
					t.Errorf("expect every slot given back, got %d acquired, %d released", a, r)
				}
			})
		})
	}
}

// Messages waiting for a slot have not started: at shutdown they are
// released at once, visible again, without their handler running.
func TestBudgetWaitIsNotStarted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		f.send(t, "", numbered(20)...)
		budget := newSemaphore(1)
		var calls atomic.Int64
		c := newConsumer(t, f, func(ctx context.Context, _ *handler.Message) error {
			calls.Add(1)
			<-ctx.Done() // holds the only slot until the shutdown timeout
			return ctx.Err()
		}, func(o *Options) { o.Budget, o.ShutdownTimeout = budget, 5*time.Second })
		stop := started(t, c)
		until(t, "one handler running, the rest waiting", func() bool { return c.Stats().InFlight == 20 })
		time.Sleep(time.Second)
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if n := calls.Load(); n != 1 {
			t.Errorf("expect one handler call, got %d", n)
		}
		if visible, inFlight := f.counts(t); visible != 20 || inFlight != 0 {
			t.Errorf("expect all 20 visible again, got %d visible, %d in flight", visible, inFlight)
		}
		if a, r := budget.acquired.Load(), budget.released.Load(); a != 1 || r != 1 {
			t.Errorf("expect the one slot taken and given back, got %d, %d", a, r)
		}
	})
}
