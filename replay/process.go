package replay

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/internal/sqsrule"
)

// state is where a message ended up after a pass.
type state int

const (
	failed    state = iota // still in the DLQ, visible after its timeout
	replayed               // sent to its target
	escalated              // sent to the operator queue
	held                   // kept invisible in the DLQ until due
	skipped                // not picked by the filter
)

// item is one DLQ message going through a pass.
type item struct {
	msg      *types.Message
	decision Decision
	target   string // where it goes: a source queue or the operator queue
	delay    int32  // DelaySeconds on a standard target
	holdFor  time.Duration
	state    state
	err      error
}

// process runs one batch from the DLQ and reports what it did.
func (r *Replayer) process(ctx context.Context, msgs []types.Message, forLambda bool) Report {
	var report Report
	for _, it := range r.processItems(ctx, msgs, forLambda) {
		if r.opts.DryRun {
			report.Decisions = append(report.Decisions, it.decision)
		}
		r.count(&report, it)
	}
	return report
}

// processItems runs one batch: plan, send, delete what was sent, hold what
// is not due. With forLambda, successes are not deleted (Lambda deletes what
// its response does not list).
func (r *Replayer) processItems(ctx context.Context, msgs []types.Message, forLambda bool) []*item {
	now := time.Now()
	items := make([]*item, len(msgs))
	waitingGroups := map[string]bool{} // FIFO groups with an earlier message held or failed
	for i := range msgs {
		it := &item{msg: &msgs[i]}
		items[i] = it
		r.plan(it, now, waitingGroups)
	}
	if r.opts.DryRun {
		return items
	}
	r.waitForRate(ctx, len(items))
	r.send(ctx, items)
	if !forLambda {
		r.deleteSent(ctx, items)
	}
	r.hold(ctx, items)
	for _, it := range items {
		r.notify(it, now)
	}
	return items
}

// plan decides what to do with one message.
func (r *Replayer) plan(it *item, now time.Time, waitingGroups map[string]bool) {
	m := it.msg
	if r.opts.Filter != nil && !r.opts.Filter(m) {
		it.state = skipped
		return
	}
	d := r.policy.Decide(m, now)
	group := m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
	if d.Action == Replay {
		it.target = r.route(m)
		switch {
		case it.target == "":
			d = r.reroute(d, "no target for source %q (not in Sources)", d.Metadata.SourceArn)
		case sqsrule.IsFIFO(it.target) && group == "":
			d = r.reroute(d, "the FIFO target %s needs a MessageGroupId and the message has none", it.target)
		}
	}
	it.decision = d
	if d.Action == Escalate {
		it.target = r.opts.OperatorQueue
		return
	}
	// Only FIFO targets order a group; on standard ones a group id is a
	// fair-queue tenant.
	ordered := group != "" && sqsrule.IsFIFO(it.target)
	key := it.target + "\x00" + group
	if ordered && waitingGroups[key] {
		it.state, it.holdFor = held, 0 // behind an earlier message of its group: back in line
		return
	}
	// The delay counts from when this life began on the main queue: its
	// send, plus the DelaySeconds it was sent with.
	due := sentAt(m, now).Add(d.Metadata.SentDelay + d.Delay)
	wait := due.Sub(now)
	switch {
	case wait <= 0:
	case !sqsrule.IsFIFO(it.target) && wait <= sqsrule.MaxDelaySeconds*time.Second:
		it.delay = int32((wait + time.Second - 1) / time.Second)
	default:
		// FIFO targets take no per-message delay and standard ones at most
		// 900 s: keep the message in the DLQ until due.
		it.state, it.holdFor = held, min(wait, sqsrule.MaxVisibility-time.Minute)
		if ordered {
			waitingGroups[key] = true
		}
	}
}

// reroute turns a replay that cannot be routed into an escalation.
func (r *Replayer) reroute(d Decision, format string, args ...any) Decision {
	d.Action, d.Reason, d.Detail = Escalate, NotRoutable, fmt.Sprintf(format, args...)
	d.Metadata.Reason, d.Metadata.Detail = d.Reason, d.Detail
	return d
}

