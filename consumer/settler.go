package consumer

import (
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/internal/sqserr"
	"github.com/sqskit/sqskit/internal/sqsrule"
	"github.com/sqskit/sqskit/internal/telemetry"
	"github.com/sqskit/sqskit/internal/throttle"
)

// transitMargin is the time a call may take to reach SQS, and by which the
// consumer's idea of a lease (counted from when a receive's answer arrived)
// may run ahead of SQS's (counted from when it picked the messages): a
// delete is sent only with more than this left before the lapse, and
// counts as done only if its answer came back this long before it. An SQS
// call takes 5-20 ms.
const transitMargin = 250 * time.Millisecond

// settleAttempts bounds the tries of a delete or release entry that keeps
// failing in a retryable way (after the SDK's own retries); after them a
// deleted message is left to come back (at least once), a released one to
// its visibility timeout. Throttled calls, which did nothing, do not count.
const settleAttempts = 5

// changeKind is what a visibility change is for.
type changeKind uint8

const (
	changeRelease changeKind = iota // a failed or unstarted message, visible after seconds
	changeExtend                    // the heartbeat
	changeExcess                    // a message a receive returned beyond the free places
)

// visChange is one entry of a ChangeMessageVisibilityBatch call.
type visChange struct {
	t       *inflight // nil for changeExcess
	handle  string    // changeExcess only; others read t.handle when sent
	kind    changeKind
	seconds int32
	hold    bool          // changeRelease for a Hold outcome
	took    time.Duration // a Hold outcome's handler time, reported once SQS took the hold
	attempt int
}

// deleteEntry is one entry of a DeleteMessageBatch call.
type deleteEntry struct {
	t       *inflight
	attempt int
}

// settler sends deletes and visibility changes in batches of up to ten,
// with up to DeleteConcurrency calls in flight. Visibility changes go
// first, at once (releases and extensions are time-critical); a delete
// batch goes when it is full, when its oldest entry has waited
// DeleteLinger, or when no message is waiting or running, since nothing
// could then join it soon. A failed entry that may succeed later is queued
// again after a delay, by a timer: no call ever waits behind another.
//
// Each action has its own quota on SQS (300 calls a second on a FIFO
// queue), so deletes and visibility changes each have a window of calls
// in flight (internal/throttle): DeleteConcurrency until a call of theirs
// is throttled, then halved and grown back slowly. Entries waiting for a
// smaller window fill their batches meanwhile, so fewer calls carry them.
type settler struct {
	r      *run
	limit  int
	linger time.Duration

	mu        sync.Mutex
	drained   *sync.Cond
	deletes   []deleteEntry
	changes   []visChange
	calls     int                    // calls in flight, deletes and changes
	del, chg  callWindow             // each action's window
	retries   map[*time.Timer]func() // entries waiting for their retry timer, and how to queue them again
	lingering bool                   // the linger timer is set, or its callback has yet to run
	lingerEnd bool                   // the oldest pending delete has waited DeleteLinger
	flushAll  bool                   // draining: partial batches go at once
	plugs     int                    // callers queueing several changes: partial batches wait for them
	timer     *time.Timer
}

// callWindow is one action's window and its calls in flight.
type callWindow struct {
	throttle.Window
	pace   pacer // spaces the calls once throttled
	calls  int
	waking bool // a timer pumps when the window's pause ends
}

// open reports whether w may start a call now. While a throttle's pause
// holds it back, a timer pumps again at the pause's end. Callers hold
// s.mu.
func (s *settler) open(w *callWindow) bool {
	if w.calls >= w.Limit() {
		return false
	}
	now := time.Now()
	d := w.Paused(now)
	d += w.pace.wait(now.Add(d))
	if d == 0 || s.r.apiCtx.Err() != nil { // past the shutdown bound: calls fail at once anyway
		w.pace.take(now)
		return true
	}
	if !w.waking {
		w.waking = true
		s.retryLaterLocked(d, func() { w.waking = false })
	}
	return false
}

func newSettler(r *run) *settler {
	n := r.o.DeleteConcurrency
	s := &settler{r: r, limit: n, linger: r.o.DeleteLinger, retries: map[*time.Timer]func(){},
		del: callWindow{Window: throttle.NewWindow(1, n, n)}, chg: callWindow{Window: throttle.NewWindow(1, n, n)}}
	s.drained = sync.NewCond(&s.mu)
	s.timer = time.AfterFunc(time.Hour, s.lingerOver)
	s.timer.Stop()
	return s
}

