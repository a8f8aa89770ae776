package replay

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/tracing"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/internal/sqserr"
	"github.com/sqskit/sqskit/internal/sqsrule"
	"github.com/sqskit/sqskit/internal/telemetry"
)

// settleAttempts bounds the tries of a delete or a hold that keeps failing
// in a retryable way, as the consumer's deletes do.
const settleAttempts = 5

// settle deletes from the DLQ what reached its next home, and holds what
// stays: held messages until due, rejected ones for MaxBackoff.
func (p *pass) settle(ctx context.Context) {
	var moved, kept []*item
	for _, it := range p.items {
		switch it.state {
		case replayed, escalated:
			moved = append(moved, it)
		case held, rejected:
			kept = append(kept, it)
		}
	}
	if !p.lambda {
		p.deleteMoved(ctx, moved)
	}
	p.hold(ctx, kept)
}

// deleteMoved deletes sent messages from the DLQ, and nothing else. A delete
// that fails for good leaves a copy in the DLQ that a later pass sends
// again (deduplicated on FIFO targets within 5 minutes, a duplicate on
// standard ones): that message did not leave the DLQ, and counts as failed.
func (p *pass) deleteMoved(ctx context.Context, moved []*item) {
	for start := 0; start < len(moved); start += sqsrule.MaxBatchEntries {
		c := moved[start:min(start+sqsrule.MaxBatchEntries, len(moved))]
		errs := retryBatch(ctx, len(c), func(idx []int) (batchAnswer, error) {
			entries := make([]types.DeleteMessageBatchRequestEntry, len(idx))
			for j, i := range idx {
				entries[j] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: c[i].msg.ReceiptHandle}
			}
			cctx, call := p.r.obs.startCall(ctx, p.r.dlq, tracing.SpanKindClient, telemetry.OperationSettle, telemetry.OperationDelete, len(entries))
			out, err := p.r.client.DeleteMessageBatch(cctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(p.r.dlq), Entries: entries})
			call.end(cctx, -1, err)
			if err != nil {
				p.failedForGood(err)
				return batchAnswer{}, err
			}
			a := batchAnswer{failed: out.Failed}
			for _, s := range out.Successful {
				a.succeeded = append(a.succeeded, aws.ToString(s.Id))
			}
			return a, nil
		})
		for i, err := range errs {
			c[i].state, c[i].err = failed, fmt.Errorf("replay: sent to %s, but the delete from the DLQ failed, so it will be sent again: %w", c[i].target, err)
		}
	}
}

// hold keeps messages invisible in the DLQ for their holdFor, at most 12 h
// from their receive (what SQS accepts). A held message whose hold fails
// is counted failed: it comes back when its receive's visibility timeout
// ends, and is held again then. A rejected one stays rejected, its error
// saying the hold failed too: it comes back, and is rejected again.
func (p *pass) hold(ctx context.Context, kept []*item) {
	for start := 0; start < len(kept); start += sqsrule.MaxBatchEntries {
		c := kept[start:min(start+sqsrule.MaxBatchEntries, len(kept))]
		errs := retryBatch(ctx, len(c), func(idx []int) (batchAnswer, error) {
			entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, len(idx))
			now := time.Now()
			for j, i := range idx {
				secs := min(seconds(c[i].holdFor), int32(p.holdLimit(now)/time.Second))
				c[i].until = now.Add(time.Duration(secs) * time.Second)
				entries[j] = types.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: c[i].msg.ReceiptHandle,
					VisibilityTimeout: secs}
			}
			cctx, call := p.r.obs.startCall(ctx, p.r.dlq, tracing.SpanKindClient, telemetry.OperationSettle, telemetry.OperationVisibility, len(entries))
			out, err := p.r.client.ChangeMessageVisibilityBatch(cctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(p.r.dlq), Entries: entries})
			call.end(cctx, -1, err)
			if err != nil {
				p.failedForGood(err)
				return batchAnswer{}, err
			}
			a := batchAnswer{failed: out.Failed}
			for _, s := range out.Successful {
				a.succeeded = append(a.succeeded, aws.ToString(s.Id))
			}
			return a, nil
		})
		for i, err := range errs {
			c[i].until = time.Time{}
			switch c[i].state {
			case held:
				c[i].state, c[i].err = failed, fmt.Errorf("replay: hold: %w", err)
			case rejected:
				c[i].err = fmt.Errorf("%w; its hold in the DLQ failed too, so it comes back after the visibility timeout: %v", c[i].err, err)
			}
		}
	}
}

// batchAnswer is what a batch call's answer says of its entries, by Id.
type batchAnswer struct {
	succeeded []string
	failed    []types.BatchResultErrorEntry
}

// retryBatch calls a batch operation on n entries, identified by their index,
// until each succeeded or failed for good: a call that fails in a retryable
// way, entries that fail without a sender fault, and entries the answer
// lists in neither Successful nor Failed (unconfirmed, as if lost in
// transit) are tried again, up to settleAttempts in all. It returns the
// error of each entry that did not succeed.
func retryBatch(ctx context.Context, n int, call func(idx []int) (batchAnswer, error)) map[int]error {
	errs := map[int]error{}
	todo := make([]int, n)
	for i := range todo {
		todo[i] = i
	}
	for attempt := 1; len(todo) > 0; attempt++ {
		last := attempt == settleAttempts
		answer, err := call(todo)
		var again []int
		switch {
		case err != nil && (last || !sqserr.Transient(err)):
			for _, i := range todo {
				errs[i] = err
			}
		case err != nil:
			again = todo
		default:
			answered := make(map[string]bool, len(todo))
			for _, id := range answer.succeeded {
				answered[id] = true
			}
			for _, f := range answer.failed {
				i, convErr := strconv.Atoi(aws.ToString(f.Id))
				if convErr != nil || i < 0 || i >= n {
					continue
				}
				answered[aws.ToString(f.Id)] = true
				if f.SenderFault || last {
					errs[i] = fmt.Errorf("%s: %s", aws.ToString(f.Code), aws.ToString(f.Message))
				} else {
					again = append(again, i)
				}
			}
			for _, i := range todo {
				switch {
				case answered[strconv.Itoa(i)]:
				case last:
					errs[i] = fmt.Errorf("%s: the entry is missing from the answer", missingResult)
				default:
					again = append(again, i)
				}
			}
		}
		todo = again
		if len(todo) > 0 && !backoff.Sleep(ctx, time.Duration(attempt)*100*time.Millisecond) {
			for _, i := range todo {
				errs[i] = ctx.Err()
			}
			return errs
		}
	}
	return errs
}
