package replay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/tracing"

	"github.com/sqskit/sqskit/fifo"
	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/internal/parking"
	"github.com/sqskit/sqskit/internal/sqserr"
	"github.com/sqskit/sqskit/internal/sqsrule"
	"github.com/sqskit/sqskit/internal/telemetry"
)

// ErrRejected matches the error of a message SQS accepts in no form.
var ErrRejected = errors.New("replay: rejected by SQS in every form")

// outcome is what a batch made of a message.
type outcome int

const (
	pending   outcome = iota // a replay not sent yet
	replayed                 // sent to its target: the engine deletes it
	escalated                // to be parked on the operator queue, then deleted
	held                     // kept invisible in the DLQ until due
	waiting                  // behind an earlier message of its FIFO group that did not move
	skipped                  // not picked by the filter
	left                     // already seen by this Drain: left as it is
	failed                   // not moved now: an error from SQS
	dryRun                   // decided, nothing done
)

func (o outcome) String() string {
	return [...]string{"pending", "replayed", "escalated", "held", "waiting", "skipped", "left", "failed", "dry_run"}[o]
}

// item is one DLQ message going through a batch.
type item struct {
	m        *handler.Message
	msg      *types.Message  // as received, in the SDK's form: what Decide, Filter and hooks see
	ctx      context.Context // its process span and producer trace; nil when unknown
	decision Decision
	target   string // a source queue, or the operator queue
	group    string // FIFO order key: "" when the message is not ordered
	delay    int32  // DelaySeconds on a standard target
	hold     time.Duration
	out      outcome
	err      error // failed: why
	send     fifo.Message
	received time.Time // when the engine received it
}

// handle is the batch handler: it decides each message with the Policy,
// sends the replays through the targets' senders, and returns each
// message's outcome for the engine to settle: nil (sent: delete), Hold,
// Escalate (park on the operator queue, then delete), or an error (left
// for its visibility timeout).
func (s *session) handle(ctx context.Context, msgs []*handler.Message) []error {
	now := time.Now()
	items := make([]*item, len(msgs))
	for i, m := range msgs {
		items[i] = s.begin(ctx, m)
		s.plan(items[i], now)
	}
	release := s.claim(items)
	defer release()
	keepGroupOrder(items)
	if !s.r.opts.DryRun {
		s.build(items)
		keepGroupOrder(items)
		s.send(ctx, items)
	}
	errs := make([]error, len(items))
	for i, it := range items {
		errs[i] = s.conclude(it)
	}
	return errs
}

// begin converts a message and finds its ctx (its process span and
// producer trace, from the engine) and when it was received (from the
// Received hook, told on a goroutine of its own: when it has not come yet,
// now, a little late, which the engine's own 12-hour clamp covers).
func (s *session) begin(ctx context.Context, m *handler.Message) *item {
	it := &item{m: m, msg: sdkMessage(m), ctx: handler.MessageContext(ctx, m), received: time.Now()}
	s.mu.Lock()
	if a, ok := s.arrivals[m.ID]; ok {
		it.received = a.at
	}
	delete(s.arrivals, m.ID)
	if s.seen != nil {
		if s.seen[m.ID] {
			it.out = left
		}
		s.seen[m.ID] = true
	}
	s.mu.Unlock()
	return it
}

