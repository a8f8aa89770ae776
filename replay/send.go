package replay

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/tracing"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/internal/parking"
	"github.com/sqskit/sqskit/internal/sqserr"
	"github.com/sqskit/sqskit/internal/sqsrule"
	"github.com/sqskit/sqskit/internal/telemetry"
)

// form is how much of a message an escalation carries (parking.Form).
type form = parking.Form

const (
	formWhole    = parking.FormWhole
	formBodyOnly = parking.FormBodyOnly
)

// maxSendTries bounds the sends of a message that fail in a retryable way
// within one pass; after them it is left in the DLQ for a later pass.
const maxSendTries = 3

// ErrRejected matches the error of a message SQS accepts in no form.
var ErrRejected = errors.New("replay: rejected by SQS in every form")

// send sends every pending message in rounds: a round takes at most one
// message of each FIFO group, so a group's next message goes only once the
// one before it is on its target, and a message that fails stops its group.
func (p *pass) send(ctx context.Context) {
	for {
		ready := p.nextRound()
		if len(ready) == 0 {
			return
		}
		tries := 0
		for _, it := range ready {
			tries = max(tries, it.tries)
		}
		if tries > 0 {
			if !backoff.Sleep(ctx, time.Duration(tries)*100*time.Millisecond) {
				for _, it := range ready {
					it.state, it.err = failed, fmt.Errorf("replay: send: %w", ctx.Err())
				}
				continue
			}
		}
		p.sendRound(ctx, ready)
	}
}

// nextRound picks the messages to send now: every pending one without a
// group, and the first pending one of each group whose earlier messages all
// moved. The later messages of a group stopped by one that did not move
// wait.
func (p *pass) nextRound() []*item {
	var ready []*item
	inRound, stopped := map[string]bool{}, map[string]bool{}
	for _, it := range p.items {
		if it.group != "" && stopped[it.group] {
			if it.state == pending {
				it.state = waiting
			}
			continue
		}
		switch it.state {
		case replayed, escalated:
		case pending:
			if it.group == "" {
				ready = append(ready, it)
			} else if !inRound[it.group] {
				inRound[it.group] = true
				ready = append(ready, it)
			}
		default:
			if it.group != "" {
				stopped[it.group] = true
			}
		}
	}
	return ready
}

// outgoing is one entry to send.
type outgoing struct {
	it    *item
	entry types.SendMessageBatchRequestEntry
	size  int
}

// sendRound builds the round's entries and sends them, ten and 1 MiB at
// most per call, several calls at once.
func (p *pass) sendRound(ctx context.Context, ready []*item) {
	var outs []outgoing
	for _, it := range ready {
		if o, ok := p.build(it); ok {
			outs = append(outs, o)
		}
	}
	chunks := chunk(outs)
	sem := make(chan struct{}, p.r.opts.Concurrency)
	var wg sync.WaitGroup
	for _, c := range chunks {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			p.sendChunk(ctx, c)
		}()
	}
	wg.Wait()
}

// chunk splits entries into batches SQS accepts: one target each, at most
// ten entries and 1 MiB, in order; an entry marked solo goes alone.
func chunk(outs []outgoing) [][]outgoing {
	var chunks [][]outgoing
	open := map[string]int{} // target → index of its open chunk
	sizes := map[string]int{}
	for _, o := range outs {
		target := o.it.target
		i, ok := open[target]
		if o.it.solo || !ok || len(chunks[i]) == sqsrule.MaxBatchEntries || sizes[target]+o.size > sqsrule.MaxMessageBytes {
			chunks = append(chunks, nil)
			i, sizes[target] = len(chunks)-1, 0
			open[target] = i
			if o.it.solo {
				delete(open, target)
			}
		}
		chunks[i] = append(chunks[i], o)
		sizes[target] += o.size
	}
	return chunks
}

// build returns the entry for a message. A replay SQS would refuse becomes
// an escalation; an escalation SQS would refuse is built again with less of
// the message; one that fits in no form is rejected.
func (p *pass) build(it *item) (outgoing, bool) {
	for {
		e, size, reason, err := p.entry(it)
		if err == nil {
			return outgoing{it: it, entry: e, size: size}, true
		}
		if !p.refuse(it, reason, err.Error()) {
			return outgoing{}, false
		}
	}
}

// refuse handles a message SQS will not take as it is: a replay becomes an
// escalation, an escalation drops to its next form. It reports false when no
// form is left and the message is rejected.
func (p *pass) refuse(it *item, reason Reason, detail string) bool {
	if it.decision.Action == Replay {
		it.decision = escalation(it.decision, reason, "%s", detail)
		it.decision.Metadata.LastDelay = 0
		it.target, it.delay, it.form = p.r.operator, 0, formWhole
		return true
	}
	if it.form < formBodyOnly {
		it.form++
		return true
	}
	it.state, it.holdFor = rejected, p.r.policy.MaxBackoff
	it.err = fmt.Errorf("%w: %s", ErrRejected, detail)
	return false
}

