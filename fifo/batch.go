package fifo

import (
	"context"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/internal/sqsrule"
)

// SendBatch sends msgs with as few SendMessageBatch calls as the limits
// allow (10 entries, MaxBatchBytes), up to SendConcurrency calls in flight,
// and returns one Result per message, in order. Each batch holds a group's
// messages in the order given, and the oldest message's group first; a
// batch short of ten waits while a call in flight may free messages to
// fill it. On a FIFO queue each group's messages reach the queue in that
// order:
//
//   - a group is in at most one call at a time: batches in flight hold
//     disjoint groups, and a group's later messages wait until its earlier
//     ones were acknowledged or failed for good;
//   - an entry that fails with SenderFault false is retried with its
//     deduplication id (so a retry can never enqueue it twice), after
//     SendBackoff, ahead of the rest of its group, and a batch that retries
//     it carries no later message of its group; while it waits, other
//     groups go on;
//   - an entry that fails for good (invalid, SenderFault true, attempts or
//     the dedup window exhausted) blocks the later messages of its group in
//     this call: they fail with GroupBlockedError, which names it, unless
//     ContinueGroupAfterFailure. Earlier messages of the group are not
//     affected.
//
// SQS may accept later entries of a group from the same batch as an entry
// that fails. Those later messages are then already queued ahead of it; the
// failed one is still retried (nothing is lost) and its Result says
// Reordered, as does that of every message a call may have stored behind a
// later one of its group (see Result.Reordered).
//
// On a standard queue SQS keeps no order, so no message waits for or is
// blocked by another; any batches may be in flight together, and failed
// entries are retried up to SendMaxAttempts.
//
// Once ctx is done no call starts; messages not sent yet fail with ctx's
// error, and SendBatch returns when the calls in flight have come back.
func (s *Sender) SendBatch(ctx context.Context, msgs []Message) []Result {
	ctx, span := s.obs.startSend(ctx, len(msgs))
	results := s.sendBatch(ctx, msgs)
	s.obs.endSend(ctx, span, results...)
	return results
}

func (s *Sender) sendBatch(ctx context.Context, msgs []Message) []Result {
	results := make([]Result, len(msgs))
	if _, err := s.queueURL(ctx); err != nil {
		for i := range results {
			results[i].Err = err
		}
		return results
	}
	q := s.newPipeline(s.opts.SendConcurrency, true, func(p *prepared, r Result) { results[p.index] = r })
	var invalid map[string]blockage // FIFO groups with an invalid message
	for i := range msgs {
		m := &msgs[i]
		p, err := s.prepare(ctx, i, m)
		if err != nil {
			results[i].Err = err
			if g := s.groupOf(m); s.fifo && g != "" && !s.opts.ContinueGroupAfterFailure {
				if _, ok := invalid[g]; !ok {
					if invalid == nil {
						invalid = map[string]blockage{}
					}
					invalid[g] = blockage{index: i, cause: err}
				}
			}
			continue
		}
		if bl, ok := invalid[p.orderGroup]; ok {
			results[i] = Result{DeduplicationID: p.dedupID, Err: &GroupBlockedError{GroupID: p.orderGroup, Index: bl.index, Cause: bl.cause}}
			continue
		}
		q.add(p)
	}
	q.run(ctx)
	return results
}

// blockage is the first message of a group that failed validation.
type blockage struct {
	index int
	cause error
}

// run drives q until every message is settled. A batch short of ten goes
// only once no call in flight carries a group with messages behind it:
// until then, those messages may still fill it.
func (q *pipeline) run(ctx context.Context) {
	ctxDone := ctx.Done()
	for {
		q.fill(ctx, !q.joinable())
		if q.idle() {
			q.close()
			return
		}
		select {
		case f := <-q.done:
			q.complete(ctx, f)
		case <-q.retryDue():
			q.wake()
		case <-ctxDone:
			ctxDone = nil // fill abandons what is not in flight
		}
	}
}

func (s *Sender) batchInput(batch []*prepared) *sqs.SendMessageBatchInput {
	entries := make([]types.SendMessageBatchRequestEntry, len(batch))
	for i, p := range batch {
		entries[i] = types.SendMessageBatchRequestEntry{
			Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(p.msg.Body), MessageAttributes: p.attrs,
			MessageSystemAttributes: systemAttributes(p.traceHeader),
			DelaySeconds:            p.msg.DelaySeconds, MessageGroupId: optional(p.groupID), MessageDeduplicationId: optional(p.dedupID),
		}
	}
	return &sqs.SendMessageBatchInput{QueueUrl: aws.String(s.queue.URL()), Entries: entries}
}

// outcomes settles a batch's accepted entries and those SQS refused for
// good (SenderFault), which it returns in failed. It returns the entries to
// retry, in batch order, and the failure of the first of them.
func (q *pipeline) outcomes(batch []*prepared, out *sqs.SendMessageBatchOutput) (retry, failed []*prepared, cause error) {
	sdkRetries := sdkUnconfirmed(out.ResultMetadata)
	var ok [sqsrule.MaxBatchEntries]*types.SendMessageBatchResultEntry
	var refused [sqsrule.MaxBatchEntries]*types.BatchResultErrorEntry
	for i := range out.Successful {
		if j, err := strconv.Atoi(aws.ToString(out.Successful[i].Id)); err == nil && j >= 0 && j < len(batch) {
			ok[j] = &out.Successful[i]
		}
	}
	for i := range out.Failed {
		if j, err := strconv.Atoi(aws.ToString(out.Failed[i].Id)); err == nil && j >= 0 && j < len(batch) {
			refused[j] = &out.Failed[i]
		}
	}
	// An acknowledged or missing entry may have been stored, and so may
	// any when the SDK sent the call more than once.
	q.mayHaveStored(batch, func(i int) bool { return ok[i] != nil || refused[i] == nil || sdkRetries > 0 }, sdkRetries+1)
	for i, p := range batch {
		p.unconfirmed += sdkRetries
		if e := ok[i]; e != nil {
			r := p.result()
			r.MessageID, r.SequenceNumber = aws.ToString(e.MessageId), aws.ToString(e.SequenceNumber)
			q.report(p, r)
			continue
		}
		f := refused[i]
		if f == nil {
			// Neither in Successful nor in Failed: treat as lost in transit.
			f = &types.BatchResultErrorEntry{Code: aws.String("MissingResult"), Message: aws.String("entry missing from the response")}
			p.unconfirmed++
		}
		if f.SenderFault {
			q.fail(p, &EntryError{Code: aws.ToString(f.Code), Message: aws.ToString(f.Message), SenderFault: true})
			failed = append(failed, p)
			continue
		}
		for j := i + 1; j < len(batch); j++ {
			if ok[j] != nil && p.orderGroup != "" && batch[j].orderGroup == p.orderGroup {
				p.reordered = true
			}
		}
		if cause == nil {
			cause = &EntryError{Code: aws.ToString(f.Code), Message: aws.ToString(f.Message)}
		}
		p.entryFailed = true
		retry = append(retry, p)
	}
	return retry, failed, cause
}