// plan decides what to do with one message: where it goes, with which
// delay, or how long it stays.
func (s *session) plan(it *item, now time.Time) {
	r, m := s.r, it.msg
	group := m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
	defer func() {
		// SQS orders a group on FIFO queues only; on standard ones a group
		// id names a fair-queue tenant.
		if group != "" && (sqsrule.IsFIFO(r.dlq) || sqsrule.IsFIFO(it.target)) {
			it.group = group
		}
	}()
	if it.out == left {
		return
	}
	if r.opts.Filter != nil && !r.picked(m) {
		it.out = skipped
		return
	}
	d := r.policy.Decide(m, now)
	if d.Action == Replay {
		it.target = r.route(m)
		switch {
		case it.target == "" && d.Metadata.SourceArn == "":
			d = escalation(d, NotRoutable, "the message has no DeadLetterQueueSourceArn: SQS did not dead-letter it")
		case it.target == "":
			d = escalation(d, NotRoutable, "no target for source %q (not in Sources)", d.Metadata.SourceArn) // an ARN SQS set
		case sqsrule.IsFIFO(it.target) && group == "":
			d = escalation(d, NotRoutable, "the FIFO target needs a MessageGroupId and the message has none")
		case sqsrule.IsFIFO(it.target) && sqsrule.CheckGroupID(group) != nil:
			d = escalation(d, NotRoutable, "the message's MessageGroupId is not valid on a FIFO target")
		}
	}
	it.decision = d
	if d.Action == Escalate {
		it.target, it.out = r.operator, escalated
		return
	}
	s.schedule(it, now)
}

// picked runs the Filter; one that panics picks nothing.
func (r *Replayer) picked(m *types.Message) (ok bool) {
	defer func() {
		if v := recover(); v != nil {
			r.opts.Logger.LogAttrs(context.Background(), slog.LevelError, "replay: Filter panicked; the message is left in the DLQ",
				slog.String("message_id", aws.ToString(m.MessageId)), slog.Any("panic", v))
			ok = false
		}
	}()
	return r.opts.Filter(m)
}

// escalation turns a decision into an escalation.
func escalation(d Decision, reason Reason, format string, args ...any) Decision {
	d.Action, d.Reason, d.Detail = Escalate, reason, fmt.Sprintf(format, args...)
	d.Metadata.Reason, d.Metadata.Detail = d.Reason, d.Detail
	return d
}

// schedule applies the delay rule (see the package doc): on a standard
// target a delay up to 900 s goes out at once as DelaySeconds; longer ones,
// and every one on a FIFO target, are held in the DLQ until the start of
// the message's last life plus the delay.
func (s *session) schedule(it *item, now time.Time) {
	const maxDelay = sqsrule.MaxDelaySeconds * time.Second
	d, fifoTarget := it.decision.Delay, sqsrule.IsFIFO(it.target)
	if !fifoTarget && d <= maxDelay {
		it.delay = sqsrule.Seconds(d)
		return
	}
	start, ok := lifeStart(it.msg, it.decision.Metadata.SentDelay)
	if !ok {
		// Without a SentTimestamp no later receive could tell that a hold is
		// over: send now rather than hold forever.
		if !fifoTarget {
			it.delay = sqsrule.Seconds(maxDelay)
		}
		return
	}
	wait := start.Add(d).Sub(now)
	switch {
	case wait <= 0:
	case !fifoTarget && wait <= maxDelay:
		it.delay = sqsrule.Seconds(wait)
	default:
		it.out, it.hold = held, s.holdLimit(wait, now)
	}
}

// lifeStart is when the message's last life on its queue began: its
// SentTimestamp, which SQS sets, plus the DelaySeconds the replayer sent it
// with (at most 900 s, checked by readMetadata).
func lifeStart(m *types.Message, sentDelay time.Duration) (time.Time, bool) {
	ms, err := strconv.ParseInt(m.Attributes[string(types.MessageSystemAttributeNameSentTimestamp)], 10, 64)
	if err != nil || ms <= 0 {
		return time.Time{}, false
	}
	return time.UnixMilli(ms).Add(sentDelay), true
}

// route picks the target: the configured queue, or the allow-listed queue of
// the source SQS names. A message never names its own destination.
func (r *Replayer) route(m *types.Message) string {
	if r.opts.Target != "" {
		return r.opts.Target
	}
	return r.opts.Sources[m.Attributes[string(types.MessageSystemAttributeNameDeadLetterQueueSourceArn)]]
}

