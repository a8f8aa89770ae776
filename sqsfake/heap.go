package sqsfake

// indexedHeap is a 4-ary min-heap whose items record their own position, so
// an item can be removed or re-ordered in O(log n) without a search. Each
// entry keeps its sort key beside the item, so ordering never follows a
// pointer: with 100,000 messages in a heap, a push or pop touches a few
// contiguous cache lines per level, and four children per node halve the
// levels of a binary heap. The queue store keeps its messages in several.
type indexedHeap[T comparable] struct {
	items []heapEntry[T]
	key   func(T) heapKey
	pos   func(T) *int // where an item keeps its position; -1 when absent
}

// heapKey orders entries: by a, then by b.
type heapKey struct {
	a int64
	b uint64
}

func (k heapKey) less(o heapKey) bool { return k.a < o.a || (k.a == o.a && k.b < o.b) }

type heapEntry[T any] struct {
	key heapKey
	v   T
}

const heapArity = 4

func (h *indexedHeap[T]) Len() int { return len(h.items) }

// top returns the least item. The heap must not be empty.
func (h *indexedHeap[T]) top() T { return h.items[0].v }

func (h *indexedHeap[T]) contains(x T) bool { return *h.pos(x) >= 0 }

func (h *indexedHeap[T]) push(x T) {
	i := len(h.items)
	h.items = append(h.items, heapEntry[T]{key: h.key(x), v: x})
	*h.pos(x) = i
	h.up(i)
}

func (h *indexedHeap[T]) pop() T {
	x := h.items[0].v
	h.remove(x)
	return x
}

// remove takes x out of the heap; it does nothing if x is absent.
func (h *indexedHeap[T]) remove(x T) {
	i := *h.pos(x)
	if i < 0 {
		return
	}
	last := len(h.items) - 1
	if i != last {
		h.items[i] = h.items[last]
		*h.pos(h.items[i].v) = i
	}
	h.items[last] = heapEntry[T]{}
	h.items = h.items[:last]
	*h.pos(x) = -1
	if i != last {
		h.down(i)
		h.up(i)
	}
}

// fix restores the order after x's key changed.
func (h *indexedHeap[T]) fix(x T) {
	i := *h.pos(x)
	if i < 0 {
		return
	}
	h.items[i].key = h.key(x)
	h.down(i)
	h.up(i)
}

// up moves the entry at i towards the root, shifting parents down into the
// hole rather than swapping, so each level costs one write.
func (h *indexedHeap[T]) up(i int) {
	e := h.items[i]
	for i > 0 {
		parent := (i - 1) / heapArity
		if !e.key.less(h.items[parent].key) {
			break
		}
		h.items[i] = h.items[parent]
		*h.pos(h.items[i].v) = i
		i = parent
	}
	h.items[i] = e
	*h.pos(e.v) = i
}

func (h *indexedHeap[T]) down(i int) {
	e := h.items[i]
	n := len(h.items)
	for {
		first := heapArity*i + 1
		if first >= n {
			break
		}
		least := first
		for c := first + 1; c < first+heapArity && c < n; c++ {
			if h.items[c].key.less(h.items[least].key) {
				least = c
			}
		}
		if !h.items[least].key.less(e.key) {
			break
		}
		h.items[i] = h.items[least]
		*h.pos(h.items[i].v) = i
		i = least
	}
	h.items[i] = e
	*h.pos(e.v) = i
}
