package sqsfake

import (
	"maps"
	"time"
)

// Fault describes a failure to inject into matching calls.
//
// A fault with Err fails the call before it takes effect. With AfterApply the
// call takes effect and the caller still sees Err: the acknowledgement was
// lost, as when a response times out. Latency delays the call on the server's
// clock (a manual clock must be advanced for it to pass). Entries makes
// chosen entries of a batch call fail in Failed[] while the rest succeed.
type Fault struct {
	// Op is the operation name ("SendMessageBatch"); "" matches every one.
	Op string
	// Queue is the queue name; "" matches every queue.
	Queue string
	// Times is how many calls the fault affects; 0 means every matching call
	// until the fault is removed.
	Times int
	// Err is the error to return. Nil means ErrInternal, unless the fault only
	// adds Latency or fails Entries.
	Err error
	// AfterApply applies the call before returning Err.
	AfterApply bool
	// Latency is how long each affected call waits before it runs.
	Latency time.Duration
	// Entries fails batch entries; other entries proceed.
	Entries *EntryFault
}

// EntryFault makes entries of a batch call fail.
type EntryFault struct {
	// Code is the error code in Failed[]. Default "InternalError".
	Code string
	// SenderFault is reported as is: false marks a failure worth retrying.
	SenderFault bool
	// Match picks entries by position and Id; nil picks every entry.
	Match func(index int, id string) bool
}

// FaultHandle is an injected fault. It is safe for concurrent use.
type FaultHandle struct {
	s     *Server
	fault Fault
	fired int
}

// Inject adds a fault. Faults are tried in the order they were added; the
// first that matches a call and has uses left applies.
func (s *Server) Inject(f Fault) *FaultHandle {
	h := &FaultHandle{s: s, fault: f}
	s.hookMu.Lock()
	s.faults = append(s.faults, h)
	s.hookMu.Unlock()
	return h
}

// Fired returns how many calls the fault affected.
func (h *FaultHandle) Fired() int {
	h.s.hookMu.Lock()
	defer h.s.hookMu.Unlock()
	return h.fired
}

// Remove stops the fault from affecting further calls.
func (h *FaultHandle) Remove() {
	h.s.hookMu.Lock()
	defer h.s.hookMu.Unlock()
	for i, f := range h.s.faults {
		if f == h {
			h.s.faults = append(h.s.faults[:i:i], h.s.faults[i+1:]...)
			return
		}
	}
}

// ClearFaults removes every fault.
func (s *Server) ClearFaults() {
	s.hookMu.Lock()
	s.faults = nil
	s.hookMu.Unlock()
}

func (h *FaultHandle) err() error {
	if h.fault.Err != nil {
		return h.fault.Err
	}
	return ErrInternal
}

// entryFails reports whether the fault fails a batch entry.
func (h *FaultHandle) entryFails(index int, id string) bool {
	return h != nil && h.fault.Entries != nil && (h.fault.Entries.Match == nil || h.fault.Entries.Match(index, id))
}

func (h *FaultHandle) entryCode() string {
	if h.fault.Entries.Code == "" {
		return "InternalError"
	}
	return h.fault.Entries.Code
}

// record counts a call and returns the fault that applies to it, if any.
func (s *Server) record(op, queueName string) *FaultHandle {
	s.hookMu.Lock()
	defer s.hookMu.Unlock()
	s.calls.Op[op]++
	if queueName != "" {
		if s.calls.Queue[queueName] == nil {
			s.calls.Queue[queueName] = map[string]int{}
		}
		s.calls.Queue[queueName][op]++
	}
	for i, f := range s.faults {
		if (f.fault.Op != "" && f.fault.Op != op) || (f.fault.Queue != "" && f.fault.Queue != queueName) {
			continue
		}
		f.fired++
		if f.fault.Times > 0 && f.fired >= f.fault.Times {
			s.faults = append(s.faults[:i:i], s.faults[i+1:]...)
		}
		return f
	}
	return nil
}

// Calls counts the calls a Server received, faulted ones included.
type Calls struct {
	// Op counts calls per operation name.
	Op map[string]int
	// Queue counts calls per queue name, then per operation.
	Queue map[string]map[string]int
}

func newCalls() Calls { return Calls{Op: map[string]int{}, Queue: map[string]map[string]int{}} }

// Total is the number of calls of every operation.
func (c Calls) Total() int {
	n := 0
	for _, v := range c.Op {
		n += v
	}
	return n
}

// Calls returns a snapshot of the call counts.
func (s *Server) Calls() Calls {
	s.hookMu.Lock()
	defer s.hookMu.Unlock()
	out := newCalls()
	maps.Copy(out.Op, s.calls.Op)
	for q, ops := range s.calls.Queue {
		out.Queue[q] = maps.Clone(ops)
	}
	return out
}

// ResetCalls sets every call count to zero.
func (s *Server) ResetCalls() {
	s.hookMu.Lock()
	s.calls = newCalls()
	s.hookMu.Unlock()
}
