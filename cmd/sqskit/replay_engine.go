package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/internal/parking"
	"github.com/sqskit/sqskit/internal/sqsrule"
	"github.com/sqskit/sqskit/replay"
)

// Both the plan and the replay run on package replay's engine (Drain): the
// plan as a dry run whose Filter records what it would pick, the replay
// with a Filter that picks exactly the planned messages, one pass per
// target. A tracker around the client remembers what each pass received
// and deleted, so that every message received and not moved is made
// visible again at once when the pass ends.

// replayVisibility is how long a pass keeps a received message invisible
// (the engine's heartbeat extends it while a batch is under way); messages
// not moved are released when the pass ends, not after it.
const replayVisibility = 60 * time.Second

// replayRounds bounds the passes over messages that failed (an error from
// SQS): each round retries those still in the queue.
const replayRounds = 3

// tracker is the client a pass runs on: it records what was received from
// the queue and what was deleted, so the rest can be released.
type tracker struct {
	*sqs.Client
	queue string

	mu       sync.Mutex
	seq      int
	handle   map[string]string // MessageId → latest receipt handle
	order    map[string]int    // MessageId → first receive, in order
	deleted  map[string]bool   // MessageId
	byHandle map[string]string // receipt handle → MessageId
}

func newTracker(c *sqs.Client, queue string) *tracker {
	return &tracker{Client: c, queue: queue, handle: map[string]string{}, order: map[string]int{}, deleted: map[string]bool{}, byHandle: map[string]string{}}
}

func (t *tracker) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	out, err := receiveUninterrupted(ctx, t.Client, in, optFns...)
	if out != nil && aws.ToString(in.QueueUrl) == t.queue {
		t.mu.Lock()
		for _, m := range out.Messages {
			id, h := aws.ToString(m.MessageId), aws.ToString(m.ReceiptHandle)
			t.handle[id] = h
			t.byHandle[h] = id
			if _, ok := t.order[id]; !ok {
				t.seq++
				t.order[id] = t.seq
			}
		}
		t.mu.Unlock()
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// receiveUninterrupted receives on a context that a cancellation (Ctrl-C)
// does not cut short, bounded by the long poll and a margin: a receive
// cancelled while its answer is on the way leaves the messages SQS handed
// out invisible, unknown to the client that could release them. When ctx
// ends meanwhile, the messages received come back with ctx's error, so the
// caller can release them, and stop.
func receiveUninterrupted(ctx context.Context, c *sqs.Client, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err // stopped: take nothing more
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Duration(in.WaitTimeSeconds)*time.Second+30*time.Second)
	defer cancel()
	out, err := c.ReceiveMessage(rctx, in, optFns...)
	if err == nil && ctx.Err() != nil {
		return out, ctx.Err()
	}
	return out, err
}

func (t *tracker) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	out, err := t.Client.DeleteMessageBatch(ctx, in, optFns...)
	if err == nil && aws.ToString(in.QueueUrl) == t.queue {
		t.mu.Lock()
		for _, ok := range out.Successful {
			for _, e := range in.Entries {
				if aws.ToString(e.Id) == aws.ToString(ok.Id) {
					t.deleted[t.byHandle[aws.ToString(e.ReceiptHandle)]] = true
				}
			}
		}
		t.mu.Unlock()
	}
	return out, err
}

func (t *tracker) DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	out, err := t.Client.DeleteMessage(ctx, in, optFns...)
	if err == nil && aws.ToString(in.QueueUrl) == t.queue {
		t.mu.Lock()
		t.deleted[t.byHandle[aws.ToString(in.ReceiptHandle)]] = true
		t.mu.Unlock()
	}
	return out, err
}

// release makes every message received and neither deleted nor in moved
// visible again (ChangeMessageVisibility 0), on a context that outlives a
// cancelled command. Failures are counted, not fatal: such a message comes
// back after its visibility timeout.
func (t *tracker) release(ctx context.Context, moved func(id string) bool) (released, failed int) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	t.mu.Lock()
	var handles []string
	for _, id := range sortedKeys(t.handle) {
		if !t.deleted[id] && !moved(id) {
			handles = append(handles, t.handle[id])
		}
	}
	t.mu.Unlock()
	return release(ctx, t.Client, t.queue, handles)
}

// noEscalation is the operator queue the engine is given: replay never
// escalates (its Filter picks only messages the policy replays), and a
// message SQS refuses in every form would be parked here, which fails
// because it does not exist, so the message stays where it is.
func noEscalation(source string) string {
	return source + "-sqskit-replay-never-escalates"
}

