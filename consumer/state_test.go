package consumer

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/sqsfake"
)

// watchInvariants checks, every 10 ms of fake time while c runs, the
// invariants of each Run's intake, ledger and settlement, and reports the
// first broken one and how many checks ran.
func watchInvariants(t *testing.T, c *Consumer) (stop func() (checks int)) {
	t.Helper()
	var mu sync.Mutex
	var runs []*run
	c.runStarted = func(r *run) { mu.Lock(); runs = append(runs, r); mu.Unlock() }
	done, finished := make(chan struct{}), make(chan int)
	go func() {
		checks := 0
		defer func() { finished <- checks }()
		for {
			select {
			case <-done:
				return
			case <-time.After(10 * time.Millisecond):
			}
			mu.Lock()
			rs := append([]*run(nil), runs...)
			mu.Unlock()
			for _, r := range rs {
				r.mu.Lock()
				err := r.checkLocked()
				r.mu.Unlock()
				checks++
				if err != nil {
					t.Errorf("invariant broken: %v", err)
					return
				}
			}
		}
	}()
	return func() int { close(done); return <-finished }
}

// The three parts of a Run keep their invariants through every path a
// message can take — handled, failed, held, parked, timed out, lease lost,
// released at shutdown — on standard and FIFO queues, with faults on every
// call and restarts.
func TestRunStateKeepsItsInvariants(t *testing.T) {
	for _, name := range []string{"jobs", "jobs.fifo"} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newQueue(t, name, nil)
				operator := newQueueOn(t, f, "operator")
				for _, g := range []string{"a", "b", "c", "d"} {
					bodies := numbered(60)
					for i := range bodies {
						bodies[i] = g + bodies[i]
					}
					f.send(t, g, bodies...)
				}
				var calls atomic.Int64 // every 20th call fails, every 60th after it applied
				f.srv.Inject(sqsfake.Fault{Match: func(string, any) bool { return calls.Add(1)%60 == 0 }, AfterApply: true})
				f.srv.Inject(sqsfake.Fault{Match: func(string, any) bool { return calls.Load()%20 == 0 }})
				c := newConsumer(t, f, func(ctx context.Context, m *handler.Message) error {
					last, rc := m.Body[len(m.Body)-1], m.ReceiveCount()
					switch {
					case last == '7':
						return handler.Permanent(errors.New("poison"))
					case last == '3' && rc == 1:
						return handler.Hold(2 * time.Second)
					case last == '5' && rc == 1:
						return errors.New("transient")
					}
					select {
					case <-time.After(time.Duration(len(m.Body)) * 100 * time.Millisecond):
					case <-ctx.Done():
						return ctx.Err()
					}
					return nil
				}, func(o *Options) {
					o.ParkingQueue = operator
					o.VisibilityTimeout, o.HeartbeatInterval = 2*time.Second, 500*time.Millisecond
					o.HandlerTimeout = 3 * time.Second
					o.Concurrency, o.MaxInFlight = 4, 24
					o.ReceiveConcurrency, o.MaxReceiveConcurrency = 1, 3
					o.OnFailure = ReleaseNow
					o.ShutdownTimeout = time.Second
				})
				stopWatch := watchInvariants(t, c)
				for range 3 { // restarts release what was held
					stop := started(t, c)
					time.Sleep(40 * time.Second)
					if err := stop(); err != nil {
						t.Fatal(err)
					}
				}
				if checks := stopWatch(); checks < 100 {
					t.Fatalf("expect the invariants checked at least 100 times, got %d", checks)
				}
				if s := c.Stats(); s.Handled == 0 || s.Held == 0 || s.Parked == 0 || s.Failed == 0 {
					t.Fatalf("expect every path taken, got %+v", s)
				}
			})
		})
	}
}

// checkLocked finds each kind of broken invariant: it is the oracle of the
// test above, so it must be able to fail.
func TestRunStateCheckFindsBrokenInvariants(t *testing.T) {
	o := Options{Tuning: Tuning{MaxInFlight: 10, ReceiveConcurrency: 1, MaxReceiveConcurrency: 4}}
	fresh := func() *run {
		r := &run{o: &o, intake: intake{recv: receiveState{target: 1}}, ledger: ledger{tracked: map[string]*inflight{}}}
		r.tracked["a"] = &inflight{id: "a", state: stateRunning}
		r.running = 1
		return r
	}
	if err := fresh().checkLocked(); err != nil {
		t.Fatalf("expect a sound state, got %v", err)
	}
	breaks := map[string]func(r *run){
		"miskeyed":         func(r *run) { r.tracked["b"] = &inflight{id: "c"} },
		"running miscount": func(r *run) { r.running = 2 },
		"queued twice": func(r *run) {
			w := &inflight{id: "w"}
			r.tracked["w"] = w
			r.ready.push(w)
			r.ready.push(w)
			r.busy.Store(2)
		},
		"queued running":    func(r *run) { r.ready.push(r.tracked["a"]); r.busy.Store(1) },
		"busy below queued": func(r *run) { w := &inflight{id: "w"}; r.tracked["w"] = w; r.ready.push(w) },
		"negative reserved": func(r *run) { r.reserved = -1 },
		"over MaxInFlight":  func(r *run) { r.reserved = 10 },
		"target out":        func(r *run) { r.recv.target = 5 },
	}
	for name, br := range breaks {
		r := fresh()
		br(r)
		if err := r.checkLocked(); err == nil {
			t.Errorf("%s: expect a broken invariant found", name)
		}
	}
}
