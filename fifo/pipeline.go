package fifo

import (
	"cmp"
	"container/heap"
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/internal/sqserr"
	"github.com/sqskit/sqskit/internal/sqsrule"
	"github.com/sqskit/sqskit/internal/throttle"
)

// pipeline sends prepared messages in SendMessageBatch calls, up to limit
// calls in flight, and settles each message exactly once through report. It
// is what SendBatch and the Batcher share.
//
// Batches are formed from the messages that may go now, up to ten entries
// and MaxBatchBytes: the one of lowest index (a SendBatch position, or a
// Batcher arrival) with the rest of its group's run behind it, then, while
// there is room, the shortest run that fits whole (a group's unsent
// messages), or a piece of the oldest when none does. On FIFO queues a
// group is in at most one call at a time: its messages go in index order,
// the next ones wait while a call carries the group, and while one of them
// waits to be retried the rest of the group waits behind it. Other groups,
// and every message on a standard queue, go on meanwhile, so a retrying
// message holds back only its own group. Taking a group's consecutive
// messages together keeps the groups in each batch few, so that many
// batches of disjoint groups can be in flight: ten groups with messages
// waiting fill ten calls, where batches of one message per group would
// fill one.
//
// Within limit, a window (internal/throttle) bounds the calls in flight
// once SQS has throttled one (a FIFO queue takes 300 calls a second per
// action): it halves at a throttle, pauses new calls briefly, and grows
// back slowly. It starts where the Sender's last pipeline left it.
//
// One goroutine drives a pipeline (SendBatch's caller, or the Batcher's
// dispatcher); each call runs on a goroutine of its own that hands its
// outcome back on done, and the driver settles it.
type pipeline struct {
	s       *Sender
	limit   int
	indexed bool // GroupBlockedError names the index of the blocking message
	report  func(p *prepared, r Result)

	groups  map[string]*group // FIFO groups with messages not yet sent
	ready   prepHeap          // may go now: group heads and standard messages, by index
	waiting prepHeap          // waiting to be retried, by readyAt
	queued  int               // messages neither settled nor in flight
	flights int               // calls in flight
	win     throttle.Window   // how many calls may be in flight: at most limit
	done    chan flight

	timer   *time.Timer // fires when waiting[0] is due, or the window's pause ends
	timerAt time.Time
}

// group is the unsent part of one FIFO group, in index order.
type group struct {
	id   string
	msgs []*prepared
	// held: a call in flight carries the group, or its head waits for a
	// retry; its messages are then in neither heap.
	held bool
	// storedMax is the highest index of the group's messages that a call
	// that came back may have stored (-1 before any): a message of a lower
	// index that a later call may store sits behind it.
	storedMax int
}

// flight is the outcome of one call.
type flight struct {
	batch  []*prepared
	ticket uint64 // in the window
	out    *sqs.SendMessageBatchOutput
	err    error
}

func (s *Sender) newPipeline(limit int, indexed bool, report func(*prepared, Result)) *pipeline {
	s.winMu.Lock()
	win := s.win.Carry(1, limit)
	s.winMu.Unlock()
	return &pipeline{
		s: s, limit: limit, indexed: indexed, report: report, win: win,
		groups:  map[string]*group{},
		ready:   prepHeap{less: func(a, b *prepared) bool { return a.index < b.index }},
		waiting: prepHeap{less: func(a, b *prepared) bool { return a.readyAt.Before(b.readyAt) }},
		done:    make(chan flight, limit), // a call never waits to hand its outcome back
	}
}

// add queues p behind the messages of its group added before it.
func (q *pipeline) add(p *prepared) {
	q.queued++
	if p.orderGroup == "" {
		heap.Push(&q.ready, p)
		return
	}
	g := q.groups[p.orderGroup]
	if g == nil {
		g = &group{id: p.orderGroup, storedMax: -1}
		q.groups[g.id] = g
	}
	p.group = g
	g.msgs = append(g.msgs, p)
	if !g.held && len(g.msgs) == 1 {
		heap.Push(&q.ready, p)
	}
}

