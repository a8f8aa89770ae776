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

// run handles msgs and returns each one's outcome, nil for success. A
// message is not started (ErrNotStarted) when an earlier message of its FIFO
// group failed (with stopAll: any earlier message), or when ctx's deadline
// is closer than the margin.
func (b *batchRun) run(ctx context.Context, msgs []*Message) []error {
	errs := make([]error, len(msgs))
	index := make(map[*Message]int, len(msgs))
	seq := newSequencer(b.fifo, b.stopAll)
	work := make(chan *Message, len(msgs))
	for i, m := range msgs {
		index[m] = i
		if seq.admit(m) {
			work <- m
		}
	}
	var (
		mu        sync.Mutex
		remaining = len(msgs)
	)
	if remaining == 0 {
		return errs
	}
	// settle records m's outcome and hands on what the sequencer releases;
	// finish also ends the workers once everything is settled. Callers hold
	// mu.
	var settle func(m *Message, err error)
	finish := func(m *Message, err error) {
		settle(m, err)
		if remaining == 0 {
			close(work)
		}
	}
	settle = func(m *Message, err error) {
		errs[index[m]] = err
		remaining--
		if err != nil {
			b.hooks.failed(m, err)
		}
		next, givenUp := seq.done(m, err != nil)
		for _, g := range givenUp {
			settle(g, fmt.Errorf("%w: an earlier message failed (group %q)", ErrNotStarted, g.GroupID()))
		}
		for _, n := range next {
			work <- n
		}
	}
	var wg sync.WaitGroup
	for range max(1, min(b.concurrency, len(msgs))) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for m := range work {
				mu.Lock()
				reason := b.notStartable(ctx)
				if reason != "" {
					finish(m, fmt.Errorf("%w: %s", ErrNotStarted, reason))
					mu.Unlock()
					continue
				}
				mu.Unlock()
				start := time.Now()
				err := invoke(ctx, b.handler, m)
				if err == nil {
					b.hooks.handled(m, time.Since(start))
				} else {
					b.logFailure(ctx, m, err)
				}
				mu.Lock()
				finish(m, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errs
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

func (b *batchRun) logFailure(ctx context.Context, m *Message, err error) {
	attrs := []slog.Attr{slog.String("message_id", m.ID), slog.String("error", err.Error())}
	if p, ok := err.(*PanicError); ok {
		attrs = append(attrs, slog.String("stack", string(p.Stack)))
	}
	b.logger.LogAttrs(ctx, slog.LevelWarn, "consumer: message failed", attrs...)
}
