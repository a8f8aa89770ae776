package sqsfake

import "time"

// messages is one queue's stored messages, indexed so that every operation
// touches only the messages it acts on, however many are stored or in
// flight:
//
//   - ready (standard queues): visible messages by sequence, so a receive
//     takes the oldest in O(log n);
//   - groups and avail (FIFO queues): each group's messages in send order,
//     and a heap of the groups that can deliver now (no message in flight,
//     head visible) by the sequence of their head;
//   - timed: delayed and in-flight messages by the time they become
//     visible (see timedLanes), so time passing moves exactly the messages
//     that are due;
//   - age: every message by enqueue time, for retention.
//
// State changes are lazy: tick moves what is due when the queue is next
// used, so the Server needs no goroutine. Callers hold Server.mu.
type messages struct {
	fifo   bool
	bySeq  map[uint64]*message
	ready  indexedHeap[*message]
	groups map[string]*group
	avail  indexedHeap[*group]
	timed  timedLanes
	age    indexedHeap[*message]

	visible, inFlight, delayed int
}

// group is a FIFO message group: its messages in send order, and how many of
// them are in flight (any one locks the group).
type group struct {
	id         string
	head, tail *message
	inFlight   int
	availPos   int
	picking    bool // held by a picker: availability is settled when it is done
}

func newMessages(fifo bool) *messages {
	ms := &messages{fifo: fifo, bySeq: map[uint64]*message{}}
	ms.ready = indexedHeap[*message]{
		key: func(m *message) heapKey { return heapKey{b: m.seq} },
		pos: func(m *message) *int { return &m.readyPos },
	}
	ms.timed = newTimedLanes()
	ms.age = indexedHeap[*message]{
		key: func(m *message) heapKey { return heapKey{a: m.enqueuedAt.UnixNano(), b: m.seq} },
		pos: func(m *message) *int { return &m.agePos },
	}
	if fifo {
		ms.groups = map[string]*group{}
		ms.avail = indexedHeap[*group]{
			key: func(g *group) heapKey { return heapKey{b: g.head.seq} },
			pos: func(g *group) *int { return &g.availPos },
		}
	}
	return ms
}

func (ms *messages) len() int { return len(ms.bySeq) }

// add stores m, which has its seq and visibleAt set.
func (ms *messages) add(m *message, now time.Time) {
	ms.bySeq[m.seq] = m
	ms.age.push(m)
	if ms.fifo {
		g := ms.groups[m.groupID]
		if g == nil {
			g = &group{id: m.groupID, availPos: -1}
			ms.groups[m.groupID] = g
		}
		m.group = g
		m.prev = g.tail
		if g.tail != nil {
			g.tail.next = m
		} else {
			g.head = m
		}
		g.tail = m
	}
	if m.visibleAt.After(now) {
		ms.enter(m, stateDelayed, now)
	} else {
		ms.enter(m, stateVisible, now)
	}
}

// remove forgets m: deleted, purged, expired or moved.
func (ms *messages) remove(m *message) {
	if m.deleted {
		return
	}
	m.deleted = true
	ms.leave(m)
	delete(ms.bySeq, m.seq)
	ms.age.remove(m)
	if g := m.group; g != nil {
		if m.prev != nil {
			m.prev.next = m.next
		} else {
			g.head = m.next
		}
		if m.next != nil {
			m.next.prev = m.prev
		} else {
			g.tail = m.prev
		}
		m.prev, m.next = nil, nil
		if g.head == nil {
			delete(ms.groups, g.id)
		}
		ms.settle(g)
	}
}

// leave takes m out of the indexes of its current state.
func (ms *messages) leave(m *message) {
	switch m.state {
	case stateDelayed:
		ms.timed.remove(m)
		ms.delayed--
	case stateInFlight:
		ms.timed.remove(m)
		ms.inFlight--
		if m.group != nil {
			m.group.inFlight--
		}
	case stateVisible:
		ms.visible--
		ms.ready.remove(m)
	}
}

// enter puts m into the indexes of state s; a delayed or in-flight message
// waits from now.
func (ms *messages) enter(m *message, s msgState, now time.Time) {
	m.state = s
	switch s {
	case stateDelayed:
		ms.timed.push(m, now)
		ms.delayed++
	case stateInFlight:
		ms.timed.push(m, now)
		ms.inFlight++
		if m.group != nil {
			m.group.inFlight++
		}
	case stateVisible:
		ms.visible++
		if !ms.fifo {
			ms.ready.push(m)
		}
	}
	if m.group != nil {
		ms.settle(m.group)
	}
}

