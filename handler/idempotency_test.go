package handler

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// movingLease is a lease a test moves, as the consumer's heartbeat does.
type movingLease struct {
	mu    sync.Mutex
	until time.Time
}

func (l *movingLease) Until() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.until
}

func (l *movingLease) set(t time.Time) {
	l.mu.Lock()
	l.until = t
	l.mu.Unlock()
}

// failingStore fails the named operation.
type failingStore struct {
	MemoryStore
	failClaim, failComplete bool
}

var errStore = errors.New("store down")

func (s *failingStore) Claim(ctx context.Context, key, token string, now, until time.Time) (Record, bool, error) {
	if s.failClaim {
		return Record{}, false, errStore
	}
	return s.MemoryStore.Claim(ctx, key, token, now, until)
}

func (s *failingStore) Complete(ctx context.Context, key, token string, result []byte, expires time.Time) error {
	if s.failComplete {
		return errStore
	}
	return s.MemoryStore.Complete(ctx, key, token, result, expires)
}

func msg(id, receipt, dedup string) *Message {
	return &Message{ID: id, ReceiptHandle: receipt, Attributes: map[string]string{"MessageGroupId": "g", "MessageDeduplicationId": dedup}}
}

func TestIdempotentRunsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var runs atomic.Int32
		var replayed []byte
		mw, err := Idempotent(&MemoryStore{}, func(o *IdempotencyOptions) {
			o.OnDuplicate = func(_ context.Context, _ *Message, r []byte) { replayed = r }
		})
		if err != nil {
			t.Fatal(err)
		}
		h := mw(func(ctx context.Context, m *Message) error {
			runs.Add(1)
			SetResult(ctx, []byte("reply-"+m.ID))
			return nil
		})
		ctx := WithLease(context.Background(), &movingLease{until: time.Now().Add(30 * time.Second)})
		for i, m := range []*Message{msg("m1", "r1", "d"), msg("m2", "r2", "d"), msg("m1", "r3", "d")} {
			if err := h(ctx, m); err != nil {
				t.Fatalf("message %d: %v", i, err)
			}
		}
		if runs.Load() != 1 || string(replayed) != "reply-m1" {
			t.Errorf("expect one run and the first result replayed, got %d runs and %q", runs.Load(), replayed)
		}
		// The same deduplication id in another group is another message.
		other := msg("m4", "r4", "d")
		other.Attributes["MessageGroupId"] = "h"
		if err := h(ctx, other); err != nil || runs.Load() != 2 {
			t.Errorf("expect a second group's message run, got %d runs, %v", runs.Load(), err)
		}
		// After the TTL the key is forgotten.
		time.Sleep(24*time.Hour + time.Second)
		ctx = WithLease(context.Background(), &movingLease{until: time.Now().Add(30 * time.Second)})
		if err := h(ctx, msg("m5", "r5", "d")); err != nil || runs.Load() != 3 {
			t.Errorf("expect a run after the TTL, got %d runs, %v", runs.Load(), err)
		}
	})
}

func TestIdempotentConcurrentDuplicateIsHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mw, _ := Idempotent(&MemoryStore{})
		release := make(chan struct{})
		var runs atomic.Int32
		h := mw(func(ctx context.Context, m *Message) error {
			runs.Add(1)
			<-release
			return nil
		})
		lease := &movingLease{until: time.Now().Add(30 * time.Second)}
		first := make(chan error)
		go func() { first <- h(WithLease(context.Background(), lease), msg("m1", "r1", "d")) }()
		synctest.Wait()
		err := h(WithLease(context.Background(), &movingLease{until: time.Now().Add(30 * time.Second)}), msg("m2", "r2", "d"))
		d, held := HoldFor(err)
		if !held || d != 30*time.Second {
			t.Errorf("expect the duplicate held until the first's lease ends (30s), got %v", err)
		}
		close(release)
		if err := <-first; err != nil || runs.Load() != 1 {
			t.Errorf("expect one run, got %d, %v", runs.Load(), err)
		}
	})
}

func TestIdempotentFollowsTheLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &MemoryStore{}
		mw, _ := Idempotent(store)
		start := time.Now()
		lease := &movingLease{until: start.Add(30 * time.Second)}
		done := make(chan struct{})
		h := mw(func(ctx context.Context, m *Message) error {
			// The heartbeat extends the lease every 20 s by 30 s, for 2 min.
			for i := 1; i <= 6; i++ {
				time.Sleep(20 * time.Second)
				lease.set(time.Now().Add(30 * time.Second))
			}
			<-done
			return nil
		})
		go func() { _ = h(WithLease(context.Background(), lease), msg("m1", "r1", "d")) }()
		time.Sleep(2*time.Minute + 15*time.Second)
		// A duplicate now, long after the first claim's 30 s, is still held:
		// the record followed the lease.
		err := h(WithLease(context.Background(), &movingLease{until: time.Now().Add(30 * time.Second)}), msg("m2", "r2", "d"))
		if _, held := HoldFor(err); !held {
			t.Errorf("expect the duplicate held while the first runs, got %v", err)
		}
		close(done)
		synctest.Wait()
	})
}

func TestIdempotentReleasesOnFailure(t *testing.T) {
	boom := errors.New("boom")
	outcomes := map[string]error{
		"failure":  boom,
		"escalate": Permanent(boom),
		"hold":     Hold(time.Minute),
	}
	for name, outcome := range outcomes {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mw, _ := Idempotent(&MemoryStore{})
				var runs atomic.Int32
				h := mw(func(context.Context, *Message) error {
					if runs.Add(1) == 1 {
						return outcome
					}
					return nil
				})
				ctx := WithLease(context.Background(), &movingLease{until: time.Now().Add(30 * time.Second)})
				if err := h(ctx, msg("m1", "r1", "d")); err != outcome {
					t.Fatalf("expect the handler's outcome, got %v", err)
				}
				if err := h(ctx, msg("m1", "r2", "d")); err != nil || runs.Load() != 2 {
					t.Errorf("expect the redelivery run, got %d runs, %v", runs.Load(), err)
				}
			})
		})
	}
	t.Run("lease lost", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			mw, _ := Idempotent(&MemoryStore{})
			lost := errors.New("lease lost")
			var runs atomic.Int32
			h := mw(func(ctx context.Context, m *Message) error {
				if runs.Add(1) == 1 {
					<-ctx.Done()
					return context.Cause(ctx)
				}
				return nil
			})
			ctx, cancel := context.WithCancelCause(WithLease(context.Background(), &movingLease{until: time.Now().Add(30 * time.Second)}))
			go cancel(lost)
			if err := h(ctx, msg("m1", "r1", "d")); !errors.Is(err, lost) {
				t.Fatalf("expect the lost lease, got %v", err)
			}
			ctx = WithLease(context.Background(), &movingLease{until: time.Now().Add(30 * time.Second)})
			if err := h(ctx, msg("m1", "r2", "d")); err != nil || runs.Load() != 2 {
				t.Errorf("expect the next delivery run at once, got %d runs, %v", runs.Load(), err)
			}
		})
	})
}

func TestIdempotentStoreFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := WithLease(context.Background(), &movingLease{until: time.Now().Add(30 * time.Second)})
		ok := func(context.Context, *Message) error { return nil }
		mw, _ := Idempotent(&failingStore{failClaim: true})
		if err := mw(ok)(ctx, msg("m", "r", "d")); !errors.Is(err, errStore) || EscalationOf(err) != nil {
			t.Errorf("expect a retried store failure, got %v", err)
		}
		mw, _ = Idempotent(&failingStore{failComplete: true})
		if err := mw(ok)(ctx, msg("m", "r", "d")); !errors.Is(err, errStore) {
			t.Errorf("expect a failure when success cannot be recorded, got %v", err)
		}
		mw, _ = Idempotent(&MemoryStore{})
		lapsed := WithLease(context.Background(), &movingLease{until: time.Now()})
		if err := mw(ok)(lapsed, msg("m", "r", "d")); err == nil {
			t.Errorf("expect a lapsed lease to fail the message")
		}
	})
}

func TestIdempotentWithoutLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &MemoryStore{}
		mw, _ := Idempotent(store, func(o *IdempotencyOptions) { o.InProgress = time.Minute })
		block := make(chan struct{})
		h := mw(func(context.Context, *Message) error { <-block; return nil })
		go func() { _ = h(context.Background(), msg("m1", "r1", "d")) }()
		synctest.Wait()
		err := h(context.Background(), msg("m2", "r2", "d"))
		if d, _ := HoldFor(err); d != time.Minute {
			t.Errorf("expect a hold of InProgress (1m) with no lease, got %v", err)
		}
		// A Lambda's ctx: the lease is the invocation's deadline.
		dctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		err = mw(func(context.Context, *Message) error { return nil })(dctx, msg("m3", "r3", "e"))
		if err != nil {
			t.Fatal(err)
		}
		close(block)
		synctest.Wait()
	})
}

func TestIdempotentConfig(t *testing.T) {
	cases := map[string]func() (Middleware, error){
		"nil store": func() (Middleware, error) { return Idempotent(nil) },
		"negative TTL": func() (Middleware, error) {
			return Idempotent(&MemoryStore{}, func(o *IdempotencyOptions) { o.TTL = -1 })
		},
		"tiny TTL": func() (Middleware, error) {
			return Idempotent(&MemoryStore{}, func(o *IdempotencyOptions) { o.TTL = time.Millisecond })
		},
		"tiny InProgress": func() (Middleware, error) {
			return Idempotent(&MemoryStore{}, func(o *IdempotencyOptions) { o.InProgress = time.Millisecond })
		},
	}
	for name, mk := range cases {
		t.Run(name, func(t *testing.T) {
			if mw, err := mk(); !errors.Is(err, ErrConfig) || mw != nil {
				t.Errorf("expect ErrConfig, got %v", err)
			}
		})
	}
}

func TestDefaultIdempotencyKey(t *testing.T) {
	a, b := msg("m1", "r", "d"), msg("m2", "r", "d")
	b.Attributes["MessageGroupId"] = "h"
	plain := &Message{ID: "m3"}
	ctx := context.Background()
	if DefaultIdempotencyKey(ctx, a) == DefaultIdempotencyKey(ctx, b) {
		t.Errorf("expect one dedup id in two groups to be two keys")
	}
	if k := DefaultIdempotencyKey(ctx, plain); k != "id\x00m3" {
		t.Errorf("expect the message id without a dedup id, got %q", k)
	}
	sns := &Message{ID: "m4", Body: snsFixture}
	env, _ := UnwrapEnvelope(sns)
	if k := DefaultIdempotencyKey(context.WithValue(ctx, envelopeKey{}, env), sns); k != "sns\x0022b80b92-fdea-4c2c-8f9d-bdfb0c7bf324" {
		t.Errorf("expect the SNS MessageId, got %q", k)
	}
	if IdempotencyKey("q1", "k") == IdempotencyKey("q2", "k") || len(IdempotencyKey("", "k")) != 64 {
		t.Errorf("expect namespaced 64-character keys")
	}
}

func TestIdempotentReleasesOnPanic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mw, _ := Idempotent(&MemoryStore{})
		var runs atomic.Int32
		h := mw(func(context.Context, *Message) error {
			if runs.Add(1) == 1 {
				panic("bug")
			}
			return nil
		})
		lease := &movingLease{until: time.Now().Add(30 * time.Second)}
		func() {
			defer func() { _ = recover() }() // the runtime's part
			_ = h(WithLease(context.Background(), lease), msg("m1", "r1", "d"))
		}()
		if err := h(WithLease(context.Background(), lease), msg("m1", "r2", "d")); err != nil || runs.Load() != 2 {
			t.Errorf("expect the claim released by the panic and the redelivery run, got %d runs, %v", runs.Load(), err)
		}
	})
}
