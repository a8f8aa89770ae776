package consumer

import (
	"time"
)

// guardMargin covers a receive's round trip: a long poll ends on the
// server up to this long after the wait we asked for.
const guardMargin = time.Second

// busyWait is the long-poll wait of FIFO receives while the queue has been
// returning messages: long enough to be a long poll, short enough that a
// failed message need not wait long for receives that could take its
// group-mates along with it.
const busyWait = time.Second

// fifoGuard keeps a FIFO group's messages from paying for its head's
// failures with their receive counts.
//
// SQS returns the messages behind a group's head in the same receive (as
// many of one group as it can), and locks the group while any of them is in
// flight, so when the head fails they are released too, and the receive
// that brings the head back brings them again: each failure costs each of
// them a receive, without their handler running, and behind a poison
// message they reach maxReceiveCount and are dead-lettered with it. The
// guard makes the head come back alone:
//
//   - when a head fails, its group becomes a suspect, due back when its
//     release delay ends, but never before every receive in flight that asks
//     for more than one message has ended (it could take the group-mates
//     along), so the delay may grow by up to one long-poll wait;
//   - a receive that could still be waiting when a suspect is due asks for
//     one message, or shortens its wait to end before;
//   - a suspect is cleared when a receive returns its group (the head,
//     alone), or a long poll after it was due;
//   - while receives return messages, FIFO long polls wait busyWait, not
//     WaitTime, so a failure need not wait out a 20 s poll.
//
// The group-mates then pay one receive for the first failure of their head,
// not one per failure, as long as this consumer gets the head back. It is
// guarded by run.mu; on standard queues it does nothing.
type fifoGuard struct {
	enabled  bool
	suspects map[string]suspect
	until    []time.Time // per receiver: when its receive for more than one message ends, at the latest
	busy     bool        // the last FIFO receive returned messages
}

type suspect struct {
	due, expires time.Time
}

func newFIFOGuard(fifo bool, receivers int) fifoGuard {
	if !fifo {
		return fifoGuard{}
	}
	return fifoGuard{enabled: true, suspects: map[string]suspect{}, until: make([]time.Time, receivers)}
}

// size returns how many messages receiver idx should ask for, at most n,
// and its wait, at most wait, for a receive starting now.
func (g *fifoGuard) size(idx int, now time.Time, n int, wait time.Duration) (int, time.Duration) {
	if !g.enabled {
		return n, wait
	}
	if g.busy {
		wait = min(wait, busyWait)
	}
	var due time.Time
	for group, s := range g.suspects {
		if !now.Before(s.expires) {
			delete(g.suspects, group)
			continue
		}
		if due.IsZero() || s.due.Before(due) {
			due = s.due
		}
	}
	if n > 1 && !due.IsZero() {
		room := due.Sub(now) - guardMargin
		switch {
		case room >= wait:
		case room >= time.Second:
			wait = room.Truncate(time.Second)
		default:
			n = 1
		}
	}
	if n > 1 {
		g.until[idx] = now.Add(wait + guardMargin)
	}
	return n, wait
}

// retrying records that receiver idx sends its receive again.
func (g *fifoGuard) retrying(idx int, now time.Time, n int, wait time.Duration) {
	if g.enabled && n > 1 {
		g.until[idx] = now.Add(wait + guardMargin)
	}
}

// received records a receive by idx that returned fresh messages.
func (g *fifoGuard) received(idx int, fresh []*inflight) {
	if !g.enabled {
		return
	}
	g.until[idx] = time.Time{}
	g.busy = len(fresh) > 0
	for _, t := range fresh {
		delete(g.suspects, t.group)
	}
}

// failed records the failure of a head of group and returns its release
// delay: delay (negative: left to its visibility, which ends at
// visibleUntil), lengthened to outlast every receive in flight that asks for
// more than one message.
func (g *fifoGuard) failed(group string, now time.Time, delay time.Duration, visibleUntil time.Time) time.Duration {
	if !g.enabled {
		return delay
	}
	due := visibleUntil
	if delay >= 0 {
		due = now.Add(delay)
	}
	latest := due
	for _, u := range g.until {
		if u.After(latest) {
			latest = u
		}
	}
	if latest.After(due) {
		due = latest
		delay = latest.Sub(now).Truncate(time.Second) + time.Second
	}
	g.suspects[group] = suspect{due: due, expires: due.Add(busyWait + 2*guardMargin)}
	return delay
}
