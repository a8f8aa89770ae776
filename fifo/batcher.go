package fifo

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sqskit/sqskit/internal/sqsrule"
)

// BatcherOptions configure a Batcher. Zero values mean the defaults.
type BatcherOptions struct {
	// Linger is how long a partial batch waits for more messages before it
	// is sent. 0 means the default, 10 ms; negative is an error. A full
	// batch (10 entries, or the byte limit) goes at once.
	Linger time.Duration
	// SendConcurrency is how many SendMessageBatch calls may be in flight at
	// once (up to 10 messages each); on FIFO queues no two share a group.
	// 0 means the default, 4; negative is an error. At 10 ms per call, 4
	// calls move up to 4,000 messages a second.
	SendConcurrency int
}

// Batcher gathers messages from concurrent callers into SendMessageBatch
// calls, like the AWS Java SDK's batch manager, with up to SendConcurrency
// calls in flight. On a FIFO queue it keeps each group's order: messages of
// one group are sent in the order their Send calls reached the Batcher, and
// no two batches in flight share a group. When a message fails for good, the
// messages of its group still waiting fail with GroupBlockedError (unless
// the Sender continues groups after failures). On a standard queue nothing
// waits for anything but a free call slot.
//
// A Batcher owns one goroutine, plus one per batch in flight; Close sends
// everything accepted so far and waits for all of them.
type Batcher struct {
	s    *Sender
	opts BatcherOptions

	requests chan *request
	closing  chan struct{}
	stopped  chan struct{}
	once     sync.Once
	ctx      context.Context // for batch calls; cancelled if Close gives up
	cancel   context.CancelFunc
}

type request struct {
	p    *prepared
	done chan Result
}

// NewBatcher starts a Batcher on s. Close it to stop its goroutines.
func (s *Sender) NewBatcher(optFns ...func(*BatcherOptions)) (*Batcher, error) {
	var o BatcherOptions
	for _, fn := range optFns {
		fn(&o)
	}
	switch {
	case o.Linger < 0:
		return nil, fmt.Errorf("%w: Linger %v is negative", ErrConfig, o.Linger)
	case o.SendConcurrency < 0:
		return nil, fmt.Errorf("%w: SendConcurrency %d is negative", ErrConfig, o.SendConcurrency)
	}
	if o.Linger == 0 {
		o.Linger = 10 * time.Millisecond
	}
	if o.SendConcurrency == 0 {
		o.SendConcurrency = 4
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &Batcher{s: s, opts: o, requests: make(chan *request), closing: make(chan struct{}), stopped: make(chan struct{}), ctx: ctx, cancel: cancel}
	go b.dispatch()
	return b, nil
}

// Send queues m for the next batch and waits for its result. Invalid
// messages fail at once. If ctx ends first, Send returns ctx's error; a
// message already handed to a batch may still be sent.
func (b *Batcher) Send(ctx context.Context, m Message) (Result, error) {
	p, err := b.s.prepare(0, &m)
	if err != nil {
		return Result{Err: err}, err
	}
	r := &request{p: p, done: make(chan Result, 1)}
	select {
	case b.requests <- r:
	case <-b.closing:
		return Result{Err: ErrClosed}, ErrClosed
	case <-ctx.Done():
		return Result{Err: ctx.Err()}, ctx.Err()
	}
	select {
	case res := <-r.done:
		return res, res.Err
	case <-ctx.Done():
		return Result{Err: ctx.Err()}, ctx.Err()
	}
}

// Close stops accepting messages, sends every accepted one, and waits for
// the Batcher's goroutines to end. If ctx ends first, batches in flight are
// cancelled (their callers get the error) and Close returns ctx's error
// once every goroutine has ended.
func (b *Batcher) Close(ctx context.Context) error {
	b.once.Do(func() { close(b.closing) })
	select {
	case <-b.stopped:
		b.cancel()
		return nil
	case <-ctx.Done():
		b.cancel()
		<-b.stopped
		return ctx.Err()
	}
}

type batchDone struct {
	batch   []*request
	results []Result
}

// dispatch owns the pending list and the groups in flight.
func (b *Batcher) dispatch() {
	defer close(b.stopped)
	var (
		pending   []*request
		inFlight  = map[string]bool{}
		running   int
		done      = make(chan batchDone)
		wg        sync.WaitGroup
		closing   = b.closing
		isClosing bool
		lingered  bool
		timer     <-chan time.Time
		stopTimer = func() bool { return false }
	)
	defer wg.Wait()
	for {
		for running < b.opts.SendConcurrency {
			batch, rest, full := b.form(pending, inFlight)
			if len(batch) == 0 || (!full && !lingered && !isClosing) {
				break
			}
			pending = rest
			lingered = false
			running++
			for _, r := range batch {
				if r.p.orderGroup != "" {
					inFlight[r.p.orderGroup] = true
				}
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				done <- batchDone{batch: batch, results: b.send(batch)}
			}()
		}
		if isClosing && len(pending) == 0 && running == 0 {
			stopTimer()
			return
		}
		if timer == nil && len(pending) > 0 && !lingered {
			t := time.NewTimer(b.opts.Linger)
			timer, stopTimer = t.C, t.Stop
		}
		select {
		case r := <-b.requests:
			pending = append(pending, r)
		case <-timer:
			timer, lingered = nil, true
		case d := <-done:
			running--
			for i, r := range d.batch {
				delete(inFlight, r.p.orderGroup)
				r.done <- d.results[i]
				if d.results[i].Err != nil && !b.s.opts.ContinueGroupAfterFailure {
					pending = blockGroup(pending, r.p.orderGroup, d.results[i].Err)
				}
			}
		case <-closing:
			closing, isClosing = nil, true
		}
	}
}

// form picks the next batch from pending in arrival order, skipping groups
// in flight and, once a group is skipped, its later messages. full reports
// whether the batch cannot grow.
func (b *Batcher) form(pending []*request, inFlight map[string]bool) (batch, rest []*request, full bool) {
	skipped := map[string]bool{}
	bytes := 0
	for i, r := range pending {
		g := r.p.orderGroup
		if g != "" && (inFlight[g] || skipped[g]) {
			skipped[g] = true
			rest = append(rest, r)
			continue
		}
		if len(batch) == sqsrule.MaxBatchEntries || bytes+r.p.size > b.s.opts.MaxBatchBytes {
			return batch, append(rest, pending[i:]...), true
		}
		batch = append(batch, r)
		bytes += r.p.size
	}
	return batch, rest, len(batch) == sqsrule.MaxBatchEntries
}

// send runs one batch through the Sender's batch logic.
func (b *Batcher) send(batch []*request) []Result {
	results := make([]Result, len(batch))
	run := &batchRun{s: b.s, results: results}
	for i, r := range batch {
		p := *r.p
		p.index = i
		run.queue = append(run.queue, &p)
	}
	run.run(b.ctx)
	return results
}

// blockGroup fails the waiting messages of a group whose message failed.
func blockGroup(pending []*request, group string, cause error) []*request {
	if group == "" {
		return pending
	}
	kept := pending[:0]
	for _, r := range pending {
		if r.p.orderGroup == group {
			err := &GroupBlockedError{GroupID: group, Index: -1, Cause: cause}
			r.done <- Result{Err: err, DeduplicationID: r.p.dedupID}
			continue
		}
		kept = append(kept, r)
	}
	return kept
}
