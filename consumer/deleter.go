package consumer

import (
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/internal/sqserr"
)

// deleteAttempts bounds the retries of a delete that keeps failing in a
// retryable way; after them the message is left to come back (at least once).
const deleteAttempts = 5

// deleter batches deletes of handled messages: a batch goes when it has ten
// entries or when its first entry has waited DeleteFlushInterval. It ends,
// after flushing, when r.deletes is closed.
func (r *run) deleter() {
	var buf []*inflight
	var flushTimer <-chan time.Time
	var stopTimer func() bool
	flush := func() {
		if stopTimer != nil {
			stopTimer()
		}
		flushTimer, stopTimer = nil, nil
		r.deleteBatch(buf)
		buf = nil
	}
	for {
		select {
		case t, ok := <-r.deletes:
			if !ok {
				if len(buf) > 0 {
					flush()
				}
				return
			}
			buf = append(buf, t)
			if len(buf) == 10 {
				flush()
			} else if flushTimer == nil {
				timer := time.NewTimer(r.c.opts.DeleteFlushInterval)
				flushTimer, stopTimer = timer.C, timer.Stop
			}
		case <-flushTimer:
			flush()
		}
	}
}

// deleteBatch deletes up to ten messages with their latest receipt handles,
// retrying entries and calls that failed in a retryable way.
func (r *run) deleteBatch(ts []*inflight) {
	for attempt := 1; len(ts) > 0; attempt++ {
		entries := make([]types.DeleteMessageBatchRequestEntry, len(ts))
		r.mu.Lock()
		for i, t := range ts {
			entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(t.handle)}
		}
		r.mu.Unlock()
		out, err := r.c.client.DeleteMessageBatch(r.apiCtx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(r.c.queueURL), Entries: entries})
		var retry []*inflight
		switch {
		case err != nil && (!sqserr.Transient(err) || attempt == deleteAttempts):
			for _, t := range ts {
				r.deleteFailed(t, err)
			}
		case err != nil:
			retry = ts
		default:
			failed := map[int]types.BatchResultErrorEntry{}
			for _, f := range out.Failed {
				if i, convErr := strconv.Atoi(aws.ToString(f.Id)); convErr == nil {
					failed[i] = f
				}
			}
			for i, t := range ts {
				f, bad := failed[i]
				switch {
				case !bad:
					r.c.stats.deleted.Add(1)
					r.h.deleted(t.msg)
					r.untrack(t)
				case f.SenderFault || attempt == deleteAttempts:
					r.deleteFailed(t, &entryError{code: aws.ToString(f.Code), message: aws.ToString(f.Message), senderFault: f.SenderFault})
				default:
					retry = append(retry, t)
				}
			}
		}
		ts = retry
		if len(ts) > 0 && !backoff.Sleep(r.apiCtx, time.Duration(attempt)*100*time.Millisecond) {
			for _, t := range ts {
				r.deleteFailed(t, r.apiCtx.Err())
			}
			return
		}
	}
}

func (r *run) deleteFailed(t *inflight, err error) {
	r.c.stats.deleteFailed.Add(1)
	r.h.deleteFailed(t.msg, err)
	r.log.LogAttrs(r.apiCtx, slog.LevelWarn, "consumer: delete failed; the message will be delivered again",
		slog.String("message_id", t.msg.ID), slog.String("error", fmt.Sprint(err)))
	r.untrack(t)
}