// idle reports whether every message added so far is settled.
func (q *pipeline) idle() bool { return q.queued == 0 && q.flights == 0 }

// close hands the window to the Sender's next pipeline.
func (q *pipeline) close() {
	q.stopTimer()
	q.s.winMu.Lock()
	q.s.win = q.win
	q.s.winMu.Unlock()
}

// fill starts calls while a slot is free and a batch can be formed; a batch
// short of ten entries goes only when partial. It returns how many calls it
// started. Once ctx is done it starts none and settles every message not in
// flight with ctx's error.
func (q *pipeline) fill(ctx context.Context, partial bool) int {
	if err := ctx.Err(); err != nil {
		q.abandon(err)
		return 0
	}
	started := 0
	for q.flights < q.win.Limit() && q.win.Paused(time.Now()) == 0 {
		batch := q.next(partial)
		if len(batch) == 0 {
			break
		}
		q.start(ctx, batch)
		started++
	}
	return started
}

// next takes the next batch, up to ten entries and MaxBatchBytes (a
// message larger than MaxBatchBytes goes alone): the message of lowest
// index that may go, followed by the later messages of its group, in
// order, as far as they fit; then, while there is room, the shortest run
// that fits whole (short runs leave room for others, so batches fill:
// runs of 4, 3 and 3 make ten where 4 and 4 leave two), or, when none
// does, the lowest one cut to fit. A message SQS failed on its own travels
// without the rest of its group. A batch that is not full is put back
// unless partial.
func (q *pipeline) next(partial bool) []*prepared {
	if !partial && !q.canFill() {
		return nil
	}
	var batch []*prepared
	bytes, full := 0, false
	fits := func(p *prepared) bool {
		return len(batch) < sqsrule.MaxBatchEntries && (len(batch) == 0 || bytes+p.size <= q.s.opts.MaxBatchBytes)
	}
	for q.ready.Len() > 0 && !full {
		p := q.ready.items[0]
		if len(batch) > 0 {
			p = q.wholeRun(len(batch), bytes)
		}
		if !fits(p) {
			full = true
			break
		}
		q.ready.remove(p)
		for _, m := range q.runOf(p) { // taking m shrinks g.msgs, not the slice ranged over
			if !fits(m) {
				full = true
				break
			}
			batch = append(batch, m)
			bytes += m.size
			if g := m.group; g != nil {
				g.msgs[0] = nil
				g.msgs = g.msgs[1:]
				g.held = true
			}
		}
	}
	full = full || len(batch) == sqsrule.MaxBatchEntries
	if len(batch) == 0 || (!full && !partial) {
		q.putBack(batch)
		return nil
	}
	q.queued -= len(batch)
	return batch
}

// runOf is what goes with head when it goes: the unsent messages of its
// group, in order, or head alone (a standard message, or one SQS failed on
// its own).
func (q *pipeline) runOf(head *prepared) []*prepared {
	if g := head.group; g != nil && !head.entryFailed {
		return g.msgs
	}
	return []*prepared{head}
}

// wholeRunScan bounds the ready heads wholeRun looks at: the top of the
// heap, which holds the oldest (the heap's first 63 slots are its top six
// levels), so that a batch costs the same whether 30 groups or 100,000
// have messages waiting.
const wholeRunScan = 63

// wholeRun returns, among the oldest ready heads, the one with the
// shortest run (the lowest index among equals) that fits whole in a batch
// that holds n entries of bytes, or the ready head of lowest index when
// none does.
func (q *pipeline) wholeRun(n, bytes int) *prepared {
	var best *prepared
	bestLen := 0
	for _, head := range q.ready.items[:min(len(q.ready.items), wholeRunScan)] {
		run := q.runOf(head)
		if n+len(run) > sqsrule.MaxBatchEntries || (best != nil && (len(run) > bestLen || (len(run) == bestLen && head.index > best.index))) {
			continue
		}
		size := 0
		for _, m := range run {
			size += m.size
		}
		if bytes+size <= q.s.opts.MaxBatchBytes {
			best, bestLen = head, len(run)
		}
	}
	if best == nil {
		return q.ready.items[0]
	}
	return best
}

