package consumer

import (
	"context"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/internal/attempt"
	"github.com/sqskit/sqskit/internal/sqserr"
	"github.com/sqskit/sqskit/internal/sqsrule"
	"github.com/sqskit/sqskit/internal/telemetry"
	"github.com/sqskit/sqskit/internal/throttle"
	"github.com/sqskit/sqskit/internal/wait"
)

// receiveState is how many receives may run at once. Guarded by run.mu.
//
// Receivers 0 … MaxReceiveConcurrency−1 exist for the whole Run; receiver i
// receives only while i < target. The target starts at ReceiveConcurrency,
// grows by one for each receive that came back full (so it doubles per
// round trip while the queue has a backlog) and shrinks by one for each
// that came back empty or failed, never below the floor: an idle queue
// costs one long poll per floor receiver per WaitTime.
//
// A throttled receive (the queue's quota is spent: 300 receives a second
// on a FIFO queue) halves the target, once per round trip, and from then
// on a full receive grows it by a quarter of a receiver per round trip:
// the receives settle just under the quota, which a few throttled calls
// per cycle probe, instead of doubling into it again (see package
// internal/throttle); receives are paced too, to a rate learned from the
// receives SQS accepted (see pacer), since below a call per round trip a
// window cannot go.
type receiveState struct {
	target int // win.Limit(), read by receivers and checkLocked
	win    throttle.Window
	pace   pacer // spaces receives once throttled (see pacer)
}

func newReceiveState(floor, ceiling int) receiveState {
	return receiveState{target: floor, win: throttle.NewWindow(floor, ceiling, floor)}
}

// set makes target follow the window after a change, and wakes the
// receivers a larger target lets in.
func (s *receiveState) set(turnCond *sync.Cond) {
	old := s.target
	s.target = s.win.Limit()
	if s.target > old {
		turnCond.Broadcast()
	}
}

// receive is receiver idx's loop: it waits for its turn and for free
// places, receives for them, and hands the messages over, until ctx is
// done. On FIFO queues it goes through its own attempt.Receiver, so a
// receive retried after a failure in transit reuses its
// ReceiveRequestAttemptId.
func (r *run) receive(ctx context.Context, idx int) {
	recv, err := attempt.New(r.c.client, r.c.queueURL)
	if err != nil {
		r.stop(err)
		return
	}
	errWaits := backoff.NewIterator(r.o.ReceiveBackoff)
	for {
		n, poll, pause, probe, ok := r.awaitTurn(idx)
		if !ok {
			return
		}
		if pause > 0 && !wait.Sleep(ctx, pause) { // a receive was throttled: the quota is spent
			r.unreserve(n)
			return
		}
		paced := 0 // messages asked for under RateLimit, until the receive returns
		if r.c.limiter != nil {
			k, ok := r.pace(ctx, n)
			if !ok {
				r.unreserve(n)
				return
			}
			if k < n {
				r.unreserve(n - k)
				n = k
			}
			paced = k
		}
		var vis int32 // the queue's default, until read
		select {
		case <-r.visKnown:
			vis = int32(r.o.VisibilityTimeout / time.Second)
		default:
		}
		r.mu.Lock()
		if r.paused && (!probe || r.pausedByOthers) { // paused while this receiver waited: give its places back
			r.reserved -= n
			r.mu.Unlock()
			r.placeCond.Signal()
			if paced > 0 {
				r.c.limiter.done(paced, 0)
			}
			if probe {
				r.brk.probeLost()
			}
			continue
		}
		ticket := r.recv.win.Start()
		r.mu.Unlock()
		for {
			cctx, call := r.obs.startCall(ctx, telemetry.OperationReceive, telemetry.OperationReceive, 0)
			r.calling[idx].Store(time.Now().UnixNano())
			out, err := recv.Receive(cctx, &sqs.ReceiveMessageInput{
				MaxNumberOfMessages:         int32(n),
				WaitTimeSeconds:             int32(poll / time.Second),
				VisibilityTimeout:           vis,
				MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
				MessageAttributeNames:       []string{"All"},
			}, throttle.SDKOption) // a throttled receive is ours to pace, not the SDK's to retry
			r.calling[idx].Store(0)
			call.endReceive(ctx, out, err)
			if paced > 0 {
				got := 0
				if err == nil {
					got = len(out.Messages)
				}
				r.c.limiter.done(paced, got)
				paced = 0
			}
			if err == nil {
				errWaits.Reset()
				r.c.ctl.received(time.Now())
				r.accept(idx, n, out.Messages, time.Now(), probe)
				if r.draining && len(out.Messages) == 0 {
					r.endReceiving() // drained: the receivers all stop
					return
				}
				break
			}
			// A FIFO retry reuses the attempt id, and SQS then returns the
			// first attempt's messages whatever MaxNumberOfMessages says:
			// keep the places for them and ask for the same number.
			retrySame := r.c.fifo && recv.Pending() != "" && ctx.Err() == nil
			if !retrySame {
				r.unreserve(n)
			}
			if ctx.Err() != nil {
				return
			}
			r.c.ctl.failed(err, time.Now(), true)
			r.receiveFailed(ticket, err)
			if probe && !retrySame {
				r.brk.probeLost()
				probe = false
			}
			if sqserr.Final(err) {
				r.log.LogAttrs(ctx, slog.LevelError, "consumer: receive failed for good", slog.String("error", err.Error()))
				if retrySame {
					r.unreserve(n)
				}
				r.stop(err)
				return
			}
			if backoff.IsThrottle(err) && !retrySame {
				// The window's pause and the pacer space the next receive
				// (awaitTurn): an error backoff on top would waste quota.
				r.log.LogAttrs(ctx, slog.LevelDebug, "consumer: receive throttled", slog.String("error", err.Error()))
				break
			}
			d := receiveWait(errWaits)
			r.log.LogAttrs(ctx, slog.LevelWarn, "consumer: receive failed; retrying", slog.String("error", err.Error()), slog.Duration("delay", d))
			if !wait.Sleep(ctx, d) {
				if retrySame {
					r.unreserve(n)
				}
				return
			}
			if !retrySame {
				break
			}
			r.mu.Lock()
			r.guard.retrying(idx, time.Now(), n, poll)
			ticket = r.recv.win.Start()
			r.mu.Unlock()
		}
	}
}

