package fifo

import (
	"context"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/internal/sqserr"
	"github.com/sqskit/sqskit/internal/sqsrule"
)

// SendBatch sends msgs with as few SendMessageBatch calls as the limits
// allow (10 entries, MaxBatchBytes), and returns one Result per message, in
// order. On a FIFO queue each group's messages reach the queue in the order
// given:
//
//   - batches go out one at a time, so no two in-flight batches share a
//     group;
//   - an entry that fails with SenderFault false is retried with its
//     deduplication id (so a retry can never enqueue it twice), ahead of the
//     rest of its group, and a batch that retries it carries no later message
//     of its group;
//   - an entry that fails for good (invalid, SenderFault true, attempts or
//     the dedup window exhausted) blocks the later messages of its group in
//     this call: they fail with GroupBlockedError, which names it, unless
//     ContinueGroupAfterFailure. Earlier messages of the group are not
//     affected.
//
// SQS may accept later entries of a group from the same batch as an entry
// that fails. Those later messages are then already queued ahead of it; the
// failed one is still retried (nothing is lost) and its Result says
// Reordered.
//
// On a standard queue SQS keeps no order, so no message waits for or is
// blocked by another; failed entries are retried up to SendMaxAttempts.
func (s *Sender) SendBatch(ctx context.Context, msgs []Message) []Result {
	results := make([]Result, len(msgs))
	b := &batchRun{s: s, results: results, indexed: true}
	for i := range msgs {
		m := &msgs[i]
		p, err := s.prepare(i, m)
		if err != nil {
			results[i].Err = err
			if s.fifo {
				b.block(s.groupOf(m), i, err)
			}
			continue
		}
		b.queue = append(b.queue, p)
	}
	b.run(ctx)
	return results
}

// batchRun is the state of one SendBatch call, or of one Batcher batch.
type batchRun struct {
	s       *Sender
	results []Result
	queue   []*prepared // not yet settled, in order
	// indexed: the prepared indexes are positions in the caller's SendBatch
	// call, so GroupBlockedError can name the message that blocked a group.
	indexed   bool
	blocked   map[string]blockage
	reordered map[*prepared]bool
}

// blockage is the first message of a group that failed for good.
type blockage struct {
	index int
	cause error
}

// run sends the queue until every message is settled in b.results.
func (b *batchRun) run(ctx context.Context) {
	s := b.s
	var prev time.Duration
	for len(b.queue) > 0 {
		if err := ctx.Err(); err != nil {
			b.fail(b.queue, err)
			return
		}
		batch := b.take()
		if len(batch) == 0 {
			continue // every head message was blocked
		}
		s.markAttempt(batch...)
		out, err := s.client.SendMessageBatch(ctx, s.batchInput(batch))
		var retry []*prepared
		var cause error
		if err != nil {
			n := callUnconfirmed(err)
			for _, p := range batch {
				p.unconfirmed += n
			}
			if !sqserr.Transient(err) {
				b.fail(batch, err)
				continue
			}
			b.queue = append(batch, b.queue...) // same entries, same ids, first again
			retry, cause = batch, err
		} else {
			retry, cause = b.settle(batch, out)
		}
		if len(retry) == 0 {
			prev = 0
			continue
		}
		d, failed := s.plan(retry, prev, cause)
		var waiting []*prepared
		for i, p := range retry {
			if failed[i] != nil {
				b.fail([]*prepared{p}, failed[i])
				continue
			}
			waiting = append(waiting, p)
		}
		if len(waiting) == 0 {
			continue
		}
		prev = d
		if err := s.sleep(ctx, d, len(waiting), cause); err != nil {
			b.fail(waiting, err)
		}
	}
}

func (s *Sender) batchInput(batch []*prepared) *sqs.SendMessageBatchInput {
	entries := make([]types.SendMessageBatchRequestEntry, len(batch))
	for i, p := range batch {
		entries[i] = types.SendMessageBatchRequestEntry{
			Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(p.msg.Body), MessageAttributes: p.msg.Attributes,
			DelaySeconds: p.msg.DelaySeconds, MessageGroupId: optional(p.groupID), MessageDeduplicationId: optional(p.dedupID),
		}
	}
	return &sqs.SendMessageBatchInput{QueueUrl: aws.String(s.queueURL), Entries: entries}
}

// block stops the messages of group after index from being sent, unless the
// options let groups continue. The earliest failure of a group wins.
func (b *batchRun) block(group string, index int, cause error) {
	if group == "" || b.s.opts.ContinueGroupAfterFailure {
		return
	}
	if bl, ok := b.blocked[group]; ok && bl.index <= index {
		return
	}
	if b.blocked == nil {
		b.blocked = map[string]blockage{}
	}
	b.blocked[group] = blockage{index: index, cause: cause}
}

