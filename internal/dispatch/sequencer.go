// Package dispatch holds the rules the consuming side applies the same way
// in the long-poller (package consumer) and in the Lambda adapter (package
// handler): which messages may start (FIFO order), how a handler is called
// so that a panic is a failure, and which successes a FIFO batch holds back.
// It is generic over the message type, so both packages share it without
// depending on each other's internals, and lean (standard library only).
package dispatch

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
// Messages are known by their ids (unique among those it holds) and
// groups. It is not safe for concurrent use; callers serialise access.
type Sequencer struct {
	fifo, stopAll bool
	groups        map[string]*group
}

type group struct {
	running int  // messages of the group running (more than one only in one batch)
	failed  bool // one of the running messages failed
	queue   []string
}

// NewSequencer returns a Sequencer for a FIFO queue or not.
func NewSequencer(fifo, stopAll bool) *Sequencer {
	return &Sequencer{fifo: fifo, stopAll: stopAll, groups: map[string]*group{}}
}

func (s *Sequencer) group(groupID string) *group {
	key := s.key(groupID)
	g := s.groups[key]
	if g == nil {
		g = &group{}
		s.groups[key] = g
	}
	return g
}

// Admit takes message id of groupID in arrival order and reports whether
// it may start now. A message that may not start waits until Done lets
// it, or is given up.
func (s *Sequencer) Admit(id, groupID string) (start bool) {
	if !s.fifo {
		return true
	}
	g := s.group(groupID)
	if g.running > 0 || len(g.queue) > 0 {
		g.queue = append(g.queue, id)
		return false
	}
	g.running = 1
	return true
}

// AdmitAll takes one receive's messages (ids and their groups) as one unit
// of work and returns the indices of those that may start with it: every
// message whose group is not running in another unit. The others wait, and
// start later one by one.
func (s *Sequencer) AdmitAll(ids, groupIDs []string) (start []int) {
	if !s.fifo {
		start = make([]int, len(ids))
		for i := range start {
			start[i] = i
		}
		return start
	}
	claimed := map[*group]bool{}
	for i, id := range ids {
		g := s.group(groupIDs[i])
		if !claimed[g] && (g.running > 0 || len(g.queue) > 0) {
			g.queue = append(g.queue, id)
			continue
		}
		claimed[g] = true
		g.running++
		start = append(start, i)
	}
	return start
}

// Done records that a message of groupID finished, and returns the id of
// the message that may start now ("" for none) and those given up because
// it (or a message running with it) failed.
func (s *Sequencer) Done(groupID string, failed bool) (next string, givenUp []string) {
	if !s.fifo {
		return "", nil
	}
	key := s.key(groupID)
	g := s.groups[key]
	if g == nil || g.running == 0 {
		return "", nil
	}
	g.running--
	g.failed = g.failed || failed
	if g.running > 0 {
		return "", nil // its batch-mates of the group are still settling
	}
	if g.failed {
		givenUp, g.queue = g.queue, nil
		g.failed = false
	}
	if len(g.queue) == 0 {
		delete(s.groups, key)
		return "", givenUp
	}
	next = g.queue[0]
	g.queue = g.queue[1:]
	g.running = 1
	return next, givenUp
}

// key is the sequence a group belongs to: itself, or one sequence for the
// whole batch with stopAll.
func (s *Sequencer) key(groupID string) string {
	if s.stopAll {
		return ""
	}
	return groupID
}

// Drain gives up every waiting message (shutdown) and returns their ids.
func (s *Sequencer) Drain() []string {
	var out []string
	for key, g := range s.groups {
		out = append(out, g.queue...)
		g.queue = nil
		if g.running == 0 {
			delete(s.groups, key)
		}
	}
	return out
}