// delete queues a handled message's delete.
func (s *settler) delete(t *inflight) {
	s.mu.Lock()
	s.deletes = append(s.deletes, deleteEntry{t: t})
	s.pumpLocked()
	s.mu.Unlock()
}

// change queues a visibility change.
func (s *settler) change(c visChange) {
	s.mu.Lock()
	s.changes = append(s.changes, c)
	s.pumpLocked()
	s.mu.Unlock()
}

// plug holds partial batches of visibility changes back until unplug, so a
// caller that queues several (a shutdown, a heartbeat, a failed group) has
// them sent ten to a call.
func (s *settler) plug() {
	s.mu.Lock()
	s.plugs++
	s.mu.Unlock()
}

func (s *settler) unplug() {
	s.mu.Lock()
	s.plugs--
	s.pumpLocked()
	s.mu.Unlock()
}

// kick sends a partial delete batch now: nothing else will join it soon.
func (s *settler) kick() {
	s.mu.Lock()
	if len(s.deletes) > 0 {
		s.lingerEnd = true
		s.pumpLocked()
	}
	s.mu.Unlock()
}

func (s *settler) lingerOver() {
	s.mu.Lock()
	s.lingering = false
	if len(s.deletes) > 0 {
		s.lingerEnd = true
		s.pumpLocked()
	}
	s.drained.Broadcast()
	s.mu.Unlock()
}

// drain sends everything queued, partial batches included, and waits until
// every call, retry and timer has ended.
func (s *settler) drain() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushAll = true
	s.pumpLocked()
	for s.calls > 0 || len(s.retries) > 0 || len(s.deletes) > 0 || len(s.changes) > 0 {
		s.drained.Wait()
	}
	s.flushAll = false
	s.stopLingerLocked()
	for s.lingering { // its callback is on its way
		s.drained.Wait()
	}
}

// stopLingerLocked stops the linger timer if it has not fired. Callers hold
// s.mu.
func (s *settler) stopLingerLocked() {
	if s.lingering && s.timer.Stop() {
		s.lingering = false
	}
}

// abandon sends at once, on Run's cancelled ctx, the entries waiting for a
// retry timer: Run is past its shutdown bound and waits for no timer.
func (s *settler) abandon() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for t, requeue := range s.retries {
		if t.Stop() {
			delete(s.retries, t)
			requeue()
		}
	}
	s.pumpLocked()
	s.drained.Broadcast()
}

// pumpLocked starts calls while there is room and something to send.
// Callers hold s.mu.
func (s *settler) pumpLocked() {
	for s.calls < s.limit {
		switch {
		case (len(s.changes) >= sqsrule.MaxBatchEntries || (len(s.changes) > 0 && s.plugs == 0)) && s.open(&s.chg):
			batch := takeFront(&s.changes)
			s.calls++
			s.chg.calls++
			go s.sendChanges(batch, s.chg.Start())
		case (len(s.deletes) >= sqsrule.MaxBatchEntries || (len(s.deletes) > 0 && (s.lingerEnd || s.flushAll || s.r.busy.Load() == 0))) && s.open(&s.del):
			batch := takeFront(&s.deletes)
			if len(s.deletes) == 0 {
				s.lingerEnd = false
				s.stopLingerLocked()
			}
			s.calls++
			s.del.calls++
			go s.sendDeletes(batch, s.del.Start())
		default:
			if len(s.deletes) > 0 && !s.lingering && !s.lingerEnd {
				s.lingering = true
				s.timer.Reset(s.linger)
			}
			return
		}
	}
}

// takeFront removes up to a batch of entries from the front of q, keeping
// q's array for the entries that come next.
func takeFront[T any](q *[]T) []T {
	n := min(len(*q), sqsrule.MaxBatchEntries)
	batch := append([]T(nil), (*q)[:n]...)
	rest := copy(*q, (*q)[n:])
	clear((*q)[rest:])
	*q = (*q)[:rest]
	return batch
}

// learn tells w how its call with ticket ended, before the call's entries
// are queued again: a throttled call pauses and narrows w, an answered one
// (err nil) widens it.
func (s *settler) learn(w *callWindow, ticket uint64, err error) {
	if err != nil && s.r.apiCtx.Err() == nil {
		s.r.c.ctl.failed(err, time.Now(), false)
	}
	s.mu.Lock()
	switch now := time.Now(); {
	case err == nil:
		w.Grow()
		w.pace.ok(now)
	case backoff.IsThrottle(err):
		if w.Cut(ticket, now) {
			w.pace.cut(now)
		}
	}
	s.mu.Unlock()
}

