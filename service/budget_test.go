package service_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sqskit/sqskit/service"
)

// consumerBudget is consumer.Options.Budget's interface.
type consumerBudget interface {
	Acquire(ctx context.Context) error
	Release()
}

var _ consumerBudget = (*service.Share)(nil)

// holder acquires slots from a Share in goroutines and counts those it holds.
type holder struct {
	share *service.Share
	held  atomic.Int32
}

// want starts n goroutines that each acquire one slot and hold it until
// release is closed.
func (h *holder) want(n int, release <-chan struct{}) {
	for range n {
		go func() {
			if err := h.share.Acquire(context.Background()); err != nil {
				panic(err)
			}
			h.held.Add(1)
			<-release
			h.held.Add(-1)
			h.share.Release()
		}()
	}
}

// A Share that borrowed every slot gives them up, as they free, to a Share
// below its guaranteed part first, then to the one holding the fewest
// slots per weight.
func TestBudgetServesTheShareBelowItsPartFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := service.NewBudget(4)
		heavy := &holder{share: b.Share(3)} // guaranteed 3 of 4
		light := &holder{share: b.Share(1)} // guaranteed 1 of 4

		lightRelease := make([]chan struct{}, 4)
		for i := range lightRelease {
			lightRelease[i] = make(chan struct{})
			light.want(1, lightRelease[i])
		}
		synctest.Wait()
		if got := light.held.Load(); got != 4 {
			t.Fatalf("expect the idle budget lent whole to light: 4, got %d", got)
		}
		done := make(chan struct{})
		defer close(done)
		heavy.want(4, done)
		light.want(2, done)
		synctest.Wait()

		// heavy is below its part (0 < 3) until it holds 3; then light,
		// holding 0 and below its part (1), comes first.
		wantHeavy := []int32{1, 2, 3, 3}
		wantLight := []int32{3, 2, 1, 1}
		for i := range lightRelease {
			close(lightRelease[i])
			synctest.Wait()
			if h, l := heavy.held.Load(), light.held.Load(); h != wantHeavy[i] || l != wantLight[i] {
				t.Fatalf("after release %d: expect heavy %d light %d, got %d and %d", i+1, wantHeavy[i], wantLight[i], h, l)
			}
		}
	})
}

// Above their parts, freed slots go to the Share holding fewest per weight,
// so borrowed slots end up split by weight.
func TestBudgetLendsBorrowedSlotsByWeight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := service.NewBudget(8)
		filler := &holder{share: b.Share(1000)}
		fill := make(chan struct{})
		filler.want(8, fill)
		synctest.Wait()

		twice := &holder{share: b.Share(2)}
		once := &holder{share: b.Share(1)}
		done := make(chan struct{})
		defer close(done)
		twice.want(8, done)
		once.want(8, done)
		synctest.Wait()
		close(fill) // all 8 slots free up; only twice and once wait
		synctest.Wait()
		// Both shares' guarantee is 1 (2×8÷1003 and 1×8÷1003, at least 1).
		if tw, on := twice.held.Load(), once.held.Load(); tw+on != 8 || tw < 5 || tw > 6 {
			t.Errorf("expect 8 slots split about 2:1, got %d and %d", tw, on)
		}
	})
}

// A waiter whose ctx ends gets ctx's error and takes no slot; the slot
// that frees later goes to the next waiter.
func TestBudgetAcquireHonoursCtx(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := service.NewBudget(1)
		s := b.Share(1)
		if err := s.Acquire(context.Background()); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := s.Acquire(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("expect %v, got %v", context.DeadlineExceeded, err)
		}
		got := make(chan error, 1)
		go func() { got <- s.Acquire(context.Background()) }()
		synctest.Wait()
		s.Release()
		if err := <-got; err != nil {
			t.Fatalf("expect the freed slot, got %v", err)
		}
		s.Release()

		cancelled, cancel2 := context.WithCancel(context.Background())
		cancel2()
		if err := s.Acquire(cancelled); !errors.Is(err, context.Canceled) {
			t.Errorf("expect %v from an ended ctx, got %v", context.Canceled, err)
		}
		assertFree(t, b, 1)
	})
}

// A Release with nothing held is ignored: it lends no extra slot.
func TestBudgetReleaseWithoutAcquireIsIgnored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := service.NewBudget(2)
		s := b.Share(1)
		s.Release()
		s.Release()
		assertFree(t, b, 2)
	})
}

// assertFree checks that exactly n slots of b are free.
func assertFree(t *testing.T, b *service.Budget, n int) {
	t.Helper()
	s := b.Share(1)
	for i := range n {
		if err := s.Acquire(context.Background()); err != nil {
			t.Fatalf("slot %d: %v", i, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := s.Acquire(ctx); err == nil {
		t.Errorf("expect %d free slots, got more", n)
		s.Release()
	}
	for range n {
		s.Release()
	}
}

// Waiters whose ctx ends while slots are being released: whichever wins,
// no slot is leaked or made up. Run with -race.
func TestBudgetCancelRacingRelease(t *testing.T) {
	b := service.NewBudget(3)
	shares := []*service.Share{b.Share(1), b.Share(2), b.Share(3)}
	var wg sync.WaitGroup
	for i := range 1000 {
		s := shares[i%len(shares)]
		wg.Go(func() {
			ctx, cancel := context.WithCancel(context.Background())
			go cancel() // ends ctx at a random moment
			if s.Acquire(ctx) == nil {
				s.Release()
			}
		})
	}
	wg.Wait()
	synctest.Test(t, func(t *testing.T) { assertFree(t, b, 3) })
}

// With a slot free, Acquire and Release allocate nothing: a handler call
// pays no garbage for the Budget.
func TestBudgetFreeSlotAllocatesNothing(t *testing.T) {
	s := service.NewBudget(1).Share(1)
	ctx := context.Background()
	if allocs := testing.AllocsPerRun(100, func() {
		if err := s.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		s.Release()
	}); allocs != 0 {
		t.Errorf("expect 0 allocations, got %v", allocs)
	}
}

// An Acquire and Release with a slot free costs no allocation.
func BenchmarkBudgetAcquireRelease(b *testing.B) {
	s := service.NewBudget(1).Share(1)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Acquire(ctx); err != nil {
			b.Fatal(err)
		}
		s.Release()
	}
}

// Contended: one slot for every parallel goroutine, so most wait.
func BenchmarkBudgetAcquireReleaseContended(b *testing.B) {
	budget := service.NewBudget(1)
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		s := budget.Share(1)
		for pb.Next() {
			if err := s.Acquire(ctx); err != nil {
				b.Fatal(err)
			}
			s.Release()
		}
	})
}