// settle keeps a FIFO group in avail exactly when it can deliver: nothing of
// it in flight and its head visible.
func (ms *messages) settle(g *group) {
	if g.picking {
		return
	}
	can := g.inFlight == 0 && g.head != nil && g.head.state == stateVisible
	switch {
	case can && !ms.avail.contains(g):
		ms.avail.push(g)
	case can:
		ms.avail.fix(g) // the head may have changed
	case ms.avail.contains(g):
		ms.avail.remove(g)
	}
}

// tick makes every delayed or in-flight message whose time has come visible.
func (ms *messages) tick(now time.Time) {
	for ms.timed.Len() > 0 && !ms.timed.top().visibleAt.After(now) {
		m := ms.timed.top()
		ms.leave(m)
		ms.enter(m, stateVisible, now)
	}
}

// expire removes messages enqueued more than retention ago.
func (ms *messages) expire(now time.Time, retention time.Duration) {
	for ms.age.Len() > 0 && !ms.age.top().enqueuedAt.Add(retention).After(now) {
		ms.remove(ms.age.top())
	}
}

// next returns when the earliest delayed or in-flight message becomes
// visible, or the zero time.
func (ms *messages) next() time.Time {
	if ms.timed.Len() == 0 {
		return time.Time{}
	}
	return ms.timed.top().visibleAt
}

// deliver puts a visible message in flight until now+visibility.
func (ms *messages) deliver(m *message, now time.Time, visibility time.Duration) {
	ms.leave(m)
	m.visibleAt = now.Add(visibility)
	ms.enter(m, stateInFlight, now)
}

// setVisibleAt changes when a received message becomes visible: a time
// after now keeps (or puts) it in flight until then, any other time makes it
// visible at once.
func (ms *messages) setVisibleAt(m *message, at, now time.Time) {
	ms.leave(m)
	m.visibleAt = at
	if at.After(now) {
		ms.enter(m, stateInFlight, now)
	} else {
		ms.enter(m, stateVisible, now)
	}
}

// redelay applies a new queue delay to every message not yet received, as a
// FIFO queue's DelaySeconds change does.
func (ms *messages) redelay(delay time.Duration, now time.Time) {
	for _, m := range ms.bySeq {
		if m.receiveCount > 0 || m.state == stateInFlight {
			continue
		}
		ms.leave(m)
		m.visibleAt = m.sentAt.Add(delay)
		if m.visibleAt.After(now) {
			ms.enter(m, stateDelayed, now)
		} else {
			ms.enter(m, stateVisible, now)
		}
	}
}

// picker yields receivable messages in delivery order: on a standard queue
// the oldest visible first; on a FIFO queue, merged by sequence, each
// group's run of visible messages from its head, for groups with nothing in
// flight. The caller must deliver or remove every message next returns before
// calling next again, and call done at the end.
type picker struct {
	ms      *messages
	pending *message   // FIFO: the successor of the last message returned
	local   []*message // FIFO: candidates from groups already taken from, a min-heap by seq
	popped  []*group
}

func (ms *messages) picker() *picker { return &picker{ms: ms} }

func (p *picker) next() *message {
	ms := p.ms
	if !ms.fifo {
		if ms.ready.Len() == 0 {
			return nil
		}
		return ms.ready.top()
	}
	if m := p.pending; m != nil {
		p.pending = nil
		if !m.deleted && m.state == stateVisible {
			p.pushLocal(m)
		}
	}
	var m *message
	switch {
	case len(p.local) > 0 && (ms.avail.Len() == 0 || p.local[0].seq < ms.avail.top().head.seq):
		m = p.popLocal()
	case ms.avail.Len() > 0:
		g := ms.avail.pop()
		g.picking = true
		p.popped = append(p.popped, g)
		m = g.head
	default:
		return nil
	}
	p.pending = m.next
	return m
}

// done settles the groups the picker took from.
func (p *picker) done() {
	for _, g := range p.popped {
		g.picking = false
		if g.head != nil {
			p.ms.settle(g)
		}
	}
}

func (p *picker) pushLocal(m *message) {
	p.local = append(p.local, m)
	for i := len(p.local) - 1; i > 0; {
		parent := (i - 1) / 2
		if p.local[parent].seq <= p.local[i].seq {
			break
		}
		p.local[i], p.local[parent] = p.local[parent], p.local[i]
		i = parent
	}
}

func (p *picker) popLocal() *message {
	top := p.local[0]
	last := len(p.local) - 1
	p.local[0] = p.local[last]
	p.local = p.local[:last]
	for i := 0; ; {
		least := i
		if l := 2*i + 1; l < last && p.local[l].seq < p.local[least].seq {
			least = l
		}
		if r := 2*i + 2; r < last && p.local[r].seq < p.local[least].seq {
			least = r
		}
		if least == i {
			break
		}
		p.local[i], p.local[least] = p.local[least], p.local[i]
		i = least
	}
	return top
}