// route picks the target: the configured queue, or the allow-listed queue of
// the message's source. A message never names its own destination.
func (r *Replayer) route(m *types.Message) string {
	if r.opts.Target != "" {
		return r.opts.Target
	}
	return r.opts.Sources[m.Attributes[string(types.MessageSystemAttributeNameDeadLetterQueueSourceArn)]]
}

// sentAt is when the message was last sent: replays count their delay from
// there, so a held message is recognised as due on a later receive.
func sentAt(m *types.Message, fallback time.Time) time.Time {
	ms, err := strconv.ParseInt(m.Attributes[string(types.MessageSystemAttributeNameSentTimestamp)], 10, 64)
	if err != nil {
		return fallback
	}
	return time.UnixMilli(ms)
}

// send sends every replay and escalation, ten per call per queue, and marks
// each as sent or failed.
func (r *Replayer) send(ctx context.Context, items []*item) {
	byTarget := map[string][]*item{}
	var order []string
	for _, it := range items {
		if it.state == skipped || it.state == held {
			continue
		}
		if _, seen := byTarget[it.target]; !seen {
			order = append(order, it.target)
		}
		byTarget[it.target] = append(byTarget[it.target], it)
	}
	for _, target := range order {
		batch := byTarget[target]
		entries := make([]types.SendMessageBatchRequestEntry, 0, len(batch))
		var sendable []*item
		for _, it := range batch {
			e, err := r.entry(it, strconv.Itoa(len(entries)))
			if err != nil {
				it.err = err
				continue
			}
			entries = append(entries, e)
			sendable = append(sendable, it)
		}
		if len(entries) == 0 {
			continue
		}
		out, err := r.client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(target), Entries: entries})
		if err != nil {
			for _, it := range sendable {
				it.err = fmt.Errorf("replay: send to %s: %w", target, err)
			}
			continue
		}
		failures := map[string]types.BatchResultErrorEntry{}
		for _, f := range out.Failed {
			failures[aws.ToString(f.Id)] = f
		}
		for i, it := range sendable {
			if f, bad := failures[strconv.Itoa(i)]; bad {
				it.err = fmt.Errorf("replay: send to %s: %s: %s", target, aws.ToString(f.Code), aws.ToString(f.Message))
				continue
			}
			if it.decision.Action == Escalate {
				it.state = escalated
			} else {
				it.state = replayed
			}
		}
	}
}

// entry builds the outgoing message: the body byte for byte, the user's
// attributes, the counter and the provenance; on FIFO targets the group and
// a deduplication id fixed by the original message and the attempt, so a
// crash between send and delete cannot enqueue it twice.
func (r *Replayer) entry(it *item, id string) (types.SendMessageBatchRequestEntry, error) {
	m, d := it.msg, it.decision
	user := userAttributes(m.MessageAttributes, r.policy.CounterAttribute)
	count := d.Attempt
	if d.Action == Escalate {
		count = max(d.Attempt-1, 0) // the replays it had
	}
	md := d.Metadata
	md.SentDelay = time.Duration(it.delay) * time.Second
	attrs, err := pack(user, r.policy.CounterAttribute, count, md)
	if err != nil {
		return types.SendMessageBatchRequestEntry{}, err
	}
	e := types.SendMessageBatchRequestEntry{Id: aws.String(id), MessageBody: m.Body, MessageAttributes: attrs}
	if err := sqsrule.CheckSize(aws.ToString(m.Body), attrs, r.policy.MaxMessageBytes); err != nil {
		return e, fmt.Errorf("replay: %w", err)
	}
	group := m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
	if sqsrule.IsFIFO(it.target) {
		kind := "replay"
		if d.Action == Escalate {
			kind = "escalate"
			if group == "" {
				group = "sqskit-escalations"
			}
		}
		sum := sha256.Sum256([]byte(d.Metadata.OriginalID + "\x00" + kind + "\x00" + strconv.Itoa(d.Attempt)))
		e.MessageGroupId = aws.String(group)
		e.MessageDeduplicationId = aws.String(hex.EncodeToString(sum[:]))
		return e, nil
	}
	if group != "" {
		e.MessageGroupId = aws.String(group) // a fair queue's tenant
	}
	e.DelaySeconds = it.delay
	return e, nil
}

