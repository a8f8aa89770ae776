package main

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/sqsfake"
)

// stage counts the story's calls, and in memory runs the story on
// sqsfake's ManualClock so that one seed tells one story, byte for byte.
// The consumers and replayers run on goroutines of their own, so their
// receives take turns:
//
//   - a receive reaches sqsfake only in its part's turn, as a short poll, so
//     each part finds the queues as the one before left them;
//   - turns go round the parts in a fixed order, each once every part has
//     settled what it received and waits to receive again, and round again
//     until a round brings nothing;
//   - then the clock moves to the next moment something was set to happen:
//     a delay, a visibility timeout or a long poll ends.
//
// The calls the story counts are the library's: one per long poll, not the
// short polls standing in for it. Within a turn the library's goroutines
// still race, so in memory a consumer runs one handler at a time (see
// handlerReturns) and a replayer takes one message a turn.
type stage struct {
	clock *sqsfake.ManualClock // nil on an endpoint: no turns, real time
	start time.Time

	mu       sync.Mutex
	cond     *sync.Cond
	parts    []*part // those that receive, in the order of their turns
	turn     *part   // whose receive may reach SQS now
	turns    int
	moments  []time.Time        // when something is set to happen
	receipts map[string]receipt // by receipt handle
	calls    map[string]int     // by operation
}

// receipt is when and in which turn a message was received: the story's
// events sort by it.
type receipt struct {
	at          time.Time
	turn, index int    // index: in its receive
	begun       int    // its part's receives begun by then
	batch       *batch // a FIFO consumer's receive
	group       string // its FIFO group
}

// batch is what a FIFO consumer's receive brought, by group, and which of
// its messages the handler has seen. Guarded by st.mu.
type batch struct {
	groups map[string][]string // receipt handles, in order
	ran    map[string]bool     // by receipt handle
	failed map[string]bool     // by group
}

// simLimit bounds a story's simulated time: ten replays of the demo's
// delays take about 15 h.
const simLimit = 48 * time.Hour

// defaultVisibility is the demo's queues' visibility timeout, SQS's default.
const defaultVisibility = 30 * time.Second

func newStage(clock *sqsfake.ManualClock) *stage {
	st := &stage{clock: clock, start: time.Now(), receipts: map[string]receipt{}, calls: map[string]int{}}
	st.cond = sync.NewCond(&st.mu)
	if clock != nil {
		st.start = clock.Now()
	}
	return st
}

func (st *stage) now() time.Time {
	if st.clock != nil {
		return st.clock.Now()
	}
	return time.Now()
}

// part is the SQS client of one part of the story: the producer, a
// consumer or a replayer.
type part struct {
	*sqs.Client
	st       *stage
	inFlight func() int64 // a consumer's Stats().InFlight
	replayer bool
	fifo     bool // a consumer of a FIFO queue

	// Guarded by st.mu.
	waiting, got bool            // waits for its turn; its last turn brought messages
	begun        int             // receives begun
	holding      map[string]bool // receipt handles not yet deleted or made invisible again
}

// newPart returns a part; receives makes its receives take turns.
func (st *stage) newPart(client *sqs.Client, receives bool) *part {
	p := &part{Client: client, st: st, holding: map[string]bool{}}
	if receives {
		st.parts = append(st.parts, p)
	}
	return p
}

// note counts a call of op, and records the moments, d from now, that it
// sets something to happen.
func (st *stage) note(op string, ds ...int32) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.calls[op]++
	for _, d := range ds {
		if st.clock != nil && d > 0 {
			st.moments = append(st.moments, st.clock.Now().Add(time.Duration(d)*time.Second))
		}
	}
}

// receipt returns when and in which turn the message with this receipt
// handle was received; on an endpoint, now.
func (st *stage) receipt(handle string) receipt {
	st.mu.Lock()
	defer st.mu.Unlock()
	if r, ok := st.receipts[handle]; ok {
		return r
	}
	st.turns++
	return receipt{at: st.now(), turn: st.turns}
}

