package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// inflight is a message held by the consumer, from receipt until it is
// deleted or released. Fields are guarded by run.mu.
type inflight struct {
	msg          *Message
	handle       string    // the latest receipt handle
	received     time.Time // the latest receive, for the 12-hour cap
	visibleUntil time.Time
	deleting     bool
	cancel       context.CancelFunc // the handler's ctx, once started
	lost         error              // lease lost
}

// run is the state of one Run.
type run struct {
	c        *Consumer
	h        *Hooks
	log      *slog.Logger
	apiCtx   context.Context // API calls, alive through shutdown
	mu       sync.Mutex
	tracked  map[string]*inflight
	seq      *sequencer
	slots    chan struct{}  // a token per held message
	ready    chan *inflight // messages that may start, in order
	deletes  chan *inflight
	stopping chan struct{} // closed at shutdown: no handler starts after it
	hctx     context.Context
	hcancel  context.CancelFunc
	handlers sync.WaitGroup
	fatalMu  sync.Mutex
	fatal    error
	stopPoll context.CancelFunc
}

// Run receives and handles messages until ctx is done or a receive fails for
// good (the queue does not exist, access is denied), whose error it returns.
// On the way out it stops receiving, releases messages not yet started,
// lets running handlers finish for up to ShutdownTimeout (then cancels their
// ctx), keeps their visibility extended, flushes deletes, and returns once
// every goroutine it started has ended.
func (c *Consumer) Run(ctx context.Context) error {
	if !c.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer c.running.Store(false)
	o := &c.opts
	apiCtx, apiCancel := context.WithCancel(context.WithoutCancel(ctx))
	defer apiCancel()
	hctx, hcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer hcancel()
	r := &run{
		c: c, h: &o.Hooks, log: o.Logger, apiCtx: apiCtx,
		tracked: map[string]*inflight{}, seq: newSequencer(c.fifo, o.StopOnFirstFailure),
		slots: make(chan struct{}, o.MaxInFlight), ready: make(chan *inflight, o.MaxInFlight),
		deletes: make(chan *inflight), stopping: make(chan struct{}), hctx: hctx, hcancel: hcancel,
	}
	pollCtx, stopPoll := context.WithCancel(ctx)
	defer stopPoll()
	r.stopPoll = stopPoll

	var background, pollers, workers sync.WaitGroup
	for range o.Concurrency {
		workers.Add(1)
		go func() { defer workers.Done(); r.work() }()
	}
	deleterDone := make(chan struct{})
	background.Add(1)
	go func() { defer background.Done(); defer close(deleterDone); r.deleter() }()
	heartbeatStop := make(chan struct{})
	background.Add(1)
	go func() { defer background.Done(); r.heartbeat(heartbeatStop) }()
	for range o.Pollers {
		pollers.Add(1)
		go func() { defer pollers.Done(); r.poll(pollCtx) }()
	}
	r.log.LogAttrs(ctx, slog.LevelInfo, "consumer: started", slog.String("queue", c.queueURL))

	<-pollCtx.Done()
	pollers.Wait()
	r.shutdown()
	close(r.ready) // every message has settled: nothing more can start
	workers.Wait()
	close(r.deletes) // and nothing more can succeed
	<-deleterDone
	close(heartbeatStop)
	background.Wait()
	r.log.LogAttrs(ctx, slog.LevelInfo, "consumer: stopped", slog.String("queue", c.queueURL))
	r.fatalMu.Lock()
	defer r.fatalMu.Unlock()
	return r.fatal
}

// stop ends Run with a final error.
func (r *run) stop(err error) {
	r.fatalMu.Lock()
	if r.fatal == nil {
		r.fatal = err
	}
	r.fatalMu.Unlock()
	r.stopPoll()
}

// shutdown releases what has not started and waits for running handlers,
// cancelling them after ShutdownTimeout.
func (r *run) shutdown() {
	r.mu.Lock()
	close(r.stopping)
	waiting := r.seq.drain()
	r.mu.Unlock()
	r.giveUp(waiting, fmt.Errorf("%w: the consumer is shutting down", ErrNotStarted))

	done := make(chan struct{})
	go func() { r.handlers.Wait(); close(done) }()
	timer := time.NewTimer(r.c.opts.ShutdownTimeout)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		r.log.LogAttrs(r.apiCtx, slog.LevelWarn, "consumer: shutdown timeout, cancelling running handlers")
		r.hcancel()
		<-done
	}
}

