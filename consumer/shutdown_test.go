package consumer

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/sqsfake"
)

// With the default ShutdownTimeout, Run returns within 21 s of its ctx's
// end under load (every handler busy, messages waiting, some handlers
// needing a minute, one deaf to its ctx), inside Kubernetes' 30 s grace
// period, and nothing is lost: every message is either deleted after its
// handler succeeded or visible again at once.
func TestShutdownUnderLoadFitsTheDefaultBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 2000
		f := newQueue(t, "jobs", nil)
		f.send(t, "", numbered(n)...)
		f.srv.Inject(sqsfake.Fault{Latency: 10 * time.Millisecond})
		var mu sync.Mutex
		succeeded, deleted := map[string]bool{}, map[string]bool{}
		c := newConsumer(t, f, func(ctx context.Context, m *handler.Message) error {
			i, _ := strconv.Atoi(m.Body)
			d := 200 * time.Millisecond
			switch {
			case i == 7:
				time.Sleep(5 * time.Minute) // deaf to its ctx
				return nil
			case i%50 == 0:
				d = time.Minute
			}
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return ctx.Err()
			}
			mu.Lock()
			succeeded[m.ID] = true
			mu.Unlock()
			return nil
		}, func(o *Options) {
			o.Concurrency = 32
			o.Hooks.Deleted = func(_ context.Context, m *handler.Message) {
				mu.Lock()
				deleted[m.ID] = true
				mu.Unlock()
			}
		})
		if c.opts.ShutdownTimeout != 20*time.Second {
			t.Fatalf("expect a 20 s default, got %v", c.opts.ShutdownTimeout)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx) }()
		until(t, "a busy consumer", func() bool { return c.Stats().Deleted > 200 })
		if s := c.Stats(); s.InFlight < 32 {
			t.Fatalf("expect every handler busy and more waiting, got %+v", s)
		}
		cancel()
		began := time.Now()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if took := time.Since(began); took > 21*time.Second {
			t.Errorf("expect Run back within 21 s of SIGTERM, took %v", took)
		}
		if s := c.Status(); s.State != StateStopped || s.InFlight != 0 {
			t.Errorf("expect stopped holding nothing, got %+v", s)
		}
		mu.Lock()
		defer mu.Unlock()
		for id := range deleted {
			if !succeeded[id] {
				t.Errorf("message %s deleted though its handler did not succeed", id)
			}
		}
		visible, inFlight := f.counts(t)
		if visible+len(deleted) != n || inFlight != 0 {
			t.Errorf("expect every message deleted (%d) or visible again, got %d visible, %d in flight", len(deleted), visible, inFlight)
		}
		time.Sleep(5 * time.Minute) // the deaf handler returns
	})
}
