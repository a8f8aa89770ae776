package sqsfake

import "time"

// timedLanes holds messages that become visible at a known time (delayed or
// in flight), so that time passing touches exactly the messages that are
// due, and adding, moving or removing one costs the same at any depth.
//
// Messages are kept in lanes, one per wait (the delay or visibility timeout
// a message was given): the server's clock never goes back, so within a lane
// the messages are appended in the order they become visible. A small heap
// of lanes, by the time of each lane's first message, says what is due next.
// There are as many lanes as distinct waits in use, a handful in practice.
type timedLanes struct {
	lanes map[time.Duration]*lane
	due   indexedHeap[*lane] // non-empty lanes by their head's visibleAt
	n     int
}

type lane struct {
	wait       time.Duration
	head, tail *message
	pos        int
}

func newTimedLanes() timedLanes {
	return timedLanes{
		lanes: map[time.Duration]*lane{},
		due: indexedHeap[*lane]{
			key: func(l *lane) heapKey { return heapKey{a: l.head.visibleAt.UnixNano(), b: l.head.seq} },
			pos: func(l *lane) *int { return &l.pos },
		},
	}
}

// timedBefore orders messages by visibleAt, then by sequence.
func timedBefore(a, b *message) bool {
	if a.visibleAt.Equal(b.visibleAt) {
		return a.seq < b.seq
	}
	return a.visibleAt.Before(b.visibleAt)
}

func (t *timedLanes) Len() int { return t.n }

// top returns the message that becomes visible first. t must not be empty.
func (t *timedLanes) top() *message { return t.due.top().head }

// push adds m, whose visibleAt is set, waiting from now.
func (t *timedLanes) push(m *message, now time.Time) {
	wait := m.visibleAt.Sub(now)
	l := t.lanes[wait]
	if l == nil {
		l = &lane{wait: wait, pos: -1}
		t.lanes[wait] = l
	}
	// Append at the tail; walk back only if the clock was set back or the
	// message's wait counts from an earlier time (a retroactive delay).
	after := l.tail
	for after != nil && timedBefore(m, after) {
		after = after.tprev
	}
	m.lane, m.tprev = l, after
	if after == nil {
		m.tnext = l.head
		l.head = m
	} else {
		m.tnext = after.tnext
		after.tnext = m
	}
	if m.tnext != nil {
		m.tnext.tprev = m
	} else {
		l.tail = m
	}
	t.n++
	switch {
	case !t.due.contains(l):
		t.due.push(l)
	case l.head == m:
		t.due.fix(l)
	}
}

// remove takes m out; it does nothing if m is not held.
func (t *timedLanes) remove(m *message) {
	l := m.lane
	if l == nil {
		return
	}
	wasHead := l.head == m
	if m.tprev != nil {
		m.tprev.tnext = m.tnext
	} else {
		l.head = m.tnext
	}
	if m.tnext != nil {
		m.tnext.tprev = m.tprev
	} else {
		l.tail = m.tprev
	}
	m.lane, m.tprev, m.tnext = nil, nil, nil
	t.n--
	switch {
	case l.head == nil:
		t.due.remove(l)
		delete(t.lanes, l.wait)
	case wasHead:
		t.due.fix(l)
	}
}
