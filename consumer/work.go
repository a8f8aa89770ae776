package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/internal/ctxkey"
	"github.com/sqskit/sqskit/internal/dispatch"
	"github.com/sqskit/sqskit/internal/sqsrule"
	"github.com/sqskit/sqskit/internal/wait"
)

// startLocked admits newly received messages to the sequencer and queues
// those that may start for a worker. Callers hold r.mu.
func (r *run) startLocked(ts []*inflight) {
	if len(ts) == 0 {
		return
	}
	if r.c.batch != nil {
		ids, groups := make([]string, len(ts)), make([]string, len(ts))
		for i, t := range ts {
			ids[i], groups[i] = t.id, t.group
		}
		start := r.seq.AdmitAll(ids, groups)
		if len(start) == 0 {
			return
		}
		unit := make([]*inflight, len(start))
		for i, j := range start {
			unit[i] = ts[j]
		}
		r.pushUnitLocked(unit)
		return
	}
	for _, t := range ts {
		if r.seq.Admit(t.id, t.group) {
			r.pushLocked(t)
		}
	}
}

// pushLocked queues a message that may start. Callers hold r.mu.
func (r *run) pushLocked(t *inflight) {
	if r.c.batch != nil {
		r.pushUnitLocked([]*inflight{t})
		return
	}
	r.busy.Add(1)
	t.pushed = true
	r.ready.push(t)
	r.workCond.Signal()
}

func (r *run) pushUnitLocked(unit []*inflight) {
	r.busy.Add(int32(len(unit)))
	for _, t := range unit {
		t.pushed = true
	}
	r.units.push(unit)
	r.workCond.Signal()
}

// work runs handlers, in the order their messages became ready, until
// shutdown has closed the queue.
func (r *run) work() {
	defer r.workers.Done()
	if r.o.Budget != nil {
		r.workBudgeted(r.o.Budget)
		return
	}
	for {
		unit, ctx, cancel, ok := r.next(true)
		if !ok {
			return
		}
		if len(unit) > 0 {
			r.runUnit(ctx, cancel, unit)
		}
	}
}

// workBudgeted is work with Options.Budget: once work waits, the worker
// takes a slot of the budget, then the work (giving the slot back if
// another worker took it first), and gives the slot back when the handler
// returns. A message waiting for a slot has not started: shutdown, which
// ends the wait, releases it with the others.
func (r *run) workBudgeted(b Budget) {
	for {
		if !r.awaitWork() {
			return
		}
		if err := b.Acquire(r.pollCtx); err != nil {
			if r.pollCtx.Err() != nil { // the waiting messages are shutdown's to release
				r.awaitClosed()
				return
			}
			wait.Sleep(r.pollCtx, minReceiveBackoff) // the budget failed: look again
			continue
		}
		unit, ctx, cancel, ok := r.next(false)
		if !ok || len(unit) == 0 {
			b.Release()
			continue
		}
		r.runBudgeted(b, ctx, cancel, unit)
	}
}

// runBudgeted runs a unit holding a budget slot, given back when its
// handler returns (a runtime.Goexit too).
func (r *run) runBudgeted(b Budget, ctx context.Context, cancel context.CancelCauseFunc, unit []*inflight) {
	defer b.Release()
	r.runUnit(ctx, cancel, unit)
}

// awaitClosed waits until the workers are done.
func (r *run) awaitClosed() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for !r.closed {
		r.workCond.Wait()
	}
}

// awaitWork waits until work waits for a worker (true) or the workers are
// done (false).
func (r *run) awaitWork() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.waitingLocked() == 0 && !r.closed {
		r.workCond.Wait()
	}
	return r.waitingLocked() > 0 || !r.closed
}