// ReceiveMessage is one of the library's receives. In memory it polls, in
// each of its part's turns, until it gets messages or the clock reaches the
// end of the wait it asked for.
func (p *part) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	st := p.st
	st.note("ReceiveMessage", in.WaitTimeSeconds)
	if st.clock == nil {
		return p.Client.ReceiveMessage(ctx, in, optFns...)
	}
	defer context.AfterFunc(ctx, st.wake)()
	short := *in
	short.WaitTimeSeconds = 0
	if p.replayer {
		// One message a turn: the library settles a replayer's batch on
		// several goroutines (an escalation's send races the others'
		// deletes), and a batch of one makes the same calls every run.
		short.MaxNumberOfMessages = 1
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	p.begun++
	end := st.clock.Now().Add(time.Duration(in.WaitTimeSeconds) * time.Second)
	for {
		p.waiting = true
		st.cond.Broadcast()
		for st.turn != p && ctx.Err() == nil {
			st.cond.Wait()
		}
		p.waiting = false
		if st.turn != p {
			return nil, ctx.Err()
		}
		st.mu.Unlock()
		out, err := p.Client.ReceiveMessage(ctx, &short, optFns...)
		st.mu.Lock()
		now := st.clock.Now()
		p.got, st.turn = err == nil && len(out.Messages) > 0, nil
		st.cond.Broadcast()
		if p.got {
			p.received(out.Messages, now, in.VisibilityTimeout)
		}
		if err != nil || p.got || !now.Before(end) {
			return out, err
		}
	}
}

// received records what a turn brought. Callers hold st.mu.
func (p *part) received(msgs []types.Message, now time.Time, visibility int32) {
	st := p.st
	vis := defaultVisibility
	if visibility > 0 {
		vis = time.Duration(visibility) * time.Second
	}
	st.moments = append(st.moments, now.Add(vis))
	var b *batch
	if p.fifo {
		b = &batch{groups: map[string][]string{}, ran: map[string]bool{}, failed: map[string]bool{}}
	}
	skew := time.Since(now).Milliseconds()
	for i := range msgs {
		m := &msgs[i]
		handle := aws.ToString(m.ReceiptHandle)
		r := receipt{at: now, turn: st.turns, index: i, begun: p.begun, batch: b}
		if b != nil {
			r.group = m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
			b.groups[r.group] = append(b.groups[r.group], handle)
		}
		st.receipts[handle], p.holding[handle] = r, true
		if ms, err := strconv.ParseInt(m.Attributes[sentTimestamp], 10, 64); p.replayer && err == nil {
			// A replayer reads SentTimestamp with the machine's clock to tell
			// when a message held in the DLQ is due, as it would beside real
			// SQS, whose clock is the world's: move it onto that clock.
			m.Attributes[sentTimestamp] = strconv.FormatInt(ms+skew, 10)
		}
	}
}

const sentTimestamp = string(types.MessageSystemAttributeNameSentTimestamp)

// settled lets go of the receipt handles of a batch call's entries, but
// those that failed.
func (p *part) settled(handles map[string]string, failed []types.BatchResultErrorEntry) {
	p.st.mu.Lock()
	defer p.st.mu.Unlock()
	for _, f := range failed {
		delete(handles, aws.ToString(f.Id))
	}
	for _, h := range handles {
		delete(p.holding, h)
	}
}

func (p *part) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	p.st.note("DeleteMessageBatch")
	out, err := p.Client.DeleteMessageBatch(ctx, in, optFns...)
	if err == nil {
		handles := map[string]string{}
		for _, e := range in.Entries {
			handles[aws.ToString(e.Id)] = aws.ToString(e.ReceiptHandle)
		}
		p.settled(handles, out.Failed)
	}
	return out, err
}

func (p *part) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	handles, after := map[string]string{}, []int32{}
	for _, e := range in.Entries {
		handles[aws.ToString(e.Id)] = aws.ToString(e.ReceiptHandle)
		after = append(after, e.VisibilityTimeout)
	}
	p.st.note("ChangeMessageVisibilityBatch", after...)
	out, err := p.Client.ChangeMessageVisibilityBatch(ctx, in, optFns...)
	if err == nil {
		p.settled(handles, out.Failed)
	}
	return out, err
}

func (p *part) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	var after []int32
	for _, e := range in.Entries {
		after = append(after, e.DelaySeconds)
	}
	p.st.note("SendMessageBatch", after...)
	return p.Client.SendMessageBatch(ctx, in, optFns...)
}

func (p *part) GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	p.st.note("GetQueueAttributes")
	return p.Client.GetQueueAttributes(ctx, in, optFns...)
}

func (st *stage) wake() {
	st.mu.Lock()
	st.cond.Broadcast()
	st.mu.Unlock()
}

