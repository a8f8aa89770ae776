package consumer

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// batchRun handles one batch of messages (a Lambda invocation) with the
// sequencer's rules, a concurrency limit and a deadline margin.
type batchRun struct {
	handler     Handler
	concurrency int
	margin      time.Duration
	fifo        bool
	stopAll     bool
	logger      *slog.Logger
	hooks       *Hooks
}

// batchState is one invocation's progress, guarded by mu.
type batchState struct {
	b        *batchRun
	msgs     []*Message
	position map[*Message]int
	mu       sync.Mutex
	cond     *sync.Cond
	seq      *sequencer
	ready    fifoQueue[int]
	errs     []error
	settled  []bool
	left     int
	over     bool          // the invocation returned: late outcomes are dropped
	finished bool          // allDone is closed
	allDone  chan struct{} // closed when every message is settled
	workers  sync.WaitGroup
}

// run handles msgs and returns each one's outcome, nil for success. A
// message is not started (ErrNotStarted) when an earlier message of its FIFO
// group failed (with stopAll: any earlier message), or when ctx's deadline
// is closer than the margin. A handler that panics or calls runtime.Goexit
// fails its message (and the worker is replaced). run returns when every
// message is settled, or when ctx is done: messages then still running or
// waiting are failed, and a handler still running is left to return on its
// own.
func (b *batchRun) run(ctx context.Context, msgs []*Message) []error {
	s := &batchState{
		b: b, msgs: msgs, seq: newSequencer(b.fifo, b.stopAll),
		errs: make([]error, len(msgs)), settled: make([]bool, len(msgs)), left: len(msgs), allDone: make(chan struct{}),
	}
	if len(msgs) == 0 {
		return s.errs
	}
	s.cond = sync.NewCond(&s.mu)
	s.position = make(map[*Message]int, len(msgs))
	for i, m := range msgs {
		s.position[m] = i
		if s.seq.admit(m) {
			s.ready.push(i)
		}
	}
	for range max(1, min(b.concurrency, len(msgs))) {
		s.workers.Add(1)
		go s.work(ctx)
	}
	select {
	case <-s.allDone:
		s.workers.Wait()
	case <-ctx.Done():
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range msgs {
		if !s.settled[i] {
			s.settleLocked(i, fmt.Errorf("%w: the invocation ended before it finished", ErrNotStarted))
		}
	}
	s.over = true
	s.cond.Broadcast()
	return append([]error(nil), s.errs...)
}

// work runs messages as they become ready, until all are settled.
func (s *batchState) work(ctx context.Context) {
	defer s.workers.Done()
	for {
		s.mu.Lock()
		for s.ready.len() == 0 && s.left > 0 && !s.over {
			s.cond.Wait()
		}
		if s.ready.len() == 0 {
			s.mu.Unlock()
			return
		}
		i := s.ready.pop()
		if reason := s.b.notStartable(ctx); reason != "" {
			s.settleLocked(i, fmt.Errorf("%w: %s", ErrNotStarted, reason))
			s.mu.Unlock()
			continue
		}
		s.mu.Unlock()
		s.handle(ctx, i)
	}
}

// handle runs message i's handler and settles it. If the handler calls
// runtime.Goexit, the message fails and a new worker takes this one's place.
func (s *batchState) handle(ctx context.Context, i int) {
	m := s.msgs[i]
	returned := false
	defer func() {
		if returned {
			return
		}
		s.b.logger.LogAttrs(ctx, slog.LevelWarn, "consumer: handler called runtime.Goexit", slog.String("message_id", m.ID))
		s.settle(i, ErrHandlerExited)
		s.workers.Add(1)
		go s.work(ctx)
	}()
	start := time.Now()
	err := invoke(ctx, s.b.handler, m)
	returned = true
	if err == nil {
		s.b.hooks.handled(m, time.Since(start))
	} else {
		s.b.logFailure(ctx, m, err)
	}
	s.settle(i, err)
}

func (s *batchState) settle(i int, err error) {
	s.mu.Lock()
	s.settleLocked(i, err)
	s.mu.Unlock()
}

// settleLocked records message i's outcome once, hands on what the
// sequencer releases, and gives up what it stops. Callers hold s.mu.
func (s *batchState) settleLocked(i int, err error) {
	if s.settled[i] || s.over {
		return
	}
	s.settled[i] = true
	s.errs[i] = err
	s.left--
	m := s.msgs[i]
	if err != nil {
		s.b.hooks.failed(m, err)
	}
	next, givenUp := s.seq.done(m, err != nil)
	for _, g := range givenUp {
		s.settleLocked(s.index(g), fmt.Errorf("%w: an earlier message failed (group %q)", ErrNotStarted, g.GroupID()))
	}
	for _, n := range next {
		s.ready.push(s.index(n))
	}
	if s.left == 0 && !s.finished {
		s.finished = true
		close(s.allDone)
	}
	s.cond.Broadcast()
}

// index finds a message's position in the batch.
func (s *batchState) index(m *Message) int { return s.position[m] }

func (b *batchRun) notStartable(ctx context.Context) string {
	if ctx.Err() != nil {
		return "the invocation ended"
	}
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < b.margin {
		return "the invocation's deadline is near"
	}
	return ""
}

func (b *batchRun) logFailure(ctx context.Context, m *Message, err error) {
	attrs := []slog.Attr{slog.String("message_id", m.ID), slog.String("error", err.Error())}
	if p, ok := err.(*PanicError); ok {
		attrs = append(attrs, slog.String("stack", string(p.Stack)))
	}
	b.logger.LogAttrs(ctx, slog.LevelWarn, "consumer: message failed", attrs...)
}