// joinable reports whether a call in flight carries a FIFO group with
// messages waiting behind it, which become ready when it comes back.
func (q *pipeline) joinable() bool {
	if q.flights == 0 {
		return false
	}
	for _, g := range q.groups {
		if g.held && len(g.msgs) > 0 && g.msgs[0].retryCause == nil {
			return true
		}
	}
	return false
}

// canFill reports whether the messages that may go could fill a batch:
// ten of them, or more than MaxBatchBytes. It spares the Batcher forming a
// batch on each arrival only to put it back.
func (q *pipeline) canFill() bool {
	n, bytes := 0, 0
	for _, head := range q.ready.items {
		run := []*prepared{head}
		if g := head.group; g != nil && !head.entryFailed {
			run = g.msgs
		}
		for _, p := range run {
			n, bytes = n+1, bytes+p.size
			if n >= sqsrule.MaxBatchEntries || bytes > q.s.opts.MaxBatchBytes {
				return true
			}
		}
	}
	return false
}

// putBack undoes next for a batch that will not go yet.
func (q *pipeline) putBack(batch []*prepared) {
	for i := len(batch) - 1; i >= 0; i-- {
		p := batch[i]
		g := p.group
		if g == nil {
			heap.Push(&q.ready, p)
			continue
		}
		if len(g.msgs) > 0 {
			q.ready.remove(g.msgs[0]) // in the heap only if it was never taken
		}
		g.msgs = slices.Insert(g.msgs, 0, p)
		g.held = false
		heap.Push(&q.ready, p)
	}
}

// start sends batch on a goroutine of its own. A throttled call is the
// pipeline's to pace (its window), so the SDK does not retry it.
func (q *pipeline) start(ctx context.Context, batch []*prepared) {
	q.s.markAttempt(batch...)
	for _, p := range batch {
		p.retryCause = nil
	}
	in := q.s.batchInput(batch)
	q.flights++
	ticket := q.win.Start()
	go func() {
		start := q.s.obs.call()
		out, err := q.s.client.SendMessageBatch(ctx, in, throttle.SDKOption)
		q.s.obs.called(ctx, start, err)
		q.done <- flight{batch: batch, ticket: ticket, out: out, err: err}
	}()
}

// complete settles a call's outcome: accepted entries, entries failed for
// good (which block the later messages of their groups), and entries to
// retry, which wait SendBackoff at the head of their groups.
func (q *pipeline) complete(ctx context.Context, f flight) {
	q.flights--
	switch {
	case f.err == nil:
		q.win.Grow()
	case backoff.IsThrottle(f.err):
		q.win.Cut(f.ticket, time.Now())
	}
	var retry, failed []*prepared
	var cause error
	switch {
	case f.err == nil:
		retry, failed, cause = q.outcomes(f.batch, f.out)
	case !sqserr.Transient(f.err):
		n := callUnconfirmed(f.err)
		q.mayHaveStored(f.batch, func(int) bool { return n > 0 }, n)
		for _, p := range f.batch {
			p.unconfirmed += n
			q.fail(p, f.err)
		}
		failed = f.batch
	default:
		n := callUnconfirmed(f.err)
		q.mayHaveStored(f.batch, func(int) bool { return n > 0 }, n)
		for _, p := range f.batch {
			p.unconfirmed += n
		}
		retry, cause = f.batch, f.err // same entries, same ids
	}
	if len(retry) > 0 {
		retry, failed = q.planRetry(ctx, retry, failed, cause)
		q.requeue(retry)
	}
	// Once ctx is done, abandon settles the rest with ctx's error instead.
	if ctx.Err() == nil && !q.s.opts.ContinueGroupAfterFailure {
		// The earliest failure of a group names the block, as in SendBatch's
		// validation.
		slices.SortFunc(failed, func(a, b *prepared) int { return cmp.Compare(a.index, b.index) })
		for _, p := range failed {
			q.block(p)
		}
	}
	q.release(f.batch)
}