// next takes the next unit of work and marks its messages running under a
// fresh ctx; with block it waits for one, without it returns an empty unit
// when none waits. A message whose lease was lost before it started fails
// instead (the returned unit then lacks it). It reports false once the
// workers are done.
func (r *run) next(block bool) (unit []*inflight, ctx context.Context, cancel context.CancelCauseFunc, ok bool) {
	r.mu.Lock()
	for block && r.waitingLocked() == 0 && !r.closed {
		r.workCond.Wait()
	}
	if r.waitingLocked() == 0 {
		closed := r.closed
		r.mu.Unlock()
		return nil, nil, nil, !closed
	}
	if r.c.batch != nil {
		unit = r.units.pop()
	} else {
		unit = []*inflight{r.ready.pop()}
	}
	var lost []*inflight
	started := unit[:0]
	for _, t := range unit {
		if t.lost != nil {
			lost = append(lost, t)
			continue
		}
		started = append(started, t)
	}
	if len(started) > 0 {
		parent := r.hctx
		if r.c.batch == nil {
			// the message's: its trace context, process span and lease
			t := started[0]
			t.lease = leaseCtx{Context: t.ctx, r: r, t: t}
			parent = &t.lease
		}
		ctx, cancel = context.WithCancelCause(parent)
		for _, t := range started {
			t.state, t.cancel = stateRunning, cancel
			r.running++
		}
	}
	r.mu.Unlock()
	r.placeCond.Signal() // one fewer waiting: a receive may go
	for _, t := range lost {
		r.finish(t, t.lost, 0, false)
	}
	return started, ctx, cancel, true
}

// runUnit runs the handler for a unit and settles its messages. A handler
// that panics fails its messages (handler.PanicError); one that calls
// runtime.Goexit fails them (handler.ErrHandlerExited), and this worker is
// replaced so Concurrency holds; one that outlives HandlerTimeout has them
// failed by the timer while it still runs.
func (r *run) runUnit(ctx context.Context, cancel context.CancelCauseFunc, unit []*inflight) {
	timer := r.startHandlerTimer(unit, cancel)
	returned := false
	defer func() {
		if returned {
			return
		}
		// The handler called runtime.Goexit: this goroutine is ending.
		r.stopHandlerTimer(timer)
		cancel(handler.ErrHandlerExited)
		r.log.LogAttrs(r.apiCtx, slog.LevelWarn, "consumer: handler called runtime.Goexit", slog.String("message_id", unit[0].id))
		r.settleAll(unit, handler.ErrHandlerExited, 0)
		r.workers.Add(1)
		go r.work()
	}()
	began := time.Now()
	var errs []error
	if r.c.batch != nil {
		errs = r.callBatch(ctx, unit)
	} else {
		errs = []error{dispatch.Invoke(ctx, r.c.handler, unit[0].msg, panicked)}
	}
	returned = true
	took := time.Since(began)
	stopped := r.stopHandlerTimer(timer)
	cancel(nil)
	if !stopped {
		return // the timer failed them, or the shutdown did
	}
	if len(unit) > 1 {
		r.set.plug()
		defer r.set.unplug()
	}
	// On FIFO a message that ends up failed here — its lease lost while the
	// call ran, though the handler reported it done — holds back its later
	// group-mates as a handler's failure does (callBatch), so none of them
	// is deleted ahead of it.
	failedGroups, anyFailed := map[string]bool{}, false
	for i, t := range unit {
		err := errs[i]
		if err == nil && r.c.fifo && (failedGroups[t.group] || r.o.StopOnFirstFailure && anyFailed) {
			err = fmt.Errorf("%w: an earlier message of its group lost its lease", handler.ErrHeldBack)
		}
		if !r.finish(t, err, took, true) {
			failedGroups[t.group], anyFailed = true, true
		}
	}
}

// handlerTimer fails a unit at HandlerTimeout.
type handlerTimer struct{ t *time.Timer }

// startHandlerTimer starts the HandlerTimeout of a unit whose handler is
// about to run, and returns it; nil once shutdown has stopped the timers
// (the unit's messages were then settled already).
func (r *run) startHandlerTimer(unit []*inflight, cancel context.CancelCauseFunc) *handlerTimer {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.timersStopped {
		return nil
	}
	ht := &handlerTimer{}
	r.timers.Add(1)
	ht.t = time.AfterFunc(r.o.HandlerTimeout, func() {
		defer r.timers.Done()
		r.mu.Lock()
		delete(r.handlerTimers, ht)
		r.mu.Unlock()
		cancel(handler.ErrHandlerTimeout)
		r.settleAll(unit, fmt.Errorf("%w after %v", handler.ErrHandlerTimeout, r.o.HandlerTimeout), r.o.HandlerTimeout)
	})
	r.handlerTimers[ht] = struct{}{}
	return ht
}

