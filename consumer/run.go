package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/internal/ctxkey"
	"github.com/sqskit/sqskit/internal/dispatch"
	"github.com/sqskit/sqskit/internal/sqserr"
	"github.com/sqskit/sqskit/internal/telemetry"
	"github.com/sqskit/sqskit/internal/wait"
)

// shutdownGrace is how long Run may take past ShutdownTimeout: it waits
// this long, after cancelling handlers at the shutdown timeout, for their
// goroutines to return before it returns without them, and gives up SQS
// calls still on their way this long after the shutdown timeout.
const shutdownGrace = time.Second

// msgState is where a held message is.
type msgState uint8

const (
	stateWaiting  msgState = iota // received, not started
	stateRunning                  // its handler runs
	stateDeleting                 // handled or parked; its delete is queued or in flight
	stateParking                  // escalated; its send to the parking queue is in flight
)

// inflight is a message held by the consumer, from receipt until it is
// deleted or released. Fields are guarded by run.mu.
type inflight struct {
	msg     *handler.Message // &message: the handler's, which it may write to
	message handler.Message  // in the same allocation
	ctx     context.Context  // the message's: its handler's and hooks' parent
	span    telemetry.Span   // its process span, when tracing is on
	// The consumer's own copies, never read from msg once a handler may
	// have it: its id (the key of run.tracked), FIFO group and receive count.
	id, group    string
	receives     int
	handle       string    // the latest receipt handle
	received     time.Time // the latest receive, for the 12-hour cap
	visibleUntil time.Time
	state        msgState
	pushed       bool // queued for a worker (counted in run.busy) before it settled
	probe        bool // the circuit breaker's probe; set before it is queued
	settled      bool // the outcome is decided; a second settle is ignored
	extending    bool // an extension is in flight
	cancel       context.CancelCauseFunc
	lost         error // lease lost
	// original is the message as received, what a park sends (the handler
	// may have written to msg); kept only when there is a parking queue.
	original     handler.Message
	parkedReason string   // set once parked: its delete reports Parked
	lease        leaseCtx // its handler's parent ctx, in the same allocation
}

// run is the state of one Run, in three parts by concern: intake (what
// receives may take), ledger (the messages held and the work they wait
// for) and settlement (what is on its way out). One lock, mu, guards the
// three, so a message moves between them atomically; each part states its
// invariants, and checkLocked (run by the tests) verifies them.
type run struct {
	c       *Consumer
	o       *Options // the Consumer's options with the visibility resolved
	obs     *observer
	log     *slog.Logger
	apiCtx  context.Context // API calls, alive through shutdown
	pollCtx context.Context // done when receiving stops
	hctx    context.Context // parent of every handler's ctx
	hcancel context.CancelCauseFunc

	mu sync.Mutex // guards intake, ledger and settlement's fields below
	intake
	ledger
	settlement

	visKnown chan struct{} // closed once o.VisibilityTimeout and HeartbeatInterval are set
	visErr   error         // set before visKnown closes: they could not be

	brk *breaker // nil without Options.Breaker
	// calling[i] is when receiver i's call started (UnixNano), 0 between
	// calls: Status finds a call SQS has stopped answering.
	calling []atomic.Int64

	fatalMu  sync.Mutex
	fatal    error
	stopPoll context.CancelFunc
}

// intake is what receives may take. Invariants: reserved ≥ 0; the places
// in use, len(tracked) + reserved + releasing, never exceed MaxInFlight
// (a receive that returns more than it reserved releases the rest at once,
// untracked); ReceiveConcurrency ≤ recv.target ≤ MaxReceiveConcurrency.
type intake struct {
	reserved  int // places reserved by receives in flight
	recv      receiveState
	guard     fifoGuard  // FIFO: keeps a failed head's group-mates from paying receives
	pollDone  bool       // receiving has stopped
	draining  bool       // Drain: receiving stops at the first empty receive
	placeCond *sync.Cond // receivers wait for places
	turnCond  *sync.Cond // receivers above the target wait for their turn
	// paused: a pauser holds the Consumer, and no receive starts but the
	// circuit breaker's probe (one message, when probe is set and no
	// other pauser holds it: pausedByOthers).
	paused, pausedByOthers, probe bool
}