// plannedMessage is one message the replay would move.
type plannedMessage struct {
	ID      string    `json:"id"`
	Group   string    `json:"group,omitempty"`
	Sent    time.Time `json:"sent"`
	Counter int       `json:"counter"`
	Reason  string    `json:"reason,omitempty"`
	Target  string    `json:"target"`

	target string        // URL
	seq    int           // receive order
	msg    types.Message // as received, for a rehearsal
}

// unfit is a selected message that cannot be replayed, and why.
type unfit struct {
	ID  string `json:"id"`
	Why string `json:"why"`
}

// replayPlan is what a replay would do.
type replayPlan struct {
	Queue         string           `json:"queue"`
	At            time.Time        `json:"at"`
	Received      int              `json:"received"`
	Selected      []plannedMessage `json:"selected"`
	NotReplayable []unfit          `json:"notReplayable"`
	NotSelected   int              `json:"notSelected"`
	OverMax       int              `json:"overMax,omitempty"`
	// NotFound are the --id values no received message has as its
	// MessageId or original id.
	NotFound []string `json:"notFound,omitempty"`
	Released int      `json:"released"`
	held     int      // received, and could not be released
	Note     string   `json:"note"`
}

const receiveNote = "selecting received the messages: each receive raised its ApproximateReceiveCount by one; the messages not moved are visible again"

// heldNote is receiveNote when held of the received messages could not be
// made visible again.
func heldNote(held, received int) string {
	if held == 0 {
		return receiveNote
	}
	return fmt.Sprintf("selecting received the messages: each receive raised its ApproximateReceiveCount by one; %d of the %d received could not be made visible again (ChangeMessageVisibility failed) and stay invisible until their visibility timeout (%v) ends: a replay run before then does not see them",
		held, received, replayVisibility)
}

// planReplay receives what the queue holds now, in a dry run of the
// engine, records which messages the selection picks and where each would
// go, and releases them all.
func planReplay(ctx context.Context, c *sqs.Client, q *replayQueues, sel *selection, policy replay.Policy, max int) (*replayPlan, error) {
	t := newTracker(c, q.source)
	fifoSource := sqsrule.IsFIFO(q.source)
	var mu sync.Mutex
	type seen struct {
		plannedMessage
		selected bool
		why      string
	}
	all := map[string]*seen{}
	ids := map[string]bool{} // every MessageId and original id received
	now := time.Now()
	r, err := replay.New(t, q.source, noEscalation(q.source), func(o *replay.Options) {
		o.Target = noEscalation(q.source) + "-plan"
		o.DryRun = true
		o.Policy = policy
		o.VisibilityTimeout = replayVisibility
		o.Filter = func(m *types.Message) bool {
			mu.Lock()
			defer mu.Unlock()
			id := aws.ToString(m.MessageId)
			s := &seen{plannedMessage: plannedMessage{ID: id, Group: m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)], msg: *m}}
			all[id] = s
			s.Sent, _ = sentAt(m)
			md, _ := parking.Read(m.MessageAttributes, policy.CounterAttribute)
			ids[id] = true
			if md.OriginalID != "" {
				ids[md.OriginalID] = true
			}
			s.Reason = string(md.Reason)
			s.Counter = md.Attempt
			if n, ok, err := parking.Counter(m.MessageAttributes, policy.CounterAttribute); ok && err == nil {
				s.Counter = n
			}
			if !sel.match(m, now) {
				return false
			}
			s.selected = true
			d := policy.Decide(m, now)
			if d.Action != replay.Replay {
				s.why = fmt.Sprintf("the replayer would escalate it (%s: %s)", d.Reason, d.Detail)
				return false
			}
			s.target, s.why = q.target(ctx, c, m, policy.CounterAttribute)
			if s.why == "" && sqsrule.IsFIFO(s.target) && (s.Group == "" || sqsrule.CheckGroupID(s.Group) != nil) {
				s.why = "the FIFO target needs a valid MessageGroupId and the message has none"
			}
			s.Target = targetName(s.target)
			return false
		}
	})
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	_, drainErr := r.Drain(ctx)
	released, held := t.release(ctx, func(string) bool { return false })
	if drainErr != nil {
		return nil, fmt.Errorf("replay: selecting: %w", drainErr)
	}
	t.mu.Lock()
	for id, s := range all {
		s.seq = t.order[id]
	}
	t.mu.Unlock()
	list := make([]*seen, 0, len(all))
	for _, s := range all {
		list = append(list, s)
	}
	slices.SortFunc(list, func(a, b *seen) int {
		if c := a.Sent.Compare(b.Sent); c != 0 {
			return c
		}
		return a.seq - b.seq
	})
	p := &replayPlan{Queue: q.source, At: now.UTC(), Received: len(all), Released: released, held: held, Note: heldNote(held, len(all)),
		Selected: []plannedMessage{}, NotReplayable: []unfit{}}
	for _, id := range sortedKeys(sel.ids) {
		if !ids[id] {
			p.NotFound = append(p.NotFound, id)
		}
	}
	stopped := map[string]bool{} // FIFO groups stopped by a message not moved
	for _, s := range list {
		overMax := max > 0 && len(p.Selected) >= max
		switch {
		case fifoSource && stopped[s.Group] && s.selected && s.why == "" && overMax:
			p.OverMax++
			continue
		case fifoSource && stopped[s.Group]:
			if s.selected {
				p.NotReplayable = append(p.NotReplayable, unfit{s.ID, "behind an earlier message of its FIFO group that is not replayed"})
			} else {
				p.NotSelected++
			}
			continue
		case !s.selected:
			p.NotSelected++
		case s.why != "":
			p.NotReplayable = append(p.NotReplayable, unfit{s.ID, s.why})
		case overMax:
			p.OverMax++
		default:
			p.Selected = append(p.Selected, s.plannedMessage)
			continue
		}
		stopped[s.Group] = true
	}
	return p, nil
}