// receiveWait is the next wait after a failed call, at least
// minReceiveBackoff, starting over after Stop.
func receiveWait(it *backoff.Iterator) (d time.Duration) {
	defer func() {
		if recover() != nil { // a strategy that panics late: wait the floor
			d = minReceiveBackoff
		}
	}()
	d = it.NextBackOff()
	if d == backoff.Stop {
		it.Reset()
		d = it.NextBackOff()
	}
	return max(d, minReceiveBackoff)
}

// awaitTurn blocks until receiver idx may receive, reserves places and
// returns how many messages to ask for, how long to wait, and how long to
// pause first (a receive was just throttled). It returns false once
// receiving has stopped.
//
// A receive needs idx < target, fewer than Concurrency messages already
// waiting for a handler, and places: ten, or fewer when that is all there
// is, no message is waiting and no other receive is on its way (so idle
// handlers are fed at once, while under load receives come back full).
func (r *run) awaitTurn(idx int) (n int, wait, pause time.Duration, probe, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		probe = r.paused && r.probe && !r.pausedByOthers && idx == 0
		switch {
		case r.pollDone:
			return 0, 0, 0, false, false
		case idx >= r.recv.target || r.paused && !probe:
			// A place freed while this receiver waited for one is for
			// another: pass the wake-up on.
			r.placeCond.Signal()
			r.turnCond.Wait()
			continue
		}
		free, waiting := r.freeLocked(), r.waitingLocked()
		n = 0
		switch {
		case waiting >= r.o.Concurrency:
		case free >= sqsrule.MaxReceiveMessages:
			n = sqsrule.MaxReceiveMessages
		case free > 0 && waiting == 0 && r.reserved == 0:
			n = free
		}
		if n == 0 {
			r.placeCond.Wait()
			continue
		}
		now := time.Now()
		n, wait = r.guard.size(idx, now, n, r.o.WaitTime)
		if probe {
			n, r.probe = 1, false // the breaker's probe: one message
		}
		r.reserved += n
		pause = r.recv.win.Paused(now)
		pause += r.recv.pace.wait(now.Add(pause))
		r.recv.pace.take(now.Add(pause))
		return n, wait, pause, probe, true
	}
}

// waitingLocked counts the units of work waiting for a worker: messages, or
// receives with NewBatch. Callers hold r.mu.
func (r *run) waitingLocked() int {
	if r.c.batch != nil {
		return r.units.len()
	}
	return r.ready.len()
}

// unreserve gives back places a receive did not use.
func (r *run) unreserve(n int) {
	r.mu.Lock()
	r.reserved -= n
	r.mu.Unlock()
	r.placeCond.Signal()
}

// receiveFailed shrinks the target after the receive with ticket failed
// with err: by one, like an empty receive, or, when it was throttled, by
// half (see receiveState).
func (r *run) receiveFailed(ticket uint64, err error) {
	r.mu.Lock()
	if backoff.IsThrottle(err) {
		now := time.Now()
		if r.recv.win.Cut(ticket, now) {
			r.recv.pace.cut(now)
		}
	} else {
		r.recv.win.Shrink()
	}
	r.recv.set(r.turnCond)
	r.mu.Unlock()
}