// stopHandlerTimer stops a unit's timer and reports whether it did: false
// when it fired, or when there was none (shutdown settled the unit).
func (r *run) stopHandlerTimer(ht *handlerTimer) bool {
	if ht == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stopHandlerTimerLocked(ht)
}

func (r *run) stopHandlerTimerLocked(ht *handlerTimer) bool {
	if _, pending := r.handlerTimers[ht]; !pending || !ht.t.Stop() {
		return false
	}
	delete(r.handlerTimers, ht)
	r.timers.Done()
	return true
}

// callBatch runs the batch handler over a unit and returns one result per
// message: a missing result or a panic fails the message, and on FIFO a
// message after a failure of its group is held back (not deleted).
func (r *run) callBatch(ctx context.Context, unit []*inflight) []error {
	msgs := make([]*handler.Message, len(unit))
	ctxs := make(map[*handler.Message]context.Context, len(unit))
	for i, t := range unit {
		msgs[i], ctxs[t.msg] = t.msg, t.ctx
	}
	// Each message's own ctx, for handler.MessageContext.
	ctx = context.WithValue(ctx, ctxkey.Messages{}, ctxs)
	ctx, span := r.obs.startBatch(ctx, len(msgs))
	var errs []error
	defer func() { r.obs.endBatch(span, errs) }() // a runtime.Goexit in the handler ends it too
	errs = dispatch.InvokeBatch(ctx, r.c.batch, msgs, panicked, handler.ErrNoResult)
	if r.c.fifo {
		dispatch.HoldBack(errs, func(i int) string { return unit[i].group }, r.o.StopOnFirstFailure, handler.ErrHeldBack)
	}
	return errs
}

// settleAll fails every message of a unit with err.
func (r *run) settleAll(unit []*inflight, err error, took time.Duration) {
	r.set.plug()
	defer r.set.unplug()
	for _, t := range unit {
		r.finish(t, err, took, true)
	}
}

// finish settles a message once: after its handler, instead of it, or when
// the consumer stops waiting for it. A success is queued for delete; a Hold
// is released after its delay; an Escalate goes to the parking queue first,
// when there is one (see park); a failure of the handler (ran) is released
// per the failure policy; a message never handled (!ran) is released at
// once; a lost lease is left alone. The sequencer then starts what may start
// and gives up what may not. It reports whether the message was queued for
// delete or parking.
func (r *run) finish(t *inflight, err error, took time.Duration, ran bool) (deleting bool) {
	retryIn := time.Duration(0)
	if err != nil && ran {
		retryIn = r.failureDelay(t.receives, err)
	}
	r.mu.Lock()
	if t.settled {
		r.mu.Unlock()
		return false
	}
	t.settled = true
	if t.state == stateRunning {
		r.running--
		if r.running == 0 && r.idle != nil {
			close(r.idle)
			r.idle = nil
		}
	}
	if esc := handler.EscalationOf(err); esc != nil && ran && r.c.parker != nil && t.lost == nil {
		t.state = stateParking
		r.parks.Add(1)
		r.mu.Unlock()
		if t.pushed {
			r.busy.Add(-1)
		}
		go r.park(t, esc, took)
		return true
	}
	return r.concludeLocked(t, err, took, ran, nil, retryIn)
}

// park sends an escalated message to the parking queue and then concludes
// it: deleted once the parking queue has it, else failed (and released per
// the failure policy), so a message is never lost between the two queues.
// The heartbeat keeps its lease meanwhile.
func (r *run) park(t *inflight, esc *handler.EscalateError, took time.Duration) {
	defer r.parks.Done()
	// The message's ctx (its trace) with the lifetime of Run's SQS calls.
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.ctx))
	defer context.AfterFunc(r.apiCtx, cancel)()
	defer cancel()
	err := r.c.parker.Park(ctx, &t.original, esc.Reason, esc.Err)
	retryIn := time.Duration(0)
	if err != nil {
		err = fmt.Errorf("consumer: park on the parking queue (reason %q): %w", esc.Reason, err)
		retryIn = r.failureDelay(t.receives, err)
	}
	r.mu.Lock()
	r.concludeLocked(t, err, took, true, esc, retryIn)
}

