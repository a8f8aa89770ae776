package fifo

import (
	"context"
	"errors"
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
// order. Each group's messages reach the queue in the order given:
//
//   - batches go out one at a time, so no two in-flight batches share a
//     group;
//   - an entry that fails with SenderFault false is retried with its
//     deduplication id (so a retry can never enqueue it twice), ahead of the
//     rest of its group, and a batch that retries it carries no later message
//     of its group;
//   - an entry that fails for good (invalid, SenderFault true, retries or
//     the dedup window exhausted) blocks the rest of its group in this call:
//     they fail with GroupBlockedError unless ContinueGroupAfterFailure.
//
// SQS may accept later entries of a group from the same batch as an entry
// that fails. Those later messages are then already queued ahead of it; the
// failed one is still retried (nothing is lost) and its Result says
// Reordered.
func (s *Sender) SendBatch(ctx context.Context, msgs []Message) []Result {
	results := make([]Result, len(msgs))
	b := &batchRun{s: s, results: results, blocked: map[string]error{}}
	for i := range msgs {
		m := &msgs[i]
		p, err := s.prepare(i, m)
		if err != nil {
			results[i].Err = err
			b.block(s.groupOf(m), err)
			continue
		}
		b.queue = append(b.queue, p)
	}
	b.run(ctx)
	return results
}

// run sends the queue until every message is settled in b.results.
func (b *batchRun) run(ctx context.Context) {
	s := b.s
	var prev time.Duration
	for len(b.queue) > 0 {
		batch := b.take()
		if len(batch) == 0 {
			continue // every head message was blocked
		}
		s.markAttempt(batch...)
		out, err := s.client.SendMessageBatch(ctx, s.batchInput(batch))
		if err != nil {
			if !sqserr.Transient(err) {
				b.fail(batch, err)
				continue
			}
			b.queue = append(batch, b.queue...) // same entries, same ids, first again
			if werr := s.wait(ctx, batch, &prev, err); werr != nil {
				b.fail(batch, werr)
			}
			continue
		}
		retry, cause := b.settle(batch, out)
		if len(retry) == 0 {
			prev = 0
			continue
		}
		if werr := s.wait(ctx, retry, &prev, cause); werr != nil {
			b.fail(retry, werr)
		}
	}
}

func (s *Sender) groupOf(m *Message) string {
	if m.GroupID == "" && s.opts.GroupID != nil {
		return s.opts.GroupID(m)
	}
	return m.GroupID
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

// batchRun is the state of one SendBatch call.
type batchRun struct {
	s         *Sender
	results   []Result
	queue     []*prepared // not yet settled, in order
	blocked   map[string]error
	reordered map[*prepared]bool
}

// block stops later messages of group from being sent, unless the options
// let groups continue.
func (b *batchRun) block(group string, cause error) {
	if group != "" && !b.s.opts.ContinueGroupAfterFailure {
		if _, already := b.blocked[group]; !already {
			b.blocked[group] = cause
		}
	}
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
		if cause, ok := b.blocked[p.groupID]; ok && p.groupID != "" {
			b.results[p.index].Err = &GroupBlockedError{GroupID: p.groupID, Cause: cause}
			b.results[p.index].DeduplicationID = p.dedupID
			continue
		}
		full := len(batch) == sqsrule.MaxBatchEntries || bytes+p.size > b.s.opts.MaxBatchBytes
		if full {
			rest = append(rest, b.queue[i:]...)
			break
		}
		if p.groupID != "" && solo[p.groupID] {
			rest = append(rest, p)
			continue
		}
		if p.entryFailed && p.groupID != "" {
			solo[p.groupID] = true
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
		r := &b.results[p.index]
		r.DeduplicationID = p.dedupID
		if e, done := ok[i]; done {
			r.MessageID, r.SequenceNumber, r.Err = aws.ToString(e.MessageId), aws.ToString(e.SequenceNumber), nil
			r.Reordered = b.reordered[p]
			continue
		}
		f, reported := failed[i]
		if !reported {
			// Neither in Successful nor in Failed: treat as lost in transit.
			f = types.BatchResultErrorEntry{Code: aws.String("MissingResult"), Message: aws.String("entry missing from the response")}
		}
		if f.SenderFault {
			r.Err = &EntryError{Code: aws.ToString(f.Code), Message: aws.ToString(f.Message), SenderFault: true}
			b.block(p.groupID, r.Err)
			continue
		}
		for j := i + 1; j < len(batch); j++ {
			if _, accepted := ok[j]; accepted && p.groupID != "" && batch[j].groupID == p.groupID {
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

// fail settles every message of ps with err and blocks their groups.
func (b *batchRun) fail(ps []*prepared, err error) {
	drop := map[*prepared]bool{}
	for _, p := range ps {
		perMessage := err
		var w *WindowExceededError
		if errors.As(err, &w) {
			own := *w
			own.DeduplicationID, own.FirstAttempt = p.dedupID, p.first
			perMessage = &own
		}
		b.results[p.index].Err = perMessage
		b.results[p.index].DeduplicationID = p.dedupID
		b.block(p.groupID, perMessage)
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
