package sqsfake

import (
	"fmt"
	"time"
)

// add stores a message at the tail of q. Callers hold Server.mu.
func (q *queue) add(m *message) {
	q.seq++
	m.seq = q.seq
	if q.fifo {
		// SequenceNumber: 20 digits, growing per queue, like the service's.
		m.seqNumber = fmt.Sprintf("%020d", uint64(10_000_000_000_000_000_000)+q.seq)
	}
	q.messages = append(q.messages, m)
	q.bySeq[m.seq] = m
	q.expiresBy(m.enqueuedAt.Add(time.Duration(q.attrs.retention) * time.Second))
}

// remove deletes a message. Callers hold Server.mu.
func (q *queue) remove(m *message) {
	if m.deleted {
		return
	}
	m.deleted = true
	q.deleted++
	delete(q.bySeq, m.seq)
	q.compact(false)
}

// compact drops deleted messages once they are at least half the slice, so
// deletes stay O(1) amortised. force drops them now.
func (q *queue) compact(force bool) {
	if !force && (q.deleted < 64 || q.deleted*2 < len(q.messages)) {
		return
	}
	kept := q.messages[:0]
	for _, m := range q.messages {
		if m.deleted {
			delete(q.bySeq, m.seq)
			continue
		}
		kept = append(kept, m)
	}
	clear(q.messages[len(kept):])
	q.messages = kept
	q.deleted = 0
}

// expire drops messages past the retention period and forgets expired dedup
// ids and receive attempts. It scans only when something can have expired:
// nextExpiry is the earliest time anything stored expires. Callers hold
// Server.mu.
func (q *queue) expire(now time.Time) {
	if !q.nextExpiry.IsZero() && now.Before(q.nextExpiry) {
		return
	}
	retention := time.Duration(q.attrs.retention) * time.Second
	var next time.Time
	earliest := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	for _, m := range q.messages {
		if m.deleted {
			continue
		}
		if end := m.enqueuedAt.Add(retention); !now.Before(end) {
			q.remove(m)
		} else {
			earliest(end)
		}
	}
	for k, d := range q.dedup {
		if !now.Before(d.expires) {
			delete(q.dedup, k)
		} else {
			earliest(d.expires)
		}
	}
	for k, a := range q.attempts {
		if !now.Before(a.expires) {
			delete(q.attempts, k)
		} else {
			earliest(a.expires)
		}
	}
	if next.IsZero() {
		next = now.Add(retention) // nothing stored: nothing expires before this
	}
	q.nextExpiry = next
}

// expiresBy lowers nextExpiry to t when something new expires sooner.
// Callers hold Server.mu.
func (q *queue) expiresBy(t time.Time) {
	if q.nextExpiry.IsZero() || t.Before(q.nextExpiry) {
		q.nextExpiry = t
	}
}
