package main

import (
	"context"
	"errors"
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

// simLimit bounds a story's simulated time: ten replays of the demo's
// delays take about 15 h.
const simLimit = 48 * time.Hour

// errSimLimit is returned when a story has not ended within simLimit.
var errSimLimit = errors.New("the story did not end within its simulated time limit")

// defaultVisibility is the visibility timeout of the demo's queues (SQS's
// default), which a receive that names none gets.
const defaultVisibility = 30 * time.Second

// stage counts the story's calls, and in memory runs the story on
// sqsfake's ManualClock so that one seed tells one story, byte for byte.
// The library runs its consumers and replayers on goroutines of their own,
// so the stage makes their SQS calls take turns:
//
//   - a receive reaches sqsfake only in its part's turn, as a short poll, so
//     each part finds the queues as the one before left them;
//   - turns go round the parts in a fixed order, each once every part has
//     settled what it received (deleted, released, held) and is waiting to
//     receive again, and round again until a round brings nothing;
//   - then the clock moves to the next moment something was set to happen:
//     a delay or a visibility timeout ends, or a long poll does.
//
// A long poll the library asked for ends, empty, when the clock reaches its
// end; the calls the story reports are the library's (one per long poll),
// not the short polls that stand in for it.
//
// Within a turn the library's goroutines still race, so the story runs
// each consumer with one handler at a time, and a FIFO consumer's last
// handler of a receive waits for the next receive to begin (see
// handlerReturns); a replayer takes one message a turn; and a replayer
// reads SentTimestamp on the machine's clock, as it would beside real SQS
// (see shiftSentTimestamps).
type stage struct {
	clock *sqsfake.ManualClock // nil on an endpoint: no turns, real time
	start time.Time

	mu       sync.Mutex
	cond     *sync.Cond
	parts    []*part            // those that receive, in the order of their turns
	turn     *part              // whose receive may reach SQS now; nil: nobody's
	turns    int                // turns given so far
	moments  []time.Time        // when something is set to happen
	receipts map[string]receipt // by receipt handle
	calls    map[string]int     // the story's calls, by operation
}

// receipt says when and in which turn a message was received: the story's
// events sort by it.
type receipt struct {
	at    time.Time
	turn  int
	index int    // in its receive
	begun int    // the receives its part had begun by then
	batch *batch // a FIFO consumer's receive
}

// batch is what a FIFO consumer's receive brought, by group, and what its
// handler has made of it so far. Guarded by st.mu.
type batch struct {
	groups map[string][]string // receipt handles, in order
	group  map[string]string   // by receipt handle
	ran    map[string]bool     // by receipt handle
	failed map[string]bool     // by group
}

func newStage(clock *sqsfake.ManualClock) *stage {
	st := &stage{clock: clock, receipts: map[string]receipt{}, calls: map[string]int{}}
	st.cond = sync.NewCond(&st.mu)
	if clock != nil {
		st.start = clock.Now()
	} else {
		st.start = time.Now()
	}
	return st
}

func (st *stage) now() time.Time {
	if st.clock != nil {
		return st.clock.Now()
	}
	return time.Now()
}

// part is the SQS client of one part of the story (the producer, a
// consumer, a replayer): it counts the calls, and in memory a receiver's
// receives wait for their turn.
type part struct {
	*sqs.Client
	st *stage

	// Set before the story starts.
	inFlight func() int64 // a consumer's Stats().InFlight; nil for a replayer
	replayer bool         // shift SentTimestamp to the machine's clock
	fifo     bool         // a consumer of a FIFO queue: see handlerReturns

	// Guarded by st.mu.
	waiting bool            // in a receive, waiting for its turn
	got     bool            // its last turn brought messages
	begun   int             // receives begun
	holding map[string]bool // receipt handles received and not yet deleted or made invisible again
}

// newPart adds a part; receives makes it one whose receives take turns.
func (st *stage) newPart(client *sqs.Client, receives bool) *part {
	p := &part{Client: client, st: st, holding: map[string]bool{}}
	if receives {
		st.parts = append(st.parts, p)
	}
	return p
}

func (st *stage) count(op string) {
	st.mu.Lock()
	st.calls[op]++
	st.mu.Unlock()
}

// at records a moment when something is set to happen. Callers hold st.mu.
func (st *stage) at(t time.Time) {
	if st.clock != nil && t.After(st.clock.Now()) {
		st.moments = append(st.moments, t)
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

// ReceiveMessage is one receive of the library's. In memory it waits for
// the part's turn, and polls without waiting in each turn until it gets
// messages or the clock reaches the end of the wait it asked for.
func (p *part) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	st := p.st
	st.count("ReceiveMessage")
	if st.clock == nil {
		return p.Client.ReceiveMessage(ctx, in, optFns...)
	}
	stop := context.AfterFunc(ctx, st.wake)
	defer stop()
	st.mu.Lock()
	defer st.mu.Unlock()
	p.begun++
	end := st.clock.Now().Add(time.Duration(in.WaitTimeSeconds) * time.Second)
	st.at(end)
	short := *in
	short.WaitTimeSeconds = 0
	if p.replayer {
		// One message a turn: the library settles a replayer's batch on
		// several goroutines (an escalation's send to the operator queue
		// races the other messages' deletes), so a batch of one keeps its
		// calls the same in every run.
		short.MaxNumberOfMessages = 1
	}
	for {
		p.waiting = true
		st.cond.Broadcast() // for settle
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
		p.got = err == nil && len(out.Messages) > 0
		st.turn = nil
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
	st.at(now.Add(vis))
	var b *batch
	if p.fifo {
		b = &batch{groups: map[string][]string{}, group: map[string]string{}, ran: map[string]bool{}, failed: map[string]bool{}}
	}
	for i := range msgs {
		handle := aws.ToString(msgs[i].ReceiptHandle)
		st.receipts[handle] = receipt{at: now, turn: st.turns, index: i, begun: p.begun, batch: b}
		p.holding[handle] = true
		if b != nil {
			g := msgs[i].Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
			b.groups[g] = append(b.groups[g], handle)
			b.group[handle] = g
		}
	}
	if p.replayer {
		shiftSentTimestamps(msgs, now)
	}
}

// shiftSentTimestamps moves the SentTimestamp of messages received at now,
// on the queues' clock, to the machine's. A replayer reads it with the
// machine's clock to tell when a message held in the DLQ is due, as it
// would beside real SQS, whose clock is the world's.
func shiftSentTimestamps(msgs []types.Message, now time.Time) {
	skew := time.Since(now).Milliseconds()
	for i := range msgs {
		if ms, err := strconv.ParseInt(msgs[i].Attributes[string(types.MessageSystemAttributeNameSentTimestamp)], 10, 64); err == nil {
			msgs[i].Attributes[string(types.MessageSystemAttributeNameSentTimestamp)] = strconv.FormatInt(ms+skew, 10)
		}
	}
}

// settled lets go of the receipt handles whose settlement SQS took.
func (p *part) settled(handles map[string]string, ok []string) {
	p.st.mu.Lock()
	defer p.st.mu.Unlock()
	for _, id := range ok {
		delete(p.holding, handles[id])
	}
}

func (p *part) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	p.st.count("DeleteMessageBatch")
	out, err := p.Client.DeleteMessageBatch(ctx, in, optFns...)
	if err == nil {
		handles := map[string]string{}
		for _, e := range in.Entries {
			handles[aws.ToString(e.Id)] = aws.ToString(e.ReceiptHandle)
		}
		ok := make([]string, len(out.Successful))
		for i, s := range out.Successful {
			ok[i] = aws.ToString(s.Id)
		}
		p.settled(handles, ok)
	}
	return out, err
}

func (p *part) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	p.st.count("ChangeMessageVisibilityBatch")
	p.st.mu.Lock()
	for _, e := range in.Entries {
		p.st.at(p.st.now().Add(time.Duration(e.VisibilityTimeout) * time.Second))
	}
	p.st.mu.Unlock()
	out, err := p.Client.ChangeMessageVisibilityBatch(ctx, in, optFns...)
	if err == nil {
		handles := map[string]string{}
		for _, e := range in.Entries {
			handles[aws.ToString(e.Id)] = aws.ToString(e.ReceiptHandle)
		}
		ok := make([]string, len(out.Successful))
		for i, s := range out.Successful {
			ok[i] = aws.ToString(s.Id)
		}
		p.settled(handles, ok)
	}
	return out, err
}

func (p *part) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	p.st.count("SendMessageBatch")
	p.st.mu.Lock()
	for _, e := range in.Entries {
		p.st.at(p.st.now().Add(time.Duration(e.DelaySeconds) * time.Second))
	}
	p.st.mu.Unlock()
	return p.Client.SendMessageBatch(ctx, in, optFns...)
}

