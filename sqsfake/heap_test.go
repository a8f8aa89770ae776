package sqsfake

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

type heapItem struct {
	k   int64
	pos int
}

// The heap keeps order and positions through random pushes, removals and
// key changes.
func TestIndexedHeap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	h := indexedHeap[*heapItem]{
		key: func(x *heapItem) heapKey { return heapKey{a: x.k} },
		pos: func(x *heapItem) *int { return &x.pos },
	}
	var live []*heapItem
	for step := range 4000 {
		switch op := rng.IntN(4); {
		case op < 2 || len(live) == 0:
			x := &heapItem{k: rng.Int64N(1000), pos: -1}
			h.push(x)
			live = append(live, x)
		case op == 2:
			i := rng.IntN(len(live))
			h.remove(live[i])
			if live[i].pos != -1 {
				t.Fatalf("step %d: a removed item keeps position %d", step, live[i].pos)
			}
			live = slices.Delete(live, i, i+1)
		default:
			x := live[rng.IntN(len(live))]
			x.k = rng.Int64N(1000)
			h.fix(x)
		}
		if h.Len() != len(live) {
			t.Fatalf("step %d: expect %d items, got %d", step, len(live), h.Len())
		}
		for i, e := range h.items {
			if e.v.pos != i {
				t.Fatalf("step %d: item at %d records %d", step, i, e.v.pos)
			}
			if i > 0 && e.key.less(h.items[(i-1)/heapArity].key) {
				t.Fatalf("step %d: heap order broken at %d", step, i)
			}
		}
	}
	var prev int64 = -1
	for h.Len() > 0 {
		x := h.pop()
		if x.k < prev {
			t.Fatalf("popped %d after %d", x.k, prev)
		}
		prev = x.k
	}
}

// The lanes always yield the message that becomes visible first, through
// random waits, removals and a clock that only moves forward, and a message
// given a wait counted from an earlier time still lands in order.
func TestTimedLanes(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	lanes := newTimedLanes()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var live []*message
	for step := range 4000 {
		switch op := rng.IntN(5); {
		case op < 3 || len(live) == 0:
			m := newMessage()
			m.seq = uint64(step)
			m.visibleAt = now.Add(time.Duration(rng.IntN(4)) * time.Second) // four lanes
			if op == 0 {
				m.visibleAt = m.visibleAt.Add(-time.Duration(rng.IntN(3)) * time.Second) // counted from earlier
			}
			lanes.push(m, now)
			live = append(live, m)
		case op == 3:
			i := rng.IntN(len(live))
			lanes.remove(live[i])
			live = slices.Delete(live, i, i+1)
		default:
			now = now.Add(time.Duration(rng.IntN(500)) * time.Millisecond)
		}
		if lanes.Len() != len(live) {
			t.Fatalf("step %d: expect %d, got %d", step, len(live), lanes.Len())
		}
		if len(live) > 0 {
			first := slices.MinFunc(live, func(a, b *message) int {
				if timedBefore(a, b) {
					return -1
				}
				if timedBefore(b, a) {
					return 1
				}
				return 0
			})
			if lanes.top() != first {
				t.Fatalf("step %d: expect top seq %d, got %d", step, first.seq, lanes.top().seq)
			}
		}
	}
}