// mayHaveStored flags the reorderings a call that came back may have made
// in the groups of batch, before any of its messages is settled. stored
// says which entries the call may have stored (acknowledged, or left
// without an answer); requests is how many of its requests may have stored
// them (the SDK may have sent it more than once).
//
// A message the call may have stored sits behind a later message of its
// group that an earlier call may have stored: SQS may have failed it there
// (in Failed[], or with an answer that was lost) while storing the later
// one, and this call stored it after. Within one request SQS stores entries
// in batch order; when several requests may have stored, an earlier one
// may have stored a later entry of the group without this one, so the
// earlier entries of the group are flagged too. A lost answer cannot be
// told from a stored batch, so this flags some messages that are in order:
// Reordered means the message may sit behind a later one, never that it
// does not when false.
func (q *pipeline) mayHaveStored(batch []*prepared, stored func(i int) bool, requests int) {
	for i, p := range batch {
		g := p.group
		if g == nil || !stored(i) {
			continue
		}
		if g.storedMax > p.index {
			p.reordered = true
			continue
		}
		for j := i + 1; requests > 1 && j < len(batch); j++ {
			if batch[j].group == g && stored(j) {
				p.reordered = true
				break
			}
		}
	}
	for i, p := range batch {
		if g := p.group; g != nil && stored(i) {
			g.storedMax = max(g.storedMax, p.index)
		}
	}
}

// planRetry decides the retry of retry after cause: the ones out of
// attempts or past the deduplication window fail for good and join failed;
// the others wait SendBackoff, unless ctx is done, which fails them too.
func (q *pipeline) planRetry(ctx context.Context, retry, failed []*prepared, cause error) (waiting, allFailed []*prepared) {
	var prev time.Duration
	for _, p := range retry {
		prev = max(prev, p.lastDelay)
	}
	d, final := q.s.plan(retry, prev, cause)
	for i, p := range retry {
		if final[i] != nil {
			q.fail(p, final[i])
			failed = append(failed, p)
			continue
		}
		waiting = append(waiting, p)
	}
	if len(waiting) == 0 {
		return nil, failed
	}
	if err := ctx.Err(); err != nil {
		for _, p := range waiting {
			q.fail(p, errors.Join(cause, err))
		}
		return nil, append(failed, waiting...)
	}
	q.s.opts.Logger.LogAttrs(ctx, slog.LevelDebug, "fifo: retrying send", slog.Int("messages", len(waiting)), slog.Duration("delay", d), slog.String("error", cause.Error()))
	at := time.Now().Add(d)
	for _, p := range waiting {
		p.readyAt, p.lastDelay, p.retryCause = at, d, cause
	}
	return waiting, failed
}

// requeue puts the messages to retry back: a FIFO message in front of the
// rest of its group (a group's retries are its earliest messages, and keep
// their batch order); a standard message in the waiting heap on its own.
func (q *pipeline) requeue(retry []*prepared) {
	q.queued += len(retry)
	var fronts map[*group][]*prepared
	for _, p := range retry {
		if p.group == nil {
			heap.Push(&q.waiting, p)
			continue
		}
		if fronts == nil {
			fronts = map[*group][]*prepared{}
		}
		fronts[p.group] = append(fronts[p.group], p)
	}
	for g, ps := range fronts {
		g.msgs = append(ps, g.msgs...)
	}
}

// release frees the groups of a call that came back: a group whose head
// is to be retried waits in the waiting heap, still held; another goes back
// to the ready heap, or is dropped once empty.
func (q *pipeline) release(batch []*prepared) {
	var seen [sqsrule.MaxBatchEntries]*group
	n := 0
	for _, p := range batch {
		g := p.group
		if g == nil || slices.Contains(seen[:n], g) {
			continue
		}
		seen[n] = g
		n++
		switch {
		case len(g.msgs) == 0:
			g.held = false
			if q.groups[g.id] == g {
				delete(q.groups, g.id)
			}
		case g.msgs[0].retryCause != nil:
			heap.Push(&q.waiting, g.msgs[0])
		default:
			g.held = false
			heap.Push(&q.ready, g.msgs[0])
		}
	}
}