// ledger is the messages held and the work they wait for. Invariants:
// every tracked message is keyed by its id; running counts the tracked
// messages running and not yet settled; a message is queued for a worker
// (ready, or in units) at most once, only while waiting, and then counted
// in busy; after shutdown began (stopping) nothing new starts.
type ledger struct {
	tracked  map[string]*inflight
	seq      *dispatch.Sequencer    // FIFO order: which message of a group may start
	ready    fifoQueue[*inflight]   // Handler: messages that may start, in order
	units    fifoQueue[[]*inflight] // BatchHandler: receives that may start
	running  int                    // handler calls not yet settled
	stopping bool                   // shutdown began: nothing more starts
	closed   bool                   // workers may exit
	idle     chan struct{}          // closed when running reaches 0, if set
	workCond *sync.Cond             // workers wait for ready messages
	busy     atomic.Int32           // messages ready or running: a partial delete batch waits only while some are
	workers  sync.WaitGroup
}

// settlement is what is on its way out: deletes and visibility changes
// (the settler, with its own lock), parks, releases and handler timers.
// Invariants: releasing counts the messages left untracked whose release
// call has not returned; each HandlerTimeout timer is pending in
// handlerTimers or has fired, and none starts once timersStopped.
type settlement struct {
	set       *settler
	releasing int            // places of messages whose release call is in flight
	parks     sync.WaitGroup // sends to the parking queue in flight
	// HandlerTimeout timers: shutdown stops those pending and joins those
	// firing, so none settles a message after Run returned.
	handlerTimers map[*handlerTimer]struct{}
	timersStopped bool           // shutdown stopped them: units that start now get none
	timers        sync.WaitGroup // pending and firing timers
	settledSignal chan struct{}  // Drain: a message settled
}

// checkLocked reports the first broken invariant of the three parts, for
// the tests. Callers hold r.mu.
func (r *run) checkLocked() error {
	running, queued := 0, map[*inflight]int{}
	for id, t := range r.tracked {
		if t.id != id {
			return fmt.Errorf("ledger: message %q tracked under %q", t.id, id)
		}
		if t.state == stateRunning && !t.settled {
			running++
		}
	}
	for i := r.ready.head; i < len(r.ready.items); i++ {
		queued[r.ready.items[i]]++
	}
	for i := r.units.head; i < len(r.units.items); i++ {
		for _, t := range r.units.items[i] {
			queued[t]++
		}
	}
	for t, n := range queued {
		if n > 1 || t.state != stateWaiting {
			return fmt.Errorf("ledger: message %q queued %d times in state %d", t.id, n, t.state)
		}
	}
	switch inUse := len(r.tracked) + r.reserved + r.releasing; {
	case running != r.running:
		return fmt.Errorf("ledger: running is %d, %d tracked messages run", r.running, running)
	case int(r.busy.Load()) < len(queued):
		return fmt.Errorf("ledger: busy is %d, %d messages are queued", r.busy.Load(), len(queued))
	case r.reserved < 0 || r.releasing < 0:
		return fmt.Errorf("intake: reserved %d, releasing %d", r.reserved, r.releasing)
	case inUse > r.o.MaxInFlight:
		return fmt.Errorf("intake: %d places in use, MaxInFlight %d", inUse, r.o.MaxInFlight)
	case r.recv.target < r.o.ReceiveConcurrency || r.recv.target > r.o.MaxReceiveConcurrency:
		return fmt.Errorf("intake: receive target %d outside %d to %d", r.recv.target, r.o.ReceiveConcurrency, r.o.MaxReceiveConcurrency)
	}
	return nil
}