// replayResult is what a replay did.
type replayResult struct {
	Queue    string         `json:"queue"`
	Moved    int            `json:"moved"`
	Skipped  int            `json:"skipped"`
	Failed   int            `json:"failed"`
	Messages []movedMessage `json:"messages"`
	Failures []unfit        `json:"failures"`
	// NotReplayable are the selected messages the plan found could not be
	// moved, and why; NotFound the --id values no message had. Neither was
	// touched.
	NotReplayable []unfit  `json:"notReplayable,omitempty"`
	NotFound      []string `json:"notFound,omitempty"`
	Note          string   `json:"note"`

	received, held int // over the passes, for the note
}

type movedMessage struct {
	ID     string `json:"id"`
	Target string `json:"target"`
	// Unconfirmed: sent, but the answer to its delete was lost; it was not
	// in the source on the next pass.
	Unconfirmed bool `json:"deleteUnconfirmed,omitempty"`
}

// replayRun is the state of one replay over its passes.
type replayRun struct {
	c       *sqs.Client
	source  string
	todo    map[string]string // id → target URL
	policy  replay.Policy
	onMoved func(id string)

	mu       sync.Mutex
	moved    map[string]string // id → target
	lastErr  map[string]string // id → why it did not move
	sentOnly map[string]bool   // sent, delete failed: maybe moved
	gone     map[string]bool   // sent, then not in the source on the next pass
	seen     map[string]bool   // received in the current round
	received int               // receives' messages, over every pass
	held     int               // of those, not moved and not released
}

// executeReplay moves the messages todo names (id → target URL) from
// source, one engine pass per target, in up to replayRounds rounds for
// those that failed, and reports them in the order order lists them.
// onMoved is called for each message moved.
func executeReplay(ctx context.Context, c *sqs.Client, source string, order []string, todo map[string]string, policy replay.Policy, onMoved func(id string)) (*replayResult, error) {
	r := &replayRun{c: c, source: source, todo: todo, policy: policy, onMoved: onMoved,
		moved: map[string]string{}, lastErr: map[string]string{}, sentOnly: map[string]bool{}, gone: map[string]bool{}}
	var runErr error
rounds:
	for round := 0; round < replayRounds; round++ {
		byTarget := r.pending()
		if len(byTarget) == 0 {
			break
		}
		r.mu.Lock()
		before, wasSent := len(r.moved), maps.Clone(r.sentOnly)
		r.seen = map[string]bool{}
		r.mu.Unlock()
		for _, target := range sortedKeys(byTarget) {
			if err := r.pass(ctx, target); err != nil {
				runErr = err
				break rounds
			}
			if ctx.Err() != nil {
				runErr = ctx.Err()
				break rounds
			}
		}
		r.mu.Lock()
		// Sent in an earlier round, delete failed, and not in the source
		// now (it was released, so it would have been received): the
		// delete took effect and only its answer was lost.
		for id := range wasSent {
			if _, ok := r.moved[id]; !ok && !r.seen[id] {
				r.moved[id], r.gone[id] = r.todo[id], true
				delete(r.lastErr, id)
				r.onMoved(id)
			}
		}
		progress := len(r.moved) > before
		r.mu.Unlock()
		if !progress {
			break
		}
	}
	res := &replayResult{Messages: []movedMessage{}, Failures: []unfit{}}
	r.mu.Lock()
	defer r.mu.Unlock()
	res.Note, res.received, res.held = heldNote(r.held, r.received), r.received, r.held
	for _, id := range order {
		if target, ok := r.moved[id]; ok {
			res.Messages = append(res.Messages, movedMessage{ID: id, Target: targetName(target), Unconfirmed: r.gone[id]})
			continue
		}
		why := r.lastErr[id]
		switch {
		case why != "":
		case r.seen[id] && sqsrule.IsFIFO(source):
			why = "waiting behind an earlier message of its FIFO group that did not move"
		case r.seen[id]:
			why = "received, not moved"
		default:
			why = "not received again (in flight elsewhere, or deleted by another reader)"
		}
		res.Failures = append(res.Failures, unfit{id, why})
	}
	res.Moved, res.Failed = len(res.Messages), len(res.Failures)
	return res, runErr
}