// retryDue returns a channel that delivers when the earliest waiting retry
// is due, or when the window's pause ends while messages are ready, or nil
// when neither waits.
func (q *pipeline) retryDue() <-chan time.Time {
	var at time.Time
	if q.waiting.Len() > 0 {
		at = q.waiting.items[0].readyAt
	}
	if now := time.Now(); q.ready.Len() > 0 {
		if d := q.win.Paused(now); d > 0 && (at.IsZero() || now.Add(d).Before(at)) {
			at = now.Add(d)
		}
	}
	if at.IsZero() {
		q.stopTimer()
		return nil
	}
	if q.timer == nil || !at.Equal(q.timerAt) {
		q.stopTimer()
		q.timer, q.timerAt = time.NewTimer(time.Until(at)), at
	}
	return q.timer.C
}

func (q *pipeline) stopTimer() {
	if q.timer != nil {
		q.timer.Stop()
		q.timer = nil
	}
}

// wake makes the retries that are due ready to go.
func (q *pipeline) wake() {
	q.timer = nil
	now := time.Now()
	for q.waiting.Len() > 0 && !q.waiting.items[0].readyAt.After(now) {
		p := heap.Pop(&q.waiting).(*prepared)
		if p.group != nil {
			p.group.held = false
		}
		heap.Push(&q.ready, p)
	}
}

// block fails the messages of failed's group that come after it and are
// not sent yet: sending them would put them ahead of it. The group is held
// by the call that failed it, so none of them is in a heap.
func (q *pipeline) block(failed *prepared) {
	g := failed.group
	if g == nil {
		return
	}
	index := failed.index
	if !q.indexed {
		index = -1
	}
	kept := g.msgs[:0]
	for _, p := range g.msgs {
		if p.index <= failed.index {
			kept = append(kept, p)
			continue
		}
		q.queued--
		q.fail(p, &GroupBlockedError{GroupID: g.id, Index: index, Cause: failed.err})
	}
	clear(g.msgs[len(kept):])
	g.msgs = kept
}

// abandon settles every message not in flight with err, joined with the
// failure it was waiting to retry: ctx is done.
func (q *pipeline) abandon(err error) {
	if q.queued == 0 {
		return
	}
	settle := func(p *prepared) {
		if p.retryCause != nil {
			q.fail(p, errors.Join(p.retryCause, err))
			return
		}
		q.fail(p, err)
	}
	for _, p := range q.waiting.items {
		if p.group != nil {
			p.group.held = false // waiting, not in flight
		}
	}
	for _, h := range []*prepHeap{&q.ready, &q.waiting} {
		for _, p := range h.items {
			if p.group == nil {
				settle(p)
			}
		}
		clear(h.items)
		h.items = h.items[:0]
	}
	for id, g := range q.groups {
		for _, p := range g.msgs {
			settle(p)
		}
		g.msgs = nil
		if !g.held { // a held group is in flight: release drops it
			delete(q.groups, id)
		}
	}
	q.queued = 0
	q.stopTimer()
}

// fail settles p with err.
func (q *pipeline) fail(p *prepared, err error) {
	r := p.result()
	r.Err = err
	p.err, p.retryCause = err, nil
	q.report(p, r)
}

// prepHeap is a binary heap of messages ordered by less; each message
// records its position, so it can be removed from the middle.
type prepHeap struct {
	items []*prepared
	less  func(a, b *prepared) bool
}

func (h prepHeap) Len() int           { return len(h.items) }
func (h prepHeap) Less(i, j int) bool { return h.less(h.items[i], h.items[j]) }
func (h prepHeap) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.items[i].heapIndex, h.items[j].heapIndex = i, j
}
func (h *prepHeap) Push(x any) {
	p := x.(*prepared)
	p.heapIndex = len(h.items)
	h.items = append(h.items, p)
}
func (h *prepHeap) Pop() any {
	n := len(h.items) - 1
	p := h.items[n]
	h.items[n] = nil
	h.items = h.items[:n]
	p.heapIndex = -1
	return p
}

// remove takes p out of the heap if it is in it.
func (h *prepHeap) remove(p *prepared) {
	if i := p.heapIndex; i >= 0 && i < len(h.items) && h.items[i] == p {
		heap.Remove(h, i)
	}
}