// accept takes the messages of one receive that asked for asked. They enter
// the sequencer together, before any of them can start, so a failure cannot
// let a later message of the same group from the same receive run first.
//
// Accounting holds whatever the receive returned: a message already held
// (redelivered after its visibility lapsed, or listed twice) takes no new
// place, its held copy switches to the newest receipt handle; messages
// beyond the free places (a retried FIFO attempt can return more than was
// asked) are released at once, untouched, and never counted.
//
// With a handler.Propagator or a tracer, each message gets its ctx (their work:
// user code) before the lock is taken, and one the consumer does not take
// ends its span unused.
func (r *run) accept(idx, asked int, sdkMsgs []types.Message, now time.Time, probe bool) {
	<-r.visKnown // the first receive can return before the queue's visibility is read
	if r.visErr != nil {
		r.unreserve(asked)
		for i := range sdkMsgs {
			r.set.change(visChange{handle: aws.ToString(sdkMsgs[i].ReceiptHandle), kind: changeExcess})
		}
		return
	}
	vis := r.o.VisibilityTimeout
	var begun []*inflight
	if r.obs.prop != nil || r.obs.tracer.On() {
		begun = make([]*inflight, len(sdkMsgs))
		for i := range sdkMsgs {
			begun[i] = r.newInflight(&sdkMsgs[i], now)
			r.obs.begin(r.hctx, begun[i])
		}
	}
	var fresh, unused []*inflight
	var excess []string
	r.mu.Lock()
	r.reserved -= asked
	r.recv.pace.ok(now)
	r.adaptLocked(asked, len(sdkMsgs))
	capacity := r.freeLocked()
	for i := range sdkMsgs {
		sm := &sdkMsgs[i]
		id, handle := aws.ToString(sm.MessageId), aws.ToString(sm.ReceiptHandle)
		var t *inflight
		if begun != nil {
			t = begun[i]
		}
		if held, ok := r.tracked[id]; ok {
			held.handle, held.received, held.visibleUntil = handle, now, now.Add(vis)
			r.log.LogAttrs(r.apiCtx, slog.LevelDebug, "consumer: redelivered while held; using the new receipt handle", slog.String("message_id", id))
			if t != nil {
				unused = append(unused, t)
			}
			continue
		}
		if capacity == 0 {
			excess = append(excess, handle)
			if t != nil {
				unused = append(unused, t)
			}
			continue
		}
		capacity--
		if t == nil {
			t = r.newInflight(sm, now)
			t.ctx = r.hctx
		}
		r.tracked[id] = t
		fresh = append(fresh, t)
	}
	r.guard.received(idx, fresh)
	r.syncInFlightLocked()
	if probe && len(fresh) > 0 {
		fresh[0].probe = true
	}
	r.mu.Unlock()
	if probe && len(fresh) == 0 {
		r.brk.probeLost() // nothing to judge by: probe again
	}
	for _, t := range unused {
		r.obs.unused(t)
	}
	for _, t := range fresh {
		r.obs.received(t, now)
	}
	// Receivers have all returned before shutdown begins, so nothing can
	// drain the sequencer between these two locks.
	r.mu.Lock()
	r.startLocked(fresh)
	r.mu.Unlock()

	if len(excess) > 0 {
		r.log.LogAttrs(r.apiCtx, slog.LevelWarn, "consumer: a receive returned more messages than places; releasing the rest",
			slog.Int("asked", asked), slog.Int("got", len(sdkMsgs)), slog.Int("released", len(excess)))
		for _, h := range excess {
			r.set.change(visChange{handle: h, kind: changeExcess})
		}
	}
	if len(excess) > 0 || len(fresh) < asked {
		r.placeCond.Signal()
	}
}

// newInflight makes the consumer's record of a message received at now.
func (r *run) newInflight(sm *types.Message, now time.Time) *inflight {
	id, handle := aws.ToString(sm.MessageId), aws.ToString(sm.ReceiptHandle)
	t := &inflight{handle: handle, received: now, visibleUntil: now.Add(r.o.VisibilityTimeout)}
	t.message = handler.Message{ID: id, ReceiptHandle: handle, Body: aws.ToString(sm.Body), Attributes: sm.Attributes, MessageAttributes: fromSDKAttributes(sm.MessageAttributes)}
	t.msg = &t.message
	t.id, t.group, t.receives = id, t.message.GroupID(), t.message.ReceiveCount()
	if r.c.parker != nil {
		t.original = handler.Message{ID: id, ReceiptHandle: handle, Body: t.message.Body,
			Attributes: maps.Clone(t.message.Attributes), MessageAttributes: maps.Clone(t.message.MessageAttributes)}
	}
	return t
}

// adaptLocked moves the receive target after a receive that asked for asked
// and got got messages. Callers hold r.mu.
func (r *run) adaptLocked(asked, got int) {
	switch {
	case got >= asked:
		r.recv.win.Grow()
	case got == 0:
		r.recv.win.Shrink()
	}
	r.recv.set(r.turnCond)
}