// blockedBy returns the error of p when an earlier message of its group
// failed for good, or nil.
func (b *batchRun) blockedBy(p *prepared) error {
	bl, ok := b.blocked[p.orderGroup]
	if !ok || p.orderGroup == "" || p.index <= bl.index {
		return nil
	}
	index := bl.index
	if !b.indexed {
		index = -1
	}
	return &GroupBlockedError{GroupID: p.orderGroup, Index: index, Cause: bl.cause}
}

// take removes and returns the next batch from the head of the queue,
// failing messages of blocked groups on the way. A message that SQS failed
// on its own travels without later messages of its group.
func (b *batchRun) take() []*prepared {
	var batch []*prepared
	var rest []*prepared
	bytes := 0
	solo := map[string]bool{}
	for i, p := range b.queue {
		if err := b.blockedBy(p); err != nil {
			r := p.result()
			r.Err = err
			b.results[p.index] = r
			continue
		}
		full := len(batch) == sqsrule.MaxBatchEntries || bytes+p.size > b.s.opts.MaxBatchBytes
		if full {
			rest = append(rest, b.queue[i:]...)
			break
		}
		if p.orderGroup != "" && solo[p.orderGroup] {
			rest = append(rest, p)
			continue
		}
		if p.entryFailed && p.orderGroup != "" {
			solo[p.orderGroup] = true
		}
		batch = append(batch, p)
		bytes += p.size
	}
	b.queue = rest
	return batch
}

// settle records a batch's per-entry outcomes. It returns the entries to
// retry, which go back to the head of the queue in their order, and the
// failure of the first of them.
func (b *batchRun) settle(batch []*prepared, out *sqs.SendMessageBatchOutput) ([]*prepared, error) {
	sdkRetries := sdkUnconfirmed(out.ResultMetadata)
	ok := map[int]types.SendMessageBatchResultEntry{}
	for _, e := range out.Successful {
		if i, err := strconv.Atoi(aws.ToString(e.Id)); err == nil && i >= 0 && i < len(batch) {
			ok[i] = e
		}
	}
	failed := map[int]types.BatchResultErrorEntry{}
	for _, e := range out.Failed {
		if i, err := strconv.Atoi(aws.ToString(e.Id)); err == nil && i >= 0 && i < len(batch) {
			failed[i] = e
		}
	}
	var retry []*prepared
	var cause error
	for i, p := range batch {
		p.unconfirmed += sdkRetries
		if e, done := ok[i]; done {
			r := p.result()
			r.MessageID, r.SequenceNumber = aws.ToString(e.MessageId), aws.ToString(e.SequenceNumber)
			r.Reordered = b.reordered[p]
			b.results[p.index] = r
			continue
		}
		f, reported := failed[i]
		if !reported {
			// Neither in Successful nor in Failed: treat as lost in transit.
			f = types.BatchResultErrorEntry{Code: aws.String("MissingResult"), Message: aws.String("entry missing from the response")}
			p.unconfirmed++
		}
		if f.SenderFault {
			r := p.result()
			r.Err = &EntryError{Code: aws.ToString(f.Code), Message: aws.ToString(f.Message), SenderFault: true}
			b.results[p.index] = r
			b.block(p.orderGroup, p.index, r.Err)
			continue
		}
		for j := i + 1; j < len(batch); j++ {
			if _, accepted := ok[j]; accepted && p.orderGroup != "" && batch[j].orderGroup == p.orderGroup {
				if b.reordered == nil {
					b.reordered = map[*prepared]bool{}
				}
				b.reordered[p] = true
			}
		}
		if cause == nil {
			cause = &EntryError{Code: aws.ToString(f.Code), Message: aws.ToString(f.Message)}
		}
		p.entryFailed = true
		retry = append(retry, p)
	}
	b.queue = append(retry, b.queue...)
	return retry, cause
}

// fail settles every message of ps with err, blocks the rest of their
// groups, and removes them from the queue.
func (b *batchRun) fail(ps []*prepared, err error) {
	drop := map[*prepared]bool{}
	for _, p := range ps {
		r := p.result()
		r.Err = err
		b.results[p.index] = r
		b.block(p.orderGroup, p.index, err)
		drop[p] = true
	}
	kept := b.queue[:0]
	for _, p := range b.queue {
		if !drop[p] {
			kept = append(kept, p)
		}
	}
	b.queue = kept
}
