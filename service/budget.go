package service

import (
	"context"
	"slices"
	"sync"
)

// Budget is a number of slots, such as handler calls running at once,
// shared by weight among several consumers: give each consumer a Share of
// it as its consumer.Options.Budget.
//
// Each Share is guaranteed its part of the slots: weight ÷ the sum of every
// Share's weight × slots, rounded down, at least 1 (so with more Shares than
// slots not every guarantee can hold). A Share may borrow idle slots beyond
// its part. Nothing is taken back from a Share that borrowed: the guarantee
// is that when a slot frees up, a waiting Share below its part gets it
// first. Among several such Shares, or when none is below its part, the one
// holding the fewest slots per weight gets it, and between equals the one
// that has waited longest: when both want more than there is, a Share
// ends up holding about twice the slots of one with half its weight.
//
// A Budget and its Shares are safe for concurrent use. A Budget's zero
// value is not usable: call NewBudget.
type Budget struct {
	mu          sync.Mutex // protects everything below and every Share's fields
	slots       int
	inUse       int
	totalWeight int
	shares      []*Share
	waiting     int    // waiters over every Share; 0 whenever a slot is free
	arrivals    uint64 // numbers waiters in arrival order
}

// maxSlots and maxWeight keep slots × weight within 32 bits.
const (
	maxSlots  = 1 << 20
	maxWeight = 1000
)

// NewBudget returns a Budget of n slots; n is clamped to 1 … 1,048,576.
func NewBudget(n int) *Budget {
	return &Budget{slots: min(max(n, 1), maxSlots)}
}

// Share is a claim on a Budget with a weight. Its Acquire and Release
// match consumer.Budget.
type Share struct {
	budget  *Budget
	weight  int
	inUse   int
	waiters []*waiter // in arrival order
}

type waiter struct {
	ready   chan struct{} // closed when granted
	granted bool
	arrival uint64
}

// Share adds a Share of the given weight, clamped to 1 … 1000, to b. It
// lowers every other Share's guaranteed part; Shares last as long as b.
func (b *Budget) Share(weight int) *Share {
	s := &Share{budget: b, weight: min(max(weight, 1), maxWeight)}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.shares = append(b.shares, s)
	b.totalWeight += s.weight
	return s
}

// Acquire takes one slot, waiting for one if none is free. If ctx ends
// first, or has ended, it returns ctx's error and holds no slot.
func (s *Share) Acquire(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b := s.budget
	b.mu.Lock()
	if b.inUse < b.slots { // nobody waits while a slot is free
		b.inUse++
		s.inUse++
		b.mu.Unlock()
		return nil
	}
	b.arrivals++
	w := &waiter{ready: make(chan struct{}), arrival: b.arrivals}
	s.waiters = append(s.waiters, w)
	b.waiting++
	b.mu.Unlock()

	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if w.granted {
		// Granted while ctx ended: pass the slot on as if never acquired.
		s.releaseLocked()
	} else {
		s.waiters = slices.DeleteFunc(s.waiters, func(x *waiter) bool { return x == w })
		b.waiting--
	}
	return ctx.Err()
}

// Release gives back a slot taken by Acquire. A Release with no slot held
// by the Share is ignored rather than a panic, so counts never go below
// zero.
func (s *Share) Release() {
	s.budget.mu.Lock()
	defer s.budget.mu.Unlock()
	s.releaseLocked()
}

func (s *Share) releaseLocked() {
	b := s.budget
	if s.inUse == 0 {
		return
	}
	s.inUse--
	b.inUse--
	next := b.nextLocked()
	if next == nil {
		return
	}
	w := next.waiters[0]
	next.waiters = next.waiters[1:]
	b.waiting--
	next.inUse++
	b.inUse++
	w.granted = true
	close(w.ready)
}

// nextLocked returns the waiting Share to serve first, or nil.
func (b *Budget) nextLocked() *Share {
	if b.waiting == 0 {
		return nil
	}
	var best *Share
	for _, s := range b.shares {
		if len(s.waiters) > 0 && (best == nil || b.servedBefore(s, best)) {
			best = s
		}
	}
	return best
}

// servedBefore reports whether waiting Share s comes before waiting Share t.
func (b *Budget) servedBefore(s, t *Share) bool {
	if sBelow, tBelow := s.inUse < b.guaranteed(s), t.inUse < b.guaranteed(t); sBelow != tBelow {
		return sBelow
	}
	// s.inUse/s.weight < t.inUse/t.weight, without division.
	if l, r := s.inUse*t.weight, t.inUse*s.weight; l != r {
		return l < r
	}
	return s.waiters[0].arrival < t.waiters[0].arrival
}

// guaranteed is s's part of the slots.
func (b *Budget) guaranteed(s *Share) int {
	return max(1, s.weight*b.slots/b.totalWeight)
}
