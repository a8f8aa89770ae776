package consumer

// sequencer decides which messages may start and which are given up, for
// the poller and for Lambda alike:
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
type sequencer struct {
	fifo, stopAll bool
	groups        map[string]*group
}

type group struct {
	running int  // messages of the group running (more than one only in one batch)
	failed  bool // one of the running messages failed
	queue   []*Message
}

func newSequencer(fifo, stopAll bool) *sequencer {
	return &sequencer{fifo: fifo, stopAll: stopAll, groups: map[string]*group{}}
}

func (s *sequencer) group(m *Message) *group {
	g := s.groups[s.key(m)]
	if g == nil {
		g = &group{}
		s.groups[s.key(m)] = g
	}
	return g
}

// admit takes a message in arrival order and reports whether it may start
// now. A message that may not start waits until done lets it, or is given up.
func (s *sequencer) admit(m *Message) (start bool) {
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

// admitAll takes one receive's messages as one unit of work and returns
// those that may start with it: every message whose group is not running
// in another unit. The others wait, and start later one by one.
func (s *sequencer) admitAll(msgs []*Message) (start []*Message) {
	if !s.fifo {
		return msgs
	}
	claimed := map[*group]bool{}
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

// done records that m finished, and returns the messages that may start now
// and those given up because m (or a message running with it) failed.
func (s *sequencer) done(m *Message, failed bool) (next, givenUp []*Message) {
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
	next = []*Message{g.queue[0]}
	g.queue = g.queue[1:]
	g.running = 1
	return next, givenUp
}

// key is the sequence a message belongs to: its group, or one sequence for
// the whole batch with stopAll.
func (s *sequencer) key(m *Message) string {
	if s.stopAll {
		return ""
	}
	return m.GroupID()
}

// drain gives up every waiting message (shutdown).
func (s *sequencer) drain() []*Message {
	var out []*Message
	for id, g := range s.groups {
		out = append(out, g.queue...)
		g.queue = nil
		if g.running == 0 {
			delete(s.groups, id)
		}
	}
	return out
}