func (p *part) SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	p.st.count("SendMessage")
	p.st.mu.Lock()
	p.st.at(p.st.now().Add(time.Duration(in.DelaySeconds) * time.Second))
	p.st.mu.Unlock()
	return p.Client.SendMessage(ctx, in, optFns...)
}

func (p *part) GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	p.st.count("GetQueueAttributes")
	return p.Client.GetQueueAttributes(ctx, in, optFns...)
}

func (st *stage) wake() {
	st.mu.Lock()
	st.cond.Broadcast()
	st.mu.Unlock()
}

// run gives turns until done reports that the story has ended, moving the
// clock whenever a round brings nothing.
func (st *stage) run(ctx context.Context, done func(context.Context) (bool, error)) error {
	stop := context.AfterFunc(ctx, st.wake)
	defer stop()
	for {
		progressed := false
		for _, p := range st.parts {
			if err := st.settle(ctx); err != nil {
				return err
			}
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
		next, ok := st.next()
		switch {
		case !ok:
			return errors.New("nothing is left to happen, yet the story has not ended")
		case next.Sub(st.start) > simLimit:
			return fmt.Errorf("%w (%v)", errSimLimit, simLimit)
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
		ok := true
		var inFlight []func() int64
		for _, p := range st.parts {
			ok = ok && len(p.holding) == 0
			if p.inFlight != nil {
				inFlight = append(inFlight, p.inFlight)
			}
		}
		st.mu.Unlock()
		for _, n := range inFlight { // outside st.mu: the consumer's own locks
			ok = ok && n() == 0
		}
		if ok {
			return nil
		}
		if ctx.Err() != nil {
			return context.Cause(ctx)
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

// give gives p its turn and returns once it is over, with whether it
// brought messages.
func (st *stage) give(ctx context.Context, p *part) (bool, error) {
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

// next returns the next moment something is set to happen.
func (st *stage) next() (time.Time, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	now := st.clock.Now()
	st.moments = slices.DeleteFunc(st.moments, func(t time.Time) bool { return !t.After(now) })
	if len(st.moments) == 0 {
		return time.Time{}, false
	}
	return slices.MinFunc(st.moments, func(a, b time.Time) int { return a.Compare(b) }), true
}

// handlerReturns is called, in memory, as a FIFO consumer's handler
// returns (ok: with nil). The consumer runs one handler at a time (its
// Concurrency is 1), so it settles each message, batching its delete or
// release with the others', before it starts the next; and it receives
// again once no message of the last receive waits for the handler. That
// receive asks for as many messages as its FIFO guard allows, which depends
// on the failures so far: the handler then running is the one the guard
// may or may not have heard of. So that handler, the last of its receive
// to start while the others of other groups have run, waits until the next
// receive has begun. (Its group's later messages, if any, start after it
// and come after that receive in every run too.)
func (st *stage) handlerReturns(ctx context.Context, p *part, handle string, ok bool, log *slog.Logger) {
	if st.clock == nil || !p.fifo {
		return
	}
	st.mu.Lock()
	r := st.receipts[handle]
	b := r.batch
	last := b != nil
	if b != nil {
		b.ran[handle] = true
		mine := b.group[handle]
		if !ok {
			b.failed[mine] = true
		}
		for g, handles := range b.groups {
			if g == mine || b.failed[g] {
				continue
			}
			for _, h := range handles {
				last = last && b.ran[h]
			}
		}
	}
	st.mu.Unlock()
	if !last {
		return
	}
	for waited := time.Duration(0); ; waited += 20 * time.Microsecond {
		st.mu.Lock()
		next := p.begun > r.begun
		st.mu.Unlock()
		if next || ctx.Err() != nil {
			return
		}
		if waited > time.Second {
			log.Error("demo: a handler waited a second for its consumer's next receive, which the story expects; this run may not repeat")
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