// deleteSent deletes from the DLQ what reached its next home, and nothing
// else. A failed delete leaves a copy in the DLQ that a later pass sends
// again: deduplicated on FIFO targets within 5 minutes, a duplicate on
// standard ones.
func (r *Replayer) deleteSent(ctx context.Context, items []*item) {
	var sent []*item
	for _, it := range items {
		if it.state == replayed || it.state == escalated {
			sent = append(sent, it)
		}
	}
	for start := 0; start < len(sent); start += 10 {
		chunk := sent[start:min(start+10, len(sent))]
		entries := make([]types.DeleteMessageBatchRequestEntry, len(chunk))
		for i, it := range chunk {
			entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: it.msg.ReceiptHandle}
		}
		out, err := r.client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(r.dlq), Entries: entries})
		if err != nil {
			r.opts.Logger.LogAttrs(ctx, slog.LevelWarn, "replay: delete from the DLQ failed; the messages will be sent again", slog.String("error", err.Error()))
			continue
		}
		for _, f := range out.Failed {
			r.opts.Logger.LogAttrs(ctx, slog.LevelWarn, "replay: delete from the DLQ failed; the message will be sent again", slog.String("code", aws.ToString(f.Code)))
		}
	}
}

// hold keeps held messages invisible in the DLQ until their replay is due.
func (r *Replayer) hold(ctx context.Context, items []*item) {
	var holds []*item
	for _, it := range items {
		if it.state == held {
			holds = append(holds, it)
		}
	}
	for start := 0; start < len(holds); start += 10 {
		chunk := holds[start:min(start+10, len(holds))]
		entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, len(chunk))
		for i, it := range chunk {
			entries[i] = types.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: it.msg.ReceiptHandle,
				VisibilityTimeout: int32((it.holdFor + time.Second - 1) / time.Second)}
		}
		out, err := r.client.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(r.dlq), Entries: entries})
		if err != nil {
			for _, it := range chunk {
				it.state, it.err = failed, fmt.Errorf("replay: hold: %w", err)
			}
			continue
		}
		for _, f := range out.Failed {
			if i, convErr := strconv.Atoi(aws.ToString(f.Id)); convErr == nil && i < len(chunk) {
				chunk[i].state, chunk[i].err = failed, fmt.Errorf("replay: hold: %s", aws.ToString(f.Code))
			}
		}
	}
}

func (r *Replayer) count(rep *Report, it *item) {
	switch it.state {
	case replayed:
		rep.Replayed++
	case escalated:
		rep.Escalated++
	case held:
		rep.Held++
	case skipped:
		rep.Skipped++
	default:
		if r.opts.DryRun {
			if it.decision.Action == Escalate {
				rep.Escalated++
			} else {
				rep.Replayed++
			}
			return
		}
		rep.Failed++
	}
}

func (r *Replayer) notify(it *item, now time.Time) {
	h, log, m, d := &r.opts.Hooks, r.opts.Logger, it.msg, it.decision
	id := slog.String("message_id", aws.ToString(m.MessageId))
	switch it.state {
	case replayed:
		log.LogAttrs(context.Background(), slog.LevelInfo, "replay: replayed", id, slog.Int("attempt", d.Attempt), slog.Duration("delay", d.Delay))
		if h.Replayed != nil {
			h.Replayed(m, d, it.target)
		}
	case escalated:
		log.LogAttrs(context.Background(), slog.LevelWarn, "replay: escalated", id, slog.String("reason", string(d.Reason)), slog.String("detail", d.Detail))
		if h.Escalated != nil {
			h.Escalated(m, d)
		}
	case held:
		if h.Held != nil {
			h.Held(m, d, now.Add(it.holdFor))
		}
	case failed:
		log.LogAttrs(context.Background(), slog.LevelWarn, "replay: failed; left in the DLQ", id, slog.Any("error", it.err))
		if h.Failed != nil {
			h.Failed(m, it.err)
		}
	}
}