// pending lists the messages not moved yet, by target.
func (r *replayRun) pending() map[string][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	byTarget := map[string][]string{}
	for id, target := range r.todo {
		if _, ok := r.moved[id]; !ok {
			byTarget[target] = append(byTarget[target], id)
		}
	}
	return byTarget
}

func (r *replayRun) isMoved(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.moved[id]
	return ok
}

func (r *replayRun) fail(id, why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lastErr[id] = why
}

// pass is one Drain of the source that replays the pending messages bound
// for target, then releases everything else it received.
func (r *replayRun) pass(ctx context.Context, target string) error {
	t := newTracker(r.c, r.source)
	rp, err := replay.New(t, r.source, noEscalation(r.source), func(o *replay.Options) {
		o.Target = target
		o.Policy = r.policy
		o.VisibilityTimeout = replayVisibility
		o.Filter = func(m *types.Message) bool {
			id := aws.ToString(m.MessageId)
			r.mu.Lock()
			_, done := r.moved[id]
			mine := r.todo[id] == target && !done
			r.mu.Unlock()
			return mine && r.policy.Decide(m, time.Now()).Action == replay.Replay
		}
		o.Hooks.Replayed = func(_ context.Context, m *types.Message, _ replay.Decision, to string) {
			id := aws.ToString(m.MessageId)
			r.mu.Lock()
			r.moved[id] = to
			delete(r.lastErr, id)
			r.mu.Unlock()
			r.onMoved(id)
		}
		o.Hooks.Failed = func(_ context.Context, m *types.Message, err error) {
			id, why := aws.ToString(m.MessageId), failureReason(err)
			r.mu.Lock()
			defer r.mu.Unlock()
			r.lastErr[id] = why
			if strings.Contains(err.Error(), "the delete from the DLQ failed") {
				r.sentOnly[id] = true
			}
		}
		o.Hooks.Rejected = func(_ context.Context, m *types.Message, _ replay.Decision, err error) {
			r.fail(aws.ToString(m.MessageId), "SQS refuses it in every form: "+shortError(err))
		}
		o.Hooks.Escalated = func(_ context.Context, m *types.Message, d replay.Decision) {
			r.fail(aws.ToString(m.MessageId), fmt.Sprintf("escalated (%s)", d.Reason))
		}
	})
	if err != nil {
		return err
	}
	_, err = rp.Drain(ctx)
	_, held := t.release(ctx, r.isMoved)
	t.mu.Lock()
	r.mu.Lock()
	r.received += len(t.handle)
	r.held += held
	for id := range t.handle {
		r.seen[id] = true
	}
	r.mu.Unlock()
	t.mu.Unlock()
	if err != nil && errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// failureReason says why a message did not move. When SQS refused the
// replay as built, the engine tried to park it on the operator queue, which
// replay never has: the message stays, and the reason is SQS's refusal.
func failureReason(err error) string {
	msg := err.Error()
	var reason string
	if i := strings.Index(msg, "(reason "); strings.HasPrefix(msg, "consumer: park") && i >= 0 {
		if _, scanErr := fmt.Sscanf(msg[i+1:], "reason %q", &reason); scanErr == nil {
			return fmt.Sprintf("SQS refused the replay (%s); replay never escalates, so it stays", reason)
		}
	}
	return shortError(err)
}