// accept takes the messages of one receive. They enter the sequencer
// together, before any of them can start, so a failure cannot let a later
// message of the same group from the same receive run first. A message
// already held (redelivered on a standard queue after its visibility
// lapsed) is not handled twice: the held copy switches to the newest
// receipt handle.
func (r *run) accept(msgs []*Message, now time.Time) {
	vis := r.c.opts.VisibilityTimeout
	var fresh, starts []*inflight
	redelivered := 0
	r.mu.Lock()
	for _, m := range msgs {
		if t, held := r.tracked[m.ID]; held {
			t.handle, t.received, t.visibleUntil = m.ReceiptHandle, now, now.Add(vis)
			redelivered++
			r.log.LogAttrs(r.apiCtx, slog.LevelDebug, "consumer: redelivered while held; using the new receipt handle", slog.String("message_id", m.ID))
			continue
		}
		t := &inflight{msg: m, handle: m.ReceiptHandle, received: now, visibleUntil: now.Add(vis)}
		r.tracked[m.ID] = t
		fresh = append(fresh, t)
		if r.seq.admit(m) {
			starts = append(starts, t)
		}
	}
	r.mu.Unlock()
	for range redelivered {
		<-r.slots
	}
	for _, t := range fresh {
		r.c.stats.received.Add(1)
		r.c.stats.inFlight.Add(1)
		r.h.received(t.msg)
	}
	for _, t := range starts {
		r.start(t)
	}
}

// start queues t for a worker. The queue holds at most MaxInFlight
// messages, as many as can be held, so it never blocks.
func (r *run) start(t *inflight) {
	r.handlers.Add(1)
	r.ready <- t
}

// work runs handlers, in the order messages became ready.
func (r *run) work() {
	for t := range r.ready {
		r.handle(t)
		r.handlers.Done()
	}
}

// handle runs t's handler, unless shutdown began or its lease is gone.
func (r *run) handle(t *inflight) {
	r.mu.Lock()
	select {
	case <-r.stopping:
		r.mu.Unlock()
		r.finish(t, fmt.Errorf("%w: the consumer is shutting down", ErrNotStarted), 0, false)
		return
	default:
	}
	if t.lost != nil {
		r.mu.Unlock()
		r.finish(t, t.lost, 0, false)
		return
	}
	ctx, cancel := context.WithCancel(r.hctx)
	t.cancel = cancel
	r.mu.Unlock()
	began := time.Now()
	err := invoke(ctx, r.c.opts.Handler, t.msg)
	cancel()
	r.finish(t, err, time.Since(began), true)
}

// finish settles a message after its handler (or instead of it) and starts
// what the sequencer lets start.
func (r *run) finish(t *inflight, err error, took time.Duration, ran bool) {
	r.mu.Lock()
	lost := t.lost
	if lost != nil && err == nil {
		err = lost // the handler succeeded too late: not deleted
	}
	next, givenUp := r.seq.done(t.msg, err != nil)
	if err == nil {
		t.deleting = true
	}
	starts := make([]*inflight, 0, len(next))
	for _, m := range next {
		starts = append(starts, r.tracked[m.ID])
	}
	r.mu.Unlock()

	switch {
	case err == nil:
		r.c.stats.handled.Add(1)
		r.h.handled(t.msg, took)
		r.deletes <- t
	case lost != nil:
		r.c.stats.failed.Add(1)
		r.h.failed(t.msg, err)
		r.untrack(t) // the lease is gone: nothing to release
	case !ran:
		// Never handled (shutdown): no failure of the handler, visible now.
		r.c.stats.failed.Add(1)
		r.h.failed(t.msg, err)
		r.release([]*inflight{t}, 0)
	default:
		r.c.stats.failed.Add(1)
		r.h.failed(t.msg, err)
		r.logFailure(t.msg, err)
		r.release([]*inflight{t}, r.failureDelay(t.msg, err))
	}
	if len(givenUp) > 0 {
		r.giveUp(givenUp, fmt.Errorf("%w: an earlier message of group %q failed", ErrNotStarted, t.msg.GroupID()))
	}
	for _, s := range starts {
		r.start(s)
	}
}