// ended records the end of a call of w and sends what waits.
func (s *settler) ended(w *callWindow) {
	s.mu.Lock()
	s.calls--
	w.calls--
	s.pumpLocked()
	s.drained.Broadcast()
	s.mu.Unlock()
}

// retryLater queues a failed entry again after d. requeue runs with s.mu
// held.
func (s *settler) retryLater(d time.Duration, requeue func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.retryLaterLocked(d, requeue)
}

// retryLaterLocked is retryLater for callers that hold s.mu.
func (s *settler) retryLaterLocked(d time.Duration, requeue func()) {
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if _, waiting := s.retries[t]; !waiting {
			return // abandon sent it
		}
		delete(s.retries, t)
		requeue()
		s.pumpLocked()
		s.drained.Broadcast()
	})
	s.retries[t] = requeue
}

// retryDelay says whether a failed entry of attempt may be tried again, and
// after how long: a throttled call's at once, without counting an attempt
// (it did nothing; its action's window pauses and narrows); another
// failure that may pass after 100 ms per attempt, while tries are left;
// none once Run is past its shutdown bound. next is the entry's attempt
// count for its next try.
func (s *settler) retryDelay(err error, attempt int) (d time.Duration, next int, ok bool) {
	switch {
	case s.r.apiCtx.Err() != nil || !retryable(err):
		return 0, attempt, false
	case backoff.IsThrottle(err):
		return 0, attempt, true
	case attempt+1 < settleAttempts:
		return time.Duration(attempt+1) * 100 * time.Millisecond, attempt + 1, true
	}
	return 0, attempt, false
}

// sendDeletes deletes a batch with each message's latest receipt handle. A
// message whose lease was lost, or whose visibility lapses within
// transitMargin, is not deleted: SQS may have delivered it again, and on a
// standard queue a stale handle's delete succeeds without deleting. For the
// same reason a delete whose answer came back after the lapse (an SDK
// retry, a slow link) is not reported as done but as a lost lease.
func (s *settler) sendDeletes(batch []deleteEntry, ticket uint64) {
	defer s.ended(&s.del)
	r := s.r
	now := time.Now()
	entries := make([]types.DeleteMessageBatchRequestEntry, 0, len(batch))
	sent := make([]deleteEntry, 0, len(batch))
	handles := make([]string, 0, len(batch))
	var lost []deleteEntry
	r.mu.Lock()
	for _, e := range batch {
		t := e.t
		if t.lost == nil && !now.Add(transitMargin).Before(t.visibleUntil) {
			r.loseLocked(t, fmt.Errorf("%w: visibility lapsed before the delete", ErrLeaseLost))
		}
		if t.lost != nil {
			lost = append(lost, e)
			continue
		}
		entries = append(entries, types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(len(entries))), ReceiptHandle: aws.String(t.handle)})
		sent = append(sent, e)
		handles = append(handles, t.handle)
	}
	r.mu.Unlock()
	for _, e := range lost {
		r.deleted(e.t, e.t.lost)
	}
	if len(entries) == 0 {
		return
	}
	ctx, call := r.obs.startCall(r.apiCtx, telemetry.OperationSettle, telemetry.OperationDelete, len(entries))
	out, err := r.c.client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(r.c.queueURL), Entries: entries}, throttle.SDKOption)
	answered := time.Now()
	s.learn(&s.del, ticket, err)
	call.end(ctx, -1, err)
	s.finalError(err)
	failed := batchFailures(out, err, len(sent))
	for i, e := range sent {
		ferr := failed[i]
		switch {
		case ferr == nil:
			if s.handleChanged(e.t, handles[i]) {
				// Redelivered to us while the delete was in flight: on a
				// standard queue the old handle may not have deleted it.
				s.requeueDelete(e)
				continue
			}
			r.deleted(e.t, s.lapsedBy(e.t, answered))
		default:
			d, next, ok := s.retryDelay(ferr, e.attempt)
			if !ok {
				r.deleted(e.t, ferr)
				continue
			}
			e.attempt = next
			s.retryLater(d, func() { s.deletes = append(s.deletes, e); s.lingerEnd = true })
		}
	}
}

// lapsedBy reports the lost lease of a message whose delete was answered at
// answered, if its visibility had lapsed by then (less transitMargin): the
// delete may have landed after SQS delivered it elsewhere.
func (s *settler) lapsedBy(t *inflight, answered time.Time) error {
	r := s.r
	r.mu.Lock()
	defer r.mu.Unlock()
	if t.lost == nil && !answered.Add(transitMargin).Before(t.visibleUntil) {
		r.loseLocked(t, fmt.Errorf("%w: the delete was answered after the visibility lapsed; SQS may have delivered the message again and kept it", ErrLeaseLost))
	}
	return t.lost
}

