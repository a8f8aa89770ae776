package sqsfake

// indexedHeap is a binary min-heap whose items record their own position, so
// an item can be removed or re-ordered in O(log n) without a search. The
// queue store keeps its messages in several of them.
type indexedHeap[T comparable] struct {
	items []T
	less  func(a, b T) bool
	pos   func(T) *int // where an item keeps its position; -1 when absent
}

func (h *indexedHeap[T]) Len() int { return len(h.items) }

// top returns the least item. The heap must not be empty.
func (h *indexedHeap[T]) top() T { return h.items[0] }

func (h *indexedHeap[T]) contains(x T) bool { return *h.pos(x) >= 0 }

func (h *indexedHeap[T]) push(x T) {
	*h.pos(x) = len(h.items)
	h.items = append(h.items, x)
	h.up(len(h.items) - 1)
}

func (h *indexedHeap[T]) pop() T {
	x := h.items[0]
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
		h.swap(i, last)
	}
	var zero T
	h.items[last] = zero
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
	h.down(i)
	h.up(i)
}

func (h *indexedHeap[T]) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !h.less(h.items[i], h.items[parent]) {
			return
		}
		h.swap(i, parent)
		i = parent
	}
}

func (h *indexedHeap[T]) down(i int) {
	n := len(h.items)
	for {
		least := i
		if l := 2*i + 1; l < n && h.less(h.items[l], h.items[least]) {
			least = l
		}
		if r := 2*i + 2; r < n && h.less(h.items[r], h.items[least]) {
			least = r
		}
		if least == i {
			return
		}
		h.swap(i, least)
		i = least
	}
}

func (h *indexedHeap[T]) swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	*h.pos(h.items[i]) = i
	*h.pos(h.items[j]) = j
}