func (r *run) logFailure(m *Message, err error) {
	attrs := []slog.Attr{slog.String("message_id", m.ID), slog.String("error", err.Error())}
	var p *PanicError
	if errors.As(err, &p) {
		attrs = append(attrs, slog.String("stack", string(p.Stack)))
	}
	r.log.LogAttrs(r.apiCtx, slog.LevelWarn, "consumer: message failed", attrs...)
}

// giveUp releases messages that will not be handled, visible now, in order.
func (r *run) giveUp(msgs []*Message, cause error) {
	if len(msgs) == 0 {
		return
	}
	r.mu.Lock()
	ts := make([]*inflight, 0, len(msgs))
	for _, m := range msgs {
		ts = append(ts, r.tracked[m.ID])
	}
	r.mu.Unlock()
	for _, t := range ts {
		r.c.stats.failed.Add(1)
		r.h.failed(t.msg, cause)
	}
	r.release(ts, 0)
}

// failureDelay is when a failed message should be visible again; negative
// means leave it to its visibility timeout.
func (r *run) failureDelay(m *Message, err error) time.Duration {
	if d, ok := retryDelay(err); ok {
		return d
	}
	switch r.c.opts.OnFailure {
	case ReleaseNow:
		return 0
	case LeaveToTimeout:
		return -1
	}
	d := r.c.opts.Retry.Delay(max(m.ReceiveCount()-1, 0), 0)
	if d < 0 {
		return 0 // Stop: no more retries in place; let it come back now
	}
	return d
}

// release makes messages visible after delay (negative: untouched) and stops
// holding them. They leave the tracked set before the call, so a receive
// that races the release sees a new message, not a redelivery of a held one.
func (r *run) release(ts []*inflight, delay time.Duration) {
	r.mu.Lock()
	for _, t := range ts {
		r.forgetLocked(t)
	}
	r.mu.Unlock()
	if delay >= 0 {
		secs := int32(min(delay, r.c.opts.MaxExtension).Round(time.Second) / time.Second)
		failed := r.changeVisibility(ts, func(*inflight) int32 { return secs })
		for i, t := range ts {
			if failed[i] == nil {
				r.c.stats.released.Add(1)
				r.h.released(t.msg, time.Duration(secs)*time.Second)
			}
		}
	}
	for range ts {
		r.freeSlot()
	}
}

// untrack stops holding t and frees its place.
func (r *run) untrack(t *inflight) {
	r.mu.Lock()
	r.forgetLocked(t)
	r.mu.Unlock()
	r.freeSlot()
}

// forgetLocked removes t from the tracked set and ends its handler's ctx.
// Callers hold r.mu.
func (r *run) forgetLocked(t *inflight) {
	if r.tracked[t.msg.ID] == t {
		delete(r.tracked, t.msg.ID)
	}
	if t.cancel != nil {
		t.cancel()
	}
}

func (r *run) freeSlot() {
	r.c.stats.inFlight.Add(-1)
	<-r.slots
}

// changeVisibility sets the visibility of ts, ten per call, and returns each
// one's error (nil when changed).
func (r *run) changeVisibility(ts []*inflight, seconds func(*inflight) int32) []error {
	errs := make([]error, len(ts))
	for start := 0; start < len(ts); start += 10 {
		chunk := ts[start:min(start+10, len(ts))]
		entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, len(chunk))
		r.mu.Lock()
		for i, t := range chunk {
			entries[i] = types.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(t.handle), VisibilityTimeout: seconds(t)}
		}
		r.mu.Unlock()
		out, err := r.c.client.ChangeMessageVisibilityBatch(r.apiCtx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(r.c.queueURL), Entries: entries})
		for i := range chunk {
			errs[start+i] = err
		}
		if err != nil {
			r.log.LogAttrs(r.apiCtx, slog.LevelWarn, "consumer: change visibility failed", slog.String("error", err.Error()))
			continue
		}
		for _, f := range out.Failed {
			if i, convErr := strconv.Atoi(aws.ToString(f.Id)); convErr == nil && i >= 0 && i < len(chunk) {
				errs[start+i] = &entryError{code: aws.ToString(f.Code), message: aws.ToString(f.Message), senderFault: f.SenderFault}
			}
		}
	}
	return errs
}

// entryError is a batch entry's failure.
type entryError struct {
	code, message string
	senderFault   bool
}

func (e *entryError) Error() string { return e.code + ": " + e.message }