// Run receives and handles messages until ctx is done or a call fails for
// good (the queue does not exist, access is denied), whose error it
// returns. When Options.VisibilityTimeout is unset it reads the queue's
// with GetQueueAttributes, while the first receive is on its way; a
// HeartbeatInterval that does not fit it ends Run with ErrConfig, and what
// was received is released. On the way out it stops receiving, releases at once
// every message not started, lets running handlers finish for up to
// ShutdownTimeout (then cancels them and releases their messages), keeps
// their visibility extended, flushes deletes and releases, and returns, at
// most ShutdownTimeout + 1 s after ctx is done.
func (c *Consumer) Run(ctx context.Context) error { return c.run(ctx, false) }

// run is Run, or Drain when drain is set.
func (c *Consumer) run(ctx context.Context, drain bool) error {
	if !c.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer c.running.Store(false)
	if ok, err := c.resolveQueue(ctx); !ok { // a queue name, once
		return err
	}
	o := c.opts
	apiCtx, apiCancel := context.WithCancel(context.WithoutCancel(ctx))
	defer apiCancel()
	hctx, hcancel := context.WithCancelCause(context.WithoutCancel(ctx))
	defer hcancel(nil)
	pollCtx, stopPoll := context.WithCancel(ctx)
	defer stopPoll()
	r := &run{
		c: c, o: &o, obs: &c.obs, log: o.Logger, apiCtx: apiCtx, pollCtx: pollCtx, hctx: hctx, hcancel: hcancel, stopPoll: stopPoll,
		intake: intake{recv: newReceiveState(o.ReceiveConcurrency, o.MaxReceiveConcurrency), guard: newFIFOGuard(c.fifo, o.MaxReceiveConcurrency)},
		ledger: ledger{tracked: map[string]*inflight{}, seq: dispatch.NewSequencer(c.fifo, o.StopOnFirstFailure)},
	}
	if c.runStarted != nil {
		c.runStarted(r) // the tests' probe
	}
	r.handlerTimers = map[*handlerTimer]struct{}{}
	if drain {
		r.draining, r.settledSignal = true, make(chan struct{}, 1)
	}
	r.workCond, r.placeCond, r.turnCond = sync.NewCond(&r.mu), sync.NewCond(&r.mu), sync.NewCond(&r.mu)
	r.set = newSettler(r)
	r.visKnown = make(chan struct{})
	r.brk = newBreaker(r, o.Breaker)
	r.calling = make([]atomic.Int64, o.MaxReceiveConcurrency)
	c.ctl.attach(r)
	var runErr error
	defer func() { c.ctl.detach(runErr) }()
	if o.VisibilityTimeout != 0 {
		close(r.visKnown)
	} else {
		// Read in parallel with the first receive, which leaves the
		// visibility to the queue's default meanwhile: a round trip saved.
		go r.readVisibility(pollCtx)
	}

	stopGauge := c.obs.inFlightGauge()
	defer stopGauge()
	stopSignals := c.obs.start(ctx.Value(ctxkey.LosslessHooks{}) != nil)
	for range o.Concurrency {
		r.workers.Add(1)
		go r.work()
	}
	heartbeatStop := make(chan struct{})
	heartbeatDone := make(chan struct{})
	go func() {
		defer close(heartbeatDone)
		select {
		case <-r.visKnown:
		case <-heartbeatStop:
			return
		}
		if r.visErr == nil {
			r.heartbeat(heartbeatStop)
		}
	}()
	stopWaking := context.AfterFunc(pollCtx, r.endReceiving)
	defer stopWaking()
	var receivers sync.WaitGroup
	for i := range o.MaxReceiveConcurrency {
		receivers.Add(1)
		go func() { defer receivers.Done(); r.receive(pollCtx, i) }()
	}
	r.log.LogAttrs(ctx, slog.LevelInfo, "consumer: started", slog.String("queue", c.queueURL))
	drained := make(chan struct{})
	if drain {
		go func() {
			defer close(drained)
			receivers.Wait() // a receive came back empty, or ctx ended
			r.awaitSettled(pollCtx)
			stopPoll()
		}()
	} else {
		close(drained)
	}

	<-pollCtx.Done()
	deadline := time.Now().Add(o.ShutdownTimeout + shutdownGrace)
	defer func() { <-drained }()
	// From here Run returns within ShutdownTimeout + shutdownGrace whatever
	// SQS calls hang: then the calls still on their way are given up (the
	// client must honour ctx, as the SDK does) and retries waiting for
	// their timer go at once, on the cancelled ctx.
	gaveUp := make(chan struct{})
	giveUp := time.AfterFunc(o.ShutdownTimeout+shutdownGrace, func() {
		defer close(gaveUp)
		apiCancel()
		r.set.abandon()
	})
	receivers.Wait()
	r.shutdown()
	if r.brk != nil {
		r.brk.end()
	}
	close(heartbeatStop)
	<-heartbeatDone
	r.set.drain() // what the last beat asked for
	<-r.visKnown
	if !giveUp.Stop() {
		<-gaveUp
	}
	stopSignals(deadline) // what the hooks have still to report
	r.log.LogAttrs(ctx, slog.LevelInfo, "consumer: stopped", slog.String("queue", c.queueURL))
	r.fatalMu.Lock()
	defer r.fatalMu.Unlock()
	runErr = r.fatal
	return r.fatal
}