// verdict is what becomes of a settled message, decided once under r.mu
// and carried out after it.
type verdict uint8

const (
	verdictDelete  verdict = iota // handled, or on the parking queue
	verdictLost                   // its lease is lost: left alone
	verdictRelease                // never handled: visible at once
	verdictHold                   // a Hold outcome: invisible for its hold
	verdictRetry                  // failed: released per the failure policy
)

// concludeLocked is the second half of finish, for a message just settled
// (or parked: esc is its escalation). retryIn is the failure policy's delay,
// computed before r.mu was taken since RedeliveryBackoff is user code.
// Callers hold r.mu; it releases it.
func (r *run) concludeLocked(t *inflight, err error, took time.Duration, ran bool, esc *handler.EscalateError, retryIn time.Duration) (deleting bool) {
	now := time.Now()
	if err == nil && t.lost == nil && !now.Before(t.visibleUntil) {
		r.loseLocked(t, fmt.Errorf("%w: its visibility lapsed before its handler returned", ErrLeaseLost))
	}
	if lost := t.lost; lost != nil {
		switch {
		case err == nil:
			err = lost // the handler succeeded too late: not deleted
		case !errors.Is(err, ErrLeaseLost):
			err = fmt.Errorf("%w (the handler returned: %w)", lost, err) // its failure is the lost lease
		}
	}
	v, delay := verdictRetry, retryIn
	hold, held := handler.HoldFor(err)
	switch {
	case err == nil:
		v = verdictDelete
	case t.lost != nil:
		v = verdictLost
	case !ran:
		v, delay = verdictRelease, 0
	case held:
		v, delay = verdictHold, hold
	}
	switch v {
	case verdictDelete:
		t.state = stateDeleting
		if esc != nil {
			t.parkedReason = esc.Reason
		}
	case verdictLost:
		r.forgetLocked(t)
	default:
		if r.c.fifo && v != verdictRelease {
			delay = r.guard.failed(t.group, now, delay, t.visibleUntil)
		}
		r.leaveLocked(t)
	}
	next, givenUp := r.seq.Done(t.group, err != nil)
	if next != "" {
		r.pushLocked(r.tracked[next])
	}
	gaveUp := make([]*inflight, 0, len(givenUp))
	for _, id := range givenUp {
		if g := r.tracked[id]; g != nil && !g.settled {
			g.settled = true
			r.leaveLocked(g)
			gaveUp = append(gaveUp, g)
		}
	}
	r.syncInFlightLocked()
	r.mu.Unlock()
	r.signalSettled()
	if r.brk != nil {
		if counts, failed := breakerOutcome(err, ran, v); counts && esc == nil {
			r.brk.record(failed, t.probe)
		} else if t.probe {
			r.brk.probeLost()
		}
	}

	if len(gaveUp) > 0 {
		r.set.plug()
		defer r.set.unplug()
	}
	switch v {
	case verdictDelete:
		if esc != nil {
			r.obs.escalated(t)
		} else {
			r.obs.settled(t, nil, took, ran)
		}
		r.set.delete(t)
	case verdictLost:
		r.obs.settled(t, err, took, ran)
		r.placeCond.Signal()
	case verdictRelease:
		r.obs.settled(t, err, took, ran)
		r.set.change(visChange{t: t, kind: changeRelease})
	case verdictHold:
		r.set.change(visChange{t: t, kind: changeRelease, hold: true, took: took, seconds: sqsrule.Seconds(min(delay, maxVisibility(t, now)))})
	case verdictRetry:
		r.obs.settled(t, err, took, ran)
		r.logFailure(t, err)
		if delay >= 0 {
			r.set.change(visChange{t: t, kind: changeRelease, seconds: sqsrule.Seconds(min(delay, r.o.MaxExtension, maxVisibility(t, now)))})
		} else {
			r.released(t, nil, -1, false) // left to its timeout: the place is free now
		}
	}
	if len(gaveUp) > 0 {
		cause := fmt.Errorf("%w: an earlier message of group %q did not succeed", handler.ErrNotStarted, t.group)
		for _, g := range gaveUp {
			r.obs.settled(g, cause, 0, false)
			r.set.change(visChange{t: g, kind: changeRelease})
		}
	}
	if t.pushed && esc == nil {
		// Only now that its delete or change is queued: had it stopped
		// counting before, a message finishing at the same moment could
		// see no one busy and send a partial batch without it.
		r.busy.Add(-1)
	}
	if r.busy.Load() == 0 {
		r.set.kick() // nothing else can join a partial delete batch soon
	}
	return err == nil
}

