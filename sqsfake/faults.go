package sqsfake

import (
	"maps"
	"time"
)

// Fault describes a failure to inject into matching calls. Faults act on the
// Server, so they reach every client: the in-process Client, SDK clients over
// HTTP, other languages.
//
// A fault with Err fails the call before it takes effect. With AfterApply the
// call takes effect and the caller still sees the failure: the
// acknowledgement was lost, as when a response times out. Latency delays the
// call on the server's clock (a manual clock must be advanced for it to
// pass). Entries makes chosen entries of a batch call fail in Failed[] while
// the rest succeed.
//
// On the wire an API error (ErrInternal, ErrThrottled, a *types error, a
// smithy.APIError) is sent as the service would send it, so the SDK
// classifies and retries it as it would a real one: ErrInternal is an HTTP
// 500, ErrThrottled the throttling shape. An error that is not an API error
// cannot travel over HTTP: the connection is dropped instead (the in-process
// Client returns the error itself from its transport, wrapped by the SDK, so
// errors.Is finds it).
type Fault struct {
	// Op is the operation name ("SendMessageBatch"); "" matches every one.
	Op string
	// Queue is the queue name; "" matches every queue.
	Queue string
	// Times is how many calls the fault affects; 0 means every matching call
	// until the fault is removed.
	Times int
	// Err is the error to return. Nil means ErrInternal, unless the fault
	// only adds Latency, fails Entries, sets Status or drops the connection.
	Err error
	// AfterApply applies the call before failing it.
	AfterApply bool
	// Latency is how long each affected call waits before it runs.
	Latency time.Duration
	// Entries fails batch entries; other entries proceed.
	Entries *EntryFault
	// DropConnection closes the connection instead of answering, as a
	// network failure would: the SDK sees a transport error and retries it.
	// With AfterApply the call took effect first.
	DropConnection bool
	// Status answers with this HTTP status: with Err's error body if Err is
	// set, else with an empty body, as a proxy or load balancer might (the
	// SDK retries 500, 502, 503 and 504).
	Status int
	// CorruptChecksum lets the call take effect and answers with a wrong
	// MD5OfMessageBody (SendMessage, SendMessageBatch, ReceiveMessage), as if
	// the answer was corrupted in transit: the SDK's checksum validation
	// fails the call. A send is then stored though the caller sees an error;
	// received messages are in flight though the caller got none.
	CorruptChecksum bool
	// Match, if set, picks the calls the fault affects among those Op and
	// Queue select, by operation and input (*sqs.SendMessageInput, …): for
	// example only the batch holding a given body.
	Match func(op string, in any) bool
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

// failure is the error a fault makes the call end with.
func (h *FaultHandle) failure() error {
	f := h.fault
	if f.Err == nil && (f.DropConnection || f.Status != 0) {
		return &wireFault{drop: f.DropConnection, status: f.Status}
	}
	err := f.Err
	if err == nil {
		err = ErrInternal
	}
	if f.DropConnection || f.Status != 0 {
		return &wireFault{drop: f.DropConnection, status: f.Status, err: err}
	}
	return err
}

// failsCall reports whether the fault ends the call with an error, as
// opposed to only delaying it, failing batch entries or corrupting its
// answer.
func (h *FaultHandle) failsCall() bool {
	f := h.fault
	return f.Err != nil || f.DropConnection || f.Status != 0 || (f.Latency == 0 && f.Entries == nil && !f.CorruptChecksum)
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

// wireFault asks the wire layer to answer a failed call with a chosen status
// or not at all.
type wireFault struct {
	drop   bool
	status int
	err    error // the error body, or nil for an empty body
}

func (f *wireFault) Error() string {
	switch {
	case f.drop:
		return "sqsfake: injected dropped connection"
	case f.err != nil:
		return f.err.Error()
	}
	return "sqsfake: injected HTTP status"
}

func (f *wireFault) Unwrap() error { return f.err }

// record counts a call and returns the fault that applies to it, if any.
func (s *Server) record(op, queueName string, in any) *FaultHandle {
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
		if f.fault.Match != nil && !f.fault.Match(op, in) {
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

// Calls counts the calls a Server received, faulted ones included. A call
// the SDK retries counts once per attempt, as SQS would bill it.
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