// readVisibility sets the visibility timeout from the queue, and the
// heartbeat from it, then closes visKnown; on failure it ends Run.
func (r *run) readVisibility(ctx context.Context) {
	defer close(r.visKnown)
	vis, err := r.c.queueVisibility(ctx)
	if err == nil && vis == 0 {
		r.visErr = ctx.Err() // Run ended first: not an error of Run
		return
	}
	if err == nil {
		err = resolveVisibility(r.o, vis)
		if err == nil {
			r.log.LogAttrs(ctx, slog.LevelInfo, "consumer: visibility timeout from the queue", slog.Duration("visibility_timeout", vis))
			return
		}
	}
	r.visErr = err
	r.stop(err)
}

// queueVisibility reads the queue's VisibilityTimeout, retrying transient
// errors with ReceiveBackoff. It returns 0 and no error when ctx ends first.
func (c *Consumer) queueVisibility(ctx context.Context) (time.Duration, error) {
	waits := backoff.NewIterator(c.opts.ReceiveBackoff)
	for {
		out, err := c.client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
			QueueUrl: aws.String(c.queueURL), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameVisibilityTimeout},
		})
		if err == nil {
			secs, convErr := strconv.Atoi(out.Attributes[string(types.QueueAttributeNameVisibilityTimeout)])
			if convErr != nil || secs < 1 {
				// SQS allows 0; a consumer cannot hold a message that way.
				return 0, configError("the queue's VisibilityTimeout %q cannot be used: set Options.VisibilityTimeout", out.Attributes[string(types.QueueAttributeNameVisibilityTimeout)])
			}
			return time.Duration(secs) * time.Second, nil
		}
		if ctx.Err() != nil {
			return 0, nil
		}
		c.ctl.failed(err, time.Now(), false)
		if !sqserr.Transient(err) {
			return 0, fmt.Errorf("consumer: read the queue's visibility timeout: %w", err)
		}
		c.opts.Logger.LogAttrs(ctx, slog.LevelWarn, "consumer: GetQueueAttributes failed; retrying", slog.String("error", err.Error()))
		if !wait.Sleep(ctx, receiveWait(waits)) {
			return 0, nil
		}
	}
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

// endReceiving wakes every receiver waiting for a turn or for places, once
// Run's ctx is done.
func (r *run) endReceiving() {
	r.mu.Lock()
	r.pollDone = true
	r.mu.Unlock()
	r.placeCond.Broadcast()
	r.turnCond.Broadcast()
	if r.c.limiter != nil {
		r.c.limiter.wake() // receives waiting for the rate stop too
	}
}