// keepGroupOrder keeps a FIFO group's later messages behind an earlier one
// that is not replayed in this batch (held, escalated, skipped, left,
// failed): they wait, and come back. On a FIFO DLQ the engine would not
// delete them anyway (handler.ErrHeldBack), so sending them would only send
// them twice.
func keepGroupOrder(items []*item) {
	stopped := map[string]bool{}
	for _, it := range items {
		if it.group == "" {
			continue
		}
		if stopped[it.group] {
			if it.out == pending || it.out == held || it.out == escalated {
				it.out = waiting
			}
			continue
		}
		if it.out != pending && it.out != replayed {
			stopped[it.group] = true
		}
	}
}

// build makes each replay's message. One SQS would refuse becomes an
// escalation (Unsendable, TooLarge).
func (s *session) build(items []*item) {
	for _, it := range items {
		if it.out != pending {
			continue
		}
		d := it.decision
		count := d.Attempt
		if s.r.policy.ResetCounter {
			count = 0
		}
		out := parking.Outgoing{Message: it.msg, Target: it.target, CounterAttribute: s.r.policy.CounterAttribute, Count: count,
			Attempt: d.Attempt, DelaySeconds: it.delay, Metadata: d.Metadata, MaxMessageBytes: s.r.policy.MaxMessageBytes}
		m, reason, err := out.Build(parking.FormWhole)
		if err != nil {
			s.refuse(it, reason, err.Error())
			continue
		}
		it.send = m
	}
}

// refuse turns a replay SQS will not take into an escalation.
func (s *session) refuse(it *item, reason Reason, detail string) {
	it.decision = escalation(it.decision, reason, "%s", detail)
	it.decision.Metadata.LastDelay = 0
	it.target, it.delay, it.out = s.r.operator, 0, escalated
}

// send sends the pending replays, one SendBatch per target (per round on
// FIFO targets), the targets at once.
func (s *session) send(ctx context.Context, items []*item) {
	byTarget := map[string][]*item{}
	for _, it := range items {
		if it.out == pending {
			byTarget[it.target] = append(byTarget[it.target], it)
		}
	}
	if len(byTarget) == 1 { // the common case: no goroutine to hand over to
		for target, batch := range byTarget {
			s.sendTo(ctx, target, batch)
		}
		return
	}
	var wg sync.WaitGroup
	for target, batch := range byTarget {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.sendTo(ctx, target, batch)
		}()
	}
	wg.Wait()
}

// sendTo sends batch to target. On a FIFO target it goes in rounds of at
// most one message per group, so a message SQS fails cannot fall behind a
// later one of its group stored by the same call; a group whose message did
// not go stops there, its later messages waiting.
func (s *session) sendTo(ctx context.Context, target string, batch []*item) {
	if !sqsrule.IsFIFO(target) {
		s.sendRound(ctx, target, batch)
		return
	}
	for len(batch) > 0 {
		var round, rest []*item
		inRound := map[string]bool{}
		for _, it := range batch {
			if inRound[it.group] {
				rest = append(rest, it)
				continue
			}
			inRound[it.group] = true
			round = append(round, it)
		}
		s.sendRound(ctx, target, round)
		stopped := map[string]bool{}
		for _, it := range round {
			if it.out != replayed {
				stopped[it.group] = true
			}
		}
		batch = batch[:0:0]
		for _, it := range rest {
			if stopped[it.group] {
				it.out = waiting
				continue
			}
			batch = append(batch, it)
		}
	}
}

