// Package dispatch holds the rules the consuming side applies the same way
// in the long-poller (package consumer) and in the Lambda adapter (package
// handler): which messages may start (FIFO order), how a handler is called
// so that a panic is a failure, and which successes a FIFO batch holds back.
// It is generic over the message type, so both packages share it without
// depending on each other's internals, and lean (standard library only).
package dispatch

// Grouped is a message with a FIFO group (or "").
type Grouped interface {
	comparable
	GroupID() string
}

// Sequencer decides which messages may start and which are given up:
//
//   - on standard queues every message may start at once;
//   - on FIFO queues one message per group runs at a time, in arrival order
//     (with a BatchHandler, one receive's messages of a group run together,
//     in order, inside one call); when one fails, the group's waiting
//     messages are given up (not handled), so nothing of the group
//     overtakes the failed one;
//   - with stopAll, the literal rule of Lambda's FIFO event source, the
//     whole batch is one sequence in arrival order, and the first failure
//     gives up everything after it.
//
// It is not safe for concurrent use; callers serialise access.
type Sequencer[M Grouped] struct {
	fifo, stopAll bool
	groups        map[string]*group[M]
}

type group[M Grouped] struct {
	running int  // messages of the group running (more than one only in one batch)
	failed  bool // one of the running messages failed
	queue   []M
}

// NewSequencer returns a Sequencer for a FIFO queue or not.
func NewSequencer[M Grouped](fifo, stopAll bool) *Sequencer[M] {
	return &Sequencer[M]{fifo: fifo, stopAll: stopAll, groups: map[string]*group[M]{}}
}

func (s *Sequencer[M]) group(m M) *group[M] {
	g := s.groups[s.key(m)]
	if g == nil {
		g = &group[M]{}
		s.groups[s.key(m)] = g
	}
	return g
}

// Admit takes a message in arrival order and reports whether it may start
// now. A message that may not start waits until Done lets it, or is given
// up.
func (s *Sequencer[M]) Admit(m M) (start bool) {
	if !s.fifo {
		return true
	}
	g := s.group(m)
	if g.running > 0 || len(g.queue) > 0 {
		g.queue = append(g.queue, m)
		return false
	}
	g.running = 1
	return true
}

// AdmitAll takes one receive's messages as one unit of work and returns
// those that may start with it: every message whose group is not running
// in another unit. The others wait, and start later one by one.
func (s *Sequencer[M]) AdmitAll(msgs []M) (start []M) {
	if !s.fifo {
		return msgs
	}
	claimed := map[*group[M]]bool{}
	for _, m := range msgs {
		g := s.group(m)
		if !claimed[g] && (g.running > 0 || len(g.queue) > 0) {
			g.queue = append(g.queue, m)
			continue
		}
		claimed[g] = true
		g.running++
		start = append(start, m)
	}
	return start
}

// Done records that m finished, and returns the messages that may start now
// and those given up because m (or a message running with it) failed.
func (s *Sequencer[M]) Done(m M, failed bool) (next, givenUp []M) {
	if !s.fifo {
		return nil, nil
	}
	g := s.groups[s.key(m)]
	if g == nil || g.running == 0 {
		return nil, nil
	}
	g.running--
	g.failed = g.failed || failed
	if g.running > 0 {
		return nil, nil // its batch-mates of the group are still settling
	}
	if g.failed {
		givenUp, g.queue = g.queue, nil
		g.failed = false
	}
	if len(g.queue) == 0 {
		delete(s.groups, s.key(m))
		return nil, givenUp
	}
	next = []M{g.queue[0]}
	g.queue = g.queue[1:]
	g.running = 1
	return next, givenUp
}

// key is the sequence a message belongs to: its group, or one sequence for
// the whole batch with stopAll.
func (s *Sequencer[M]) key(m M) string {
	if s.stopAll {
		return ""
	}
	return m.GroupID()
}

// Drain gives up every waiting message (shutdown).
func (s *Sequencer[M]) Drain() []M {
	var out []M
	for id, g := range s.groups {
		out = append(out, g.queue...)
		g.queue = nil
		if g.running == 0 {
			delete(s.groups, id)
		}
	}
	return out
}