// failureDelay is when a failed message received receives times should be
// visible again; negative means leave it to its visibility timeout. A
// RedeliveryBackoff that panics, or returns Stop, makes it visible at once.
func (r *run) failureDelay(receives int, err error) (d time.Duration) {
	if d, ok := retryDelay(err); ok {
		return max(d, 0)
	}
	switch r.o.OnFailure {
	case ReleaseNow:
		return 0
	case LeaveToTimeout:
		return -1
	}
	defer func() {
		if recover() != nil {
			d = 0
		}
	}()
	return max(r.o.RedeliveryBackoff.Delay(max(receives-1, 0), 0), 0)
}

// maxVisibility is the longest visibility SQS accepts for t at now: 12 h
// from its latest receive, less transitMargin (SQS started counting before
// the receive's answer arrived), in whole seconds. SQS refuses more, it
// does not clamp.
func maxVisibility(t *inflight, now time.Time) time.Duration {
	return max(t.received.Add(sqsrule.MaxVisibility-transitMargin).Sub(now).Truncate(time.Second), 0)
}

// leaveLocked stops holding t while its release is in flight: it leaves
// the tracked set at once, so a receive that races the release sees a new
// message, not a redelivery of a held one, but keeps its place until the
// release call returns. Callers hold r.mu.
func (r *run) leaveLocked(t *inflight) {
	r.forgetLocked(t)
	r.releasing++
}

// forgetLocked removes t from the tracked set. Callers hold r.mu.
func (r *run) forgetLocked(t *inflight) {
	if r.tracked[t.id] == t {
		delete(r.tracked, t.id)
	}
}

// released ends a release: err is the call's (nil when made visible), secs
// the visibility asked for, −1 when nothing was asked; hold says it was a
// Hold outcome's, reported as held already.
func (r *run) released(t *inflight, err error, secs int32, hold bool) {
	r.mu.Lock()
	r.releasing--
	r.syncInFlightLocked()
	r.mu.Unlock()
	r.placeCond.Signal()
	r.signalSettled()
	if err == nil && secs >= 0 && !hold {
		r.obs.released(t, time.Duration(secs)*time.Second)
	}
}

// holdDone reports a Hold outcome once SQS took the hold (Held, with the
// hold asked for), or its failure (Failed): the message then comes back
// after its visibility timeout.
func (r *run) holdDone(t *inflight, err error, secs int32, took time.Duration) {
	if err != nil {
		r.obs.settled(t, fmt.Errorf("consumer: hold: %w", err), took, true)
		return
	}
	r.obs.held(t, time.Duration(secs)*time.Second, took)
}

// deleted ends a delete: err nil means SQS deleted the message.
func (r *run) deleted(t *inflight, err error) {
	r.mu.Lock()
	r.forgetLocked(t)
	r.syncInFlightLocked()
	r.mu.Unlock()
	r.placeCond.Signal()
	r.signalSettled()
	switch {
	case err == nil && t.parkedReason != "":
		r.obs.parked(t, t.parkedReason)
		return
	case err == nil:
		r.obs.deleted(t)
		return
	}
	r.obs.deleteFailed(t, err)
	r.log.LogAttrs(r.apiCtx, slog.LevelWarn, "consumer: delete failed; the message will be delivered again",
		slog.String("message_id", t.id), slog.String("error", err.Error()))
}