// run gives turns until done reports the story's end, moving the clock
// whenever a round brings nothing.
func (st *stage) run(ctx context.Context, done func(context.Context) (bool, error)) error {
	defer context.AfterFunc(ctx, st.wake)()
	for {
		progressed := false
		for _, p := range st.parts {
			got, err := st.give(ctx, p)
			if err != nil {
				return err
			}
			progressed = progressed || got
		}
		if err := st.settle(ctx); err != nil {
			return err
		}
		if progressed {
			continue
		}
		if ok, err := done(ctx); ok || err != nil {
			return err
		}
		st.mu.Lock()
		now := st.clock.Now()
		st.moments = slices.DeleteFunc(st.moments, func(t time.Time) bool { return !t.After(now) })
		next := slices.MinFunc(append(st.moments, now.Add(simLimit)), time.Time.Compare)
		st.mu.Unlock()
		if next.Sub(st.start) > simLimit {
			return fmt.Errorf("the story did not end within %v of simulated time", simLimit)
		}
		st.clock.Set(next)
	}
}

// settle waits until every receiving part waits for its turn and holds no
// message.
func (st *stage) settle(ctx context.Context) error {
	for {
		st.mu.Lock()
		for !st.allWaiting() && ctx.Err() == nil {
			st.cond.Wait()
		}
		var inFlight []func() int64
		ok := true
		for _, p := range st.parts {
			ok = ok && len(p.holding) == 0
			if p.inFlight != nil {
				inFlight = append(inFlight, p.inFlight)
			}
		}
		st.mu.Unlock()
		for _, n := range inFlight { // outside st.mu: the consumer takes its own locks
			ok = ok && n() == 0
		}
		switch {
		case ctx.Err() != nil:
			return context.Cause(ctx)
		case ok:
			return nil
		}
		time.Sleep(20 * time.Microsecond)
	}
}

// allWaiting reports whether every receiving part waits for its turn.
// Callers hold st.mu.
func (st *stage) allWaiting() bool {
	for _, p := range st.parts {
		if !p.waiting {
			return false
		}
	}
	return true
}

// give settles the story, gives p its turn, and returns once the turn is
// over, with whether it brought messages.
func (st *stage) give(ctx context.Context, p *part) (bool, error) {
	if err := st.settle(ctx); err != nil {
		return false, err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.turn = p
	st.turns++
	st.cond.Broadcast()
	for st.turn == p && ctx.Err() == nil {
		st.cond.Wait()
	}
	if st.turn == p {
		st.turn = nil
		return false, context.Cause(ctx)
	}
	return p.got, nil
}

// handlerReturns is called, in memory, as a consumer's handler returns
// (ok: with nil). The consumer runs one handler at a time (Concurrency 1),
// so it settles each message, its delete or release batched as in every
// run, before it starts the next; and it receives again once no message of
// the last receive waits for the handler. How many messages a FIFO
// consumer's receive asks for depends on the failures it has heard of (its
// FIFO guard): of the handler running then, by chance. So that handler, the
// last of its receive to start but for its own group's later messages,
// waits until the next receive has begun.
func (st *stage) handlerReturns(ctx context.Context, p *part, handle string, ok bool, log *slog.Logger) {
	if st.clock == nil || !p.fifo {
		return
	}
	st.mu.Lock()
	r := st.receipts[handle]
	last := r.batch != nil
	if b := r.batch; b != nil {
		b.ran[handle] = true
		b.failed[r.group] = b.failed[r.group] || !ok
		for g, handles := range b.groups {
			for _, h := range handles {
				last = last && (g == r.group || b.failed[g] || b.ran[h])
			}
		}
	}
	st.mu.Unlock()
	for waited := time.Duration(0); last && ctx.Err() == nil; waited += 20 * time.Microsecond {
		st.mu.Lock()
		next := p.begun > r.begun
		st.mu.Unlock()
		switch {
		case next:
			return
		case waited > time.Second:
			log.Error("demo: a handler waited a second for its consumer's next receive; this run may not repeat")
			return
		}
		time.Sleep(20 * time.Microsecond)
	}
}

// callsOf returns the calls of op so far.
func (st *stage) callsOf(op string) int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.calls[op]
}

// callCounts returns the calls so far, by operation.
func (st *stage) callCounts() map[string]int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return maps.Clone(st.calls)
}
