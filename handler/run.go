package handler

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/sqskit/sqskit/internal/dispatch"
)

// batchRun handles one invocation's messages with the sequencer's rules, a
// concurrency limit and a deadline margin.
type batchRun struct {
	inv         *invocation
	handler     Handler
	concurrency int
	margin      time.Duration
	stopAll     bool
	logger      *slog.Logger
}

// batchState is one invocation's progress, guarded by mu.
type batchState struct {
	b        *batchRun
	msgs     []*Message
	position map[string]int // message id → index
	mu       sync.Mutex
	cond     *sync.Cond
	seq      *dispatch.Sequencer
	ready    []int
	errs     []error
	settled  []bool
	left     int
	over     bool          // the invocation returned: late outcomes are dropped
	finished bool          // allDone is closed
	allDone  chan struct{} // closed when every message is settled
	workers  sync.WaitGroup
}

// run handles the invocation's messages and returns each one's outcome, nil
// for success. A message is not started (ErrNotStarted) when an earlier
// message of its FIFO group failed (with stopAll: any earlier message), or
// when ctx's deadline is closer than the margin. A handler that panics or
// calls runtime.Goexit fails its message (and the worker is replaced). run
// returns when every message is settled, or when ctx is done: messages then
// still running or waiting are failed, and a handler still running is left
// to return on its own.
func (b *batchRun) run(ctx context.Context) []error {
	msgs := b.inv.msgs
	s := &batchState{
		b: b, msgs: msgs, seq: dispatch.NewSequencer(b.inv.fifo, b.stopAll),
		errs: make([]error, len(msgs)), settled: make([]bool, len(msgs)), left: len(msgs), allDone: make(chan struct{}),
	}
	if len(msgs) == 0 {
		return s.errs
	}
	s.cond = sync.NewCond(&s.mu)
	s.position = make(map[string]int, len(msgs))
	for i, id := range b.inv.ids {
		s.position[id] = i
		if s.seq.Admit(id, b.inv.groups[i]) {
			s.ready = append(s.ready, i)
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
			s.settleLocked(i, fmt.Errorf("%w: the invocation ended before it finished", ErrNotStarted), 0, false)
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
		for len(s.ready) == 0 && s.left > 0 && !s.over {
			s.cond.Wait()
		}
		if len(s.ready) == 0 {
			s.mu.Unlock()
			return
		}
		i := s.ready[0]
		s.ready = s.ready[1:]
		if reason := s.b.notStartable(ctx); reason != "" {
			s.settleLocked(i, fmt.Errorf("%w: %s", ErrNotStarted, reason), 0, false)
			s.mu.Unlock()
			continue
		}
		s.mu.Unlock()
		s.handle(ctx, i)
	}
}

// handle runs message i's handler in the message's ctx (a child of the
// invocation's ctx) and settles it. If the handler calls runtime.Goexit, the
// message fails and a new worker takes this one's place.
func (s *batchState) handle(ctx context.Context, i int) {
	m, mctx, id := s.msgs[i], s.b.inv.ctxs[i], s.b.inv.ids[i]
	start := time.Now()
	returned := false
	defer func() {
		if returned {
			return
		}
		s.b.logger.LogAttrs(mctx, slog.LevelWarn, "handler: handler called runtime.Goexit", slog.String("message_id", id))
		s.settle(i, ErrHandlerExited, time.Since(start), true)
		s.workers.Add(1)
		go s.work(ctx)
	}()
	err := dispatch.Invoke(mctx, s.b.handler, m, panicked)
	returned = true
	took := time.Since(start)
	if err = s.b.inv.apply(ctx, i, err); err != nil {
		s.b.logFailure(mctx, id, err)
	}
	s.settle(i, err, took, true)
}

func (s *batchState) settle(i int, err error, took time.Duration, ran bool) {
	s.mu.Lock()
	s.settleLocked(i, err, took, ran)
	s.mu.Unlock()
}

// settleLocked records message i's outcome once, hands on what the
// sequencer releases, and gives up what it stops. Callers hold s.mu.
func (s *batchState) settleLocked(i int, err error, took time.Duration, ran bool) {
	if s.settled[i] || s.over {
		return
	}
	s.settled[i] = true
	s.errs[i] = err
	s.left--
	group := s.b.inv.groups[i]
	s.b.inv.settle(i, err, took, ran)
	next, givenUp := s.seq.Done(group, err != nil)
	for _, id := range givenUp {
		s.settleLocked(s.position[id], fmt.Errorf("%w: an earlier message failed (group %q)", ErrNotStarted, group), 0, false)
	}
	if next != "" {
		s.ready = append(s.ready, s.position[next])
	}
	if s.left == 0 && !s.finished {
		s.finished = true
		close(s.allDone)
	}
	s.cond.Broadcast()
}

func (b *batchRun) notStartable(ctx context.Context) string {
	if ctx.Err() != nil {
		return "the invocation ended"
	}
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < b.margin {
		return "the invocation's deadline is near"
	}
	return ""
}

func (b *batchRun) logFailure(ctx context.Context, id string, err error) {
	attrs := []slog.Attr{slog.String("message_id", id), slog.String("error", err.Error())}
	if p := asPanic(err); p != nil {
		attrs = append(attrs, slog.String("stack", string(p.Stack)))
	}
	b.logger.LogAttrs(ctx, slog.LevelWarn, "handler: message failed", attrs...)
}