// entry builds the outgoing message in the item's form and checks it
// against SQS's rules: the reason says why it would be refused.
func (p *pass) entry(it *item) (types.SendMessageBatchRequestEntry, int, Reason, error) {
	d := it.decision
	count := d.Attempt
	if d.Action == Escalate {
		count = max(d.Attempt-1, 0) // the replays it had
	}
	out := parking.Outgoing{Message: it.msg, Target: it.target, Escalation: d.Action == Escalate,
		CounterAttribute: p.r.policy.CounterAttribute, Count: count, Attempt: d.Attempt, DelaySeconds: it.delay,
		Metadata: d.Metadata, MaxMessageBytes: p.r.policy.MaxMessageBytes}
	if out.Escalation {
		out.Metadata.From = p.r.dlq
	}
	m, reason, err := out.Build(it.form)
	if err != nil {
		return types.SendMessageBatchRequestEntry{}, 0, reason, err
	}
	e := types.SendMessageBatchRequestEntry{MessageBody: aws.String(m.Body), MessageAttributes: m.Attributes, DelaySeconds: m.DelaySeconds}
	if m.TraceHeader != "" {
		e.MessageSystemAttributes = map[string]types.MessageSystemAttributeValue{
			string(types.MessageSystemAttributeNameForSendsAWSTraceHeader): {DataType: aws.String("String"), StringValue: aws.String(m.TraceHeader)},
		}
	}
	if m.GroupID != "" {
		e.MessageGroupId = aws.String(m.GroupID)
	}
	if m.DeduplicationID != "" {
		e.MessageDeduplicationId = aws.String(m.DeduplicationID)
	}
	return e, sqsrule.MessageSize(m.Body, m.Attributes), "", nil
}

// missingResult is the code of an entry a batch answer lists in neither
// Successful nor Failed: its outcome is unknown, as if lost in transit, and
// it is tried again (package fifo's rule).
const missingResult = "MissingResult"

// entryError is a send entry's failure, for its error.type.
type entryError struct{ code string }

func (e *entryError) Error() string     { return e.code }
func (e *entryError) ErrorCode() string { return e.code }

// sendChunk sends one batch and records each message's outcome.
func (p *pass) sendChunk(ctx context.Context, c []outgoing) {
	target := c[0].it.target
	entries := make([]types.SendMessageBatchRequestEntry, len(c))
	for i, o := range c {
		entries[i] = o.entry
		entries[i].Id = aws.String(strconv.Itoa(i))
	}
	// The call's span sits under the first message's decision span (smithy
	// has no links); its ctx ends with the pass's, as ctx does.
	cctx, call := p.r.obs.startCall(c[0].it.ctx, target, tracing.SpanKindProducer, telemetry.OperationSend, telemetry.OperationSend, len(c))
	out, err := p.r.client.SendMessageBatch(cctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(target), Entries: entries})
	call.end(cctx, -1, err)
	if err != nil {
		for _, o := range c {
			p.r.obs.sentTo(o.it.ctx, target, err)
		}
		err = fmt.Errorf("replay: send to %s: %w", target, err)
		for _, o := range c {
			p.callFailed(ctx, o.it, err, len(c))
		}
		return
	}
	sent := make(map[string]bool, len(out.Successful))
	for _, s := range out.Successful {
		sent[aws.ToString(s.Id)] = true
	}
	failures := make(map[string]types.BatchResultErrorEntry, len(out.Failed))
	for _, f := range out.Failed {
		failures[aws.ToString(f.Id)] = f
	}
	for i, o := range c {
		id := strconv.Itoa(i)
		f, bad := failures[id]
		if !bad && !sent[id] {
			// In neither list: unconfirmed, as if lost in transit. Only
			// what SQS says it accepted leaves the DLQ.
			f, bad = types.BatchResultErrorEntry{Id: aws.String(id), Code: aws.String(missingResult), Message: aws.String("the entry is missing from the answer")}, true
		}
		if bad {
			p.r.obs.sentTo(o.it.ctx, target, &entryError{code: aws.ToString(f.Code)})
		} else {
			p.r.obs.sentTo(o.it.ctx, target, nil)
		}
		switch {
		case !bad && o.it.decision.Action == Escalate:
			o.it.state = escalated
		case !bad:
			o.it.state = replayed
		case f.SenderFault:
			p.refuse(o.it, Unsendable, "SQS refused it: "+aws.ToString(f.Code))
		default:
			p.retry(o.it, fmt.Errorf("replay: send to %s: %s: %s", target, aws.ToString(f.Code), aws.ToString(f.Message)))
		}
	}
}

// callFailed handles a send call that failed as a whole. A transient error
// is retried; a refusal of the whole batch is retried one message per call,
// to find the one SQS refuses; anything else (the target does not exist,
// access is denied, the pass ran out of time) leaves the message in the DLQ.
func (p *pass) callFailed(ctx context.Context, it *item, err error, batchLen int) {
	switch {
	case ctx.Err() != nil || sqserr.Final(err):
		it.state, it.err = failed, err
		p.failedForGood(err)
	case sqserr.Transient(err):
		p.retry(it, err)
	case batchLen > 1:
		it.solo = true
		p.retry(it, err)
	default:
		p.refuse(it, Unsendable, "SQS refused it: "+sqserr.Code(err))
	}
}

// retry counts a retryable failure: the message is sent again in a later
// round, up to maxSendTries, then left in the DLQ.
func (p *pass) retry(it *item, err error) {
	it.tries++
	it.err = err
	if it.tries >= maxSendTries {
		it.state = failed
	}
}