// shutdown releases what has not started, waits for running handlers for
// up to ShutdownTimeout (then cancels them and releases their messages),
// ends the workers and flushes every delete and release.
func (r *run) shutdown() {
	r.mu.Lock()
	r.stopping = true
	var waiting []*inflight
	for r.ready.len() > 0 {
		waiting = append(waiting, r.ready.pop())
	}
	for r.units.len() > 0 {
		waiting = append(waiting, r.units.pop()...)
	}
	for _, id := range r.seq.Drain() {
		waiting = append(waiting, r.tracked[id])
	}
	var idle chan struct{}
	if r.running > 0 {
		idle = make(chan struct{})
		r.idle = idle
	}
	r.mu.Unlock()
	r.settle(waiting, fmt.Errorf("%w: the consumer is shutting down", handler.ErrNotStarted))

	if idle != nil {
		timer := time.NewTimer(r.o.ShutdownTimeout)
		select {
		case <-idle:
		case <-timer.C:
			r.log.LogAttrs(r.apiCtx, slog.LevelWarn, "consumer: shutdown timeout; cancelling running handlers")
			r.hcancel(ErrShutdownTimeout)
			r.mu.Lock()
			var running []*inflight
			for _, t := range r.tracked {
				if t.state == stateRunning && !t.settled {
					running = append(running, t)
				}
			}
			r.mu.Unlock()
			r.settle(running, ErrShutdownTimeout)
		}
		timer.Stop()
	}
	// Every message that ran is settled now, or is being settled by a
	// HandlerTimeout firing: stop the pending timers, wait for the others.
	r.mu.Lock()
	r.timersStopped = true
	for ht := range r.handlerTimers {
		r.stopHandlerTimerLocked(ht)
	}
	r.mu.Unlock()
	r.timers.Wait()

	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.workCond.Broadcast()
	done := make(chan struct{})
	go func() { r.workers.Wait(); close(done) }()
	timer := time.NewTimer(shutdownGrace)
	select {
	case <-done:
	case <-timer.C:
		r.log.LogAttrs(r.apiCtx, slog.LevelError, "consumer: a handler ignores its cancelled ctx; returning without it")
	}
	timer.Stop()
	r.parks.Wait() // bounded: a park's calls end when Run gives up its SQS calls
	r.set.drain()
}

// ErrShutdownTimeout is the cause of a running handler's cancellation, and
// its message's failure, at the shutdown timeout: the message is released,
// visible at once, whatever the handler returns later.
var ErrShutdownTimeout = telemetry.NewFailure("consumer: handler cancelled at the shutdown timeout", "shutdown_timeout")

// settle gives up messages the consumer will not handle, or will not wait
// for: each fails with cause and is released, visible at once.
func (r *run) settle(ts []*inflight, cause error) {
	r.set.plug()
	defer r.set.unplug()
	for _, t := range ts {
		r.finish(t, cause, 0, false)
	}
}

// syncInFlightLocked publishes the held count. Callers hold r.mu.
func (r *run) syncInFlightLocked() {
	r.c.stats.inFlight.Store(int64(len(r.tracked) + r.releasing))
}

// free is the number of places a receive may take. Callers hold r.mu.
func (r *run) freeLocked() int {
	return r.o.MaxInFlight - len(r.tracked) - r.reserved - r.releasing
}

// logFailure logs a handler's failure, with a panic's stack, in the
// message's ctx.
func (r *run) logFailure(t *inflight, err error) {
	attrs := []slog.Attr{slog.String("message_id", t.id), slog.String("error", err.Error())}
	var p *handler.PanicError
	if errors.As(err, &p) {
		attrs = append(attrs, slog.String("stack", string(p.Stack)))
	}
	r.log.LogAttrs(t.ctx, slog.LevelWarn, "consumer: message failed", attrs...)
}

// fifoQueue is a first-in first-out queue on a slice.
type fifoQueue[T any] struct {
	items []T
	head  int
}

func (q *fifoQueue[T]) len() int { return len(q.items) - q.head }

func (q *fifoQueue[T]) push(v T) { q.items = append(q.items, v) }

func (q *fifoQueue[T]) pop() T {
	v := q.items[q.head]
	var zero T
	q.items[q.head] = zero
	q.head++
	if q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
	} else if q.head > 64 && q.head*2 > len(q.items) {
		n := copy(q.items, q.items[q.head:])
		clear(q.items[n:])
		q.items, q.head = q.items[:n], 0
	}
	return v
}