func (s *settler) handleChanged(t *inflight, sent string) bool {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	return t.handle != sent
}

func (s *settler) requeueDelete(e deleteEntry) {
	s.mu.Lock()
	s.deletes = append(s.deletes, e)
	s.lingerEnd = true
	s.mu.Unlock()
}

// sendChanges changes the visibility of a batch and reports each entry.
func (s *settler) sendChanges(batch []visChange, ticket uint64) {
	defer s.ended(&s.chg)
	r := s.r
	entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, len(batch))
	handles := make([]string, len(batch))
	r.mu.Lock()
	for i, c := range batch {
		handles[i] = c.handle
		if c.t != nil {
			handles[i] = c.t.handle
		}
		entries[i] = types.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(handles[i]), VisibilityTimeout: c.seconds}
	}
	r.mu.Unlock()
	sent := time.Now()
	ctx, call := r.obs.startCall(r.apiCtx, telemetry.OperationSettle, telemetry.OperationVisibility, len(entries))
	out, err := r.c.client.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(r.c.queueURL), Entries: entries}, throttle.SDKOption)
	s.learn(&s.chg, ticket, err)
	call.end(ctx, -1, err)
	s.finalError(err)
	failed := batchFailures(out, err, len(batch))
	for i, c := range batch {
		ferr := failed[i]
		if ferr != nil && c.kind != changeExtend {
			if d, next, ok := s.retryDelay(ferr, c.attempt); ok {
				c.attempt = next
				s.retryLater(d, func() { s.changes = append(s.changes, c) })
				continue
			}
		}
		if ferr != nil {
			r.log.LogAttrs(r.apiCtx, slog.LevelWarn, "consumer: change visibility failed", slog.String("error", ferr.Error()))
		}
		switch c.kind {
		case changeRelease:
			r.released(c.t, ferr, c.seconds, c.hold)
			if c.hold {
				r.holdDone(c.t, ferr, c.seconds, c.took)
			}
		case changeExtend:
			r.extended(c, handles[i], sent, ferr)
		}
	}
}

// finalError ends Run with a settle call's error that retrying cannot cure
// (access denied, the queue gone), as a receive's does: a consumer that
// cannot delete would handle the same messages again and again until they
// reach the dead-letter queue.
func (s *settler) finalError(err error) {
	if err != nil && sqserr.Final(err) {
		s.r.log.LogAttrs(s.r.apiCtx, slog.LevelError, "consumer: a delete or visibility change failed for good", slog.String("error", err.Error()))
		s.r.stop(err)
	}
}

// batchFailures maps a batch call's outcome to each of n entries: the
// call's error, the entry's Failed[] error, nil when Successful[] lists it,
// or, when neither list does, a retryable error: the entry's outcome is
// unknown, as if lost in transit (package fifo's rule), so a delete is not
// taken as done nor an extension as made.
func batchFailures[Out any](out *Out, err error, n int) []error {
	errs := make([]error, n)
	if err != nil {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	var failed []types.BatchResultErrorEntry
	succeeded := make([]bool, n)
	ok := func(id *string) {
		if i, convErr := strconv.Atoi(aws.ToString(id)); convErr == nil && i >= 0 && i < n {
			succeeded[i] = true
		}
	}
	switch o := any(out).(type) {
	case *sqs.DeleteMessageBatchOutput:
		failed = o.Failed
		for _, e := range o.Successful {
			ok(e.Id)
		}
	case *sqs.ChangeMessageVisibilityBatchOutput:
		failed = o.Failed
		for _, e := range o.Successful {
			ok(e.Id)
		}
	}
	for i := range errs {
		if !succeeded[i] {
			errs[i] = &entryError{code: "MissingResult", message: "the entry is missing from the answer"}
		}
	}
	for _, f := range failed {
		if i, convErr := strconv.Atoi(aws.ToString(f.Id)); convErr == nil && i >= 0 && i < n {
			errs[i] = &entryError{code: aws.ToString(f.Code), message: aws.ToString(f.Message), senderFault: f.SenderFault}
		}
	}
	return errs
}

// retryable reports whether an entry's or a call's failure may pass.
func retryable(err error) bool {
	if e, ok := err.(*entryError); ok {
		return !e.senderFault
	}
	return sqserr.Transient(err)
}

// entryError is a batch entry's failure.
type entryError struct {
	code, message string
	senderFault   bool
}

func (e *entryError) Error() string { return e.code + ": " + e.message }