// sendRound sends items in one SendBatch and records each message's
// outcome; a message whose call SQS refused as a whole goes again alone, to
// find the one SQS refuses.
func (s *session) sendRound(ctx context.Context, target string, items []*item) {
	msgs := make([]fifo.Message, len(items))
	for i, it := range items {
		msgs[i] = it.send
	}
	// The send span sits under the first message's decision span (smithy
	// has no links); it ends with the batch's ctx.
	results := s.r.senders[target].SendBatch(withValues(ctx, items[0].ctx), msgs)
	var alone []*item
	for i, it := range items {
		err := results[i].Err
		var entry *fifo.EntryError
		var blocked *fifo.GroupBlockedError
		switch {
		case err == nil:
			it.out = replayed
		case errors.As(err, &blocked):
			it.out = waiting
		case errors.Is(err, fifo.ErrInvalid):
			s.refuse(it, Unsendable, err.Error())
		case errors.As(err, &entry):
			if entry.SenderFault {
				s.refuse(it, Unsendable, "SQS refused it: "+entry.Code)
			} else {
				it.out, it.err = failed, fmt.Errorf("replay: send to %s: %w", target, err)
			}
		case sqserr.Final(err) || ctx.Err() != nil:
			it.out, it.err = failed, fmt.Errorf("replay: send to %s: %w", target, err)
			s.fail(err)
		case sqserr.Code(err) != "" && !sqserr.Transient(err) && len(items) > 1:
			alone = append(alone, it)
		case sqserr.Code(err) != "" && !sqserr.Transient(err):
			s.refuse(it, Unsendable, "SQS refused it: "+sqserr.Code(err))
		default:
			it.out, it.err = failed, fmt.Errorf("replay: send to %s: %w", target, err)
		}
	}
	for _, it := range alone {
		s.sendRound(ctx, target, []*item{it})
	}
}

// conclude returns a message's outcome for the engine, and records it for
// the hooks, the span and the decision metric.
func (s *session) conclude(it *item) error {
	r := s.r
	if r.opts.DryRun && it.out != left && it.out != skipped {
		it.out = dryRun
	}
	if it.out == pending {
		it.out, it.err = failed, errors.New("replay: not sent") // cannot happen, but never count it as moved
	}
	s.record(it)
	if it.out != left {
		r.decided(it)
	}
	switch it.out {
	case replayed:
		return nil
	case escalated:
		return handler.Escalate(string(it.decision.Reason), errors.New(it.decision.Detail))
	case held:
		return handler.Hold(it.hold)
	case failed:
		return it.err
	}
	// Waiting, skipped, left, dry run: kept as a receive keeps them.
	return handler.Hold(s.holdLimit(r.opts.VisibilityTimeout, time.Now()))
}

// decided reports a message's outcome on its span and in the decision
// metric.
func (r *Replayer) decided(it *item) {
	name := it.out.String()
	if it.out == dryRun {
		name = "dry_run_" + it.decision.Action.String()
	}
	reason := string(it.decision.Reason)
	if r.attrs != nil {
		r.decisions.Add(ctxOr(it.ctx), 1, r.attrs.With(
			telemetry.KV{Key: telemetry.AttrReplayOutcome, Value: name},
			telemetry.KV{Key: telemetry.AttrReplayReason, Value: reason}))
	}
	if it.ctx == nil {
		return
	}
	span, ok := tracing.GetSpan(it.ctx)
	if !ok {
		return
	}
	span.SetProperty(telemetry.AttrReplayOutcome, name)
	if reason != "" {
		span.SetProperty(telemetry.AttrReplayReason, reason)
	}
	if it.decision.Attempt > 0 {
		span.SetProperty("sqskit.replay.attempt", it.decision.Attempt)
	}
}

func ctxOr(ctx context.Context) context.Context {
	if ctx == nil {
		return context.Background()
	}
	return ctx
}

// withValues is ctx with the values (span, trace context) of from, when
// set: a send made for a message shows in its trace, and ends with ctx.
func withValues(ctx, from context.Context) context.Context {
	if from == nil {
		return ctx
	}
	return valuesOf{Context: ctx, from: from}
}

type valuesOf struct {
	context.Context
	from context.Context
}

func (v valuesOf) Value(key any) any { return v.from.Value(key) }
