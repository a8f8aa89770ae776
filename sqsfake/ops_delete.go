package sqsfake

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/internal/sqsrule"
)

// handleState says what a receipt handle refers to now.
type handleState int

const (
	handleCurrent handleState = iota // from the latest receive of a live message
	handleStale                      // the message was received again since
	handleGone                       // the message was deleted, purged, expired or moved
)

// resolve finds the message a receipt handle names. A handle that does not
// parse, or belongs to another queue or an earlier queue of the same name,
// is ReceiptHandleIsInvalid. Callers hold s.mu.
func (q *queue) resolve(handle *string) (*message, handleState, error) {
	if handle == nil || *handle == "" {
		return nil, 0, errMissingParameter("ReceiptHandle")
	}
	queueID, seq, ok := parseReceiptHandle(*handle)
	if !ok || queueID != q.id {
		return nil, 0, errReceiptHandleInvalid("The input receipt handle %q is not a valid receipt handle.", *handle)
	}
	m, ok := q.msgs.bySeq[seq]
	switch {
	case !ok:
		return nil, handleGone, nil
	case m.handle != *handle:
		return m, handleStale, nil
	}
	return m, handleCurrent, nil
}

func errHandleExpired(handle string) error {
	return errInvalidParameter("Value %s for parameter ReceiptHandle is invalid. Reason: The receipt handle has expired.", handle)
}

// deleteMessage applies one delete. On standard queues a stale handle
// succeeds without deleting (as documented) and an expired one still deletes;
// FIFO queues refuse both as expired. Deleting a deleted message succeeds.
// Callers hold s.mu.
func (s *Server) deleteMessage(q *queue, handle *string, now time.Time) error {
	m, state, err := q.resolve(handle)
	if err != nil || state == handleGone {
		return err
	}
	if q.fifo && (state == handleStale || !m.inFlight(now)) {
		return errHandleExpired(*handle)
	}
	if state == handleStale {
		return nil
	}
	m.touched = true
	q.msgs.remove(m)
	if q.fifo {
		s.notify() // the message's group may be receivable now
	}
	return nil
}

// changeVisibility applies one visibility change, counted from now. The
// total time in flight since the latest receive cannot pass 12 hours.
// Callers hold s.mu.
func (s *Server) changeVisibility(q *queue, handle *string, seconds int32, now time.Time) error {
	if seconds < 0 || seconds > sqsrule.MaxVisibilitySeconds {
		return errInvalidParameter("Value %d for parameter VisibilityTimeout is invalid. Reason: Must be between 0 and 43200.", seconds)
	}
	m, state, err := q.resolve(handle)
	if err != nil {
		return err
	}
	if state != handleCurrent {
		return errInvalidParameter("Value %s for parameter ReceiptHandle is invalid. Reason: Message does not exist or is not available for visibility timeout change.", *handle)
	}
	if !m.inFlight(now) {
		return errMessageNotInflight()
	}
	until := now.Add(time.Duration(seconds) * time.Second)
	if until.After(m.lastRecvAt.Add(sqsrule.MaxVisibility)) {
		return errInvalidParameter("Value %d for parameter VisibilityTimeout is invalid. Reason: Total VisibilityTimeout for the message is beyond the limit [43200 seconds].", seconds)
	}
	q.msgs.setVisibleAt(m, until, now)
	m.touched = true
	s.notify()
	return nil
}

// deleteMessageOp deletes a message by receipt handle.
func (s *Server) deleteMessageOp(ctx context.Context, in *sqs.DeleteMessageInput) (*sqs.DeleteMessageOutput, error) {
	f, err := s.begin(ctx, "DeleteMessage", queueNameOf(in.QueueUrl), in)
	if err != nil {
		return nil, err
	}
	now := s.lock()
	q, err := s.lookup(in.QueueUrl)
	if err == nil {
		q.tick(now)
		err = s.deleteMessage(q, in.ReceiptHandle, now)
	}
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return &sqs.DeleteMessageOutput{}, end(f)
}

// changeMessageVisibility sets a received message's visibility timeout,
// counted from now.
func (s *Server) changeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput) (*sqs.ChangeMessageVisibilityOutput, error) {
	f, err := s.begin(ctx, "ChangeMessageVisibility", queueNameOf(in.QueueUrl), in)
	if err != nil {
		return nil, err
	}
	now := s.lock()
	q, err := s.lookup(in.QueueUrl)
	if err == nil {
		q.tick(now)
		err = s.changeVisibility(q, in.ReceiptHandle, in.VisibilityTimeout, now)
	}
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return &sqs.ChangeMessageVisibilityOutput{}, end(f)
}

// deleteMessageBatch deletes up to ten messages; each entry succeeds or
// fails on its own.
func (s *Server) deleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput) (*sqs.DeleteMessageBatchOutput, error) {
	ids := make([]string, len(in.Entries))
	for i, e := range in.Entries {
		ids[i] = aws.ToString(e.Id)
	}
	out := &sqs.DeleteMessageBatchOutput{Successful: []types.DeleteMessageBatchResultEntry{}, Failed: []types.BatchResultErrorEntry{}}
	err := s.batch(ctx, "DeleteMessageBatch", in, in.QueueUrl, ids, func(q *queue, i int, now time.Time) error {
		return s.deleteMessage(q, in.Entries[i].ReceiptHandle, now)
	}, func(i int) {
		out.Successful = append(out.Successful, types.DeleteMessageBatchResultEntry{Id: in.Entries[i].Id})
	}, func(f types.BatchResultErrorEntry) { out.Failed = append(out.Failed, f) })
	return out, err
}

// changeMessageVisibilityBatch changes the visibility of up to ten messages;
// each entry succeeds or fails on its own.
func (s *Server) changeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	ids := make([]string, len(in.Entries))
	for i, e := range in.Entries {
		ids[i] = aws.ToString(e.Id)
	}
	out := &sqs.ChangeMessageVisibilityBatchOutput{Successful: []types.ChangeMessageVisibilityBatchResultEntry{}, Failed: []types.BatchResultErrorEntry{}}
	err := s.batch(ctx, "ChangeMessageVisibilityBatch", in, in.QueueUrl, ids, func(q *queue, i int, now time.Time) error {
		return s.changeVisibility(q, in.Entries[i].ReceiptHandle, in.Entries[i].VisibilityTimeout, now)
	}, func(i int) {
		out.Successful = append(out.Successful, types.ChangeMessageVisibilityBatchResultEntry{Id: in.Entries[i].Id})
	}, func(f types.BatchResultErrorEntry) { out.Failed = append(out.Failed, f) })
	return out, err
}

// batch runs a receipt-handle batch operation: request-level checks, then
// apply per entry, reporting each as ok or failed. A request-level error
// comes back alone; the error of a lost acknowledgement comes back after
// every entry was applied.
func (s *Server) batch(ctx context.Context, op string, in any, queueURL *string, ids []string, apply func(*queue, int, time.Time) error, ok func(int), failed func(types.BatchResultErrorEntry)) error {
	f, err := s.begin(ctx, op, queueNameOf(queueURL), in)
	if err != nil {
		return err
	}
	if err := sqsrule.CheckBatchIDs(ids); err != nil {
		return fromViolation(err)
	}
	now := s.lock()
	defer s.mu.Unlock()
	q, err := s.lookup(queueURL)
	if err != nil {
		return err
	}
	q.tick(now)
	for i, id := range ids {
		if f.entryFails(i, id) {
			failed(types.BatchResultErrorEntry{Id: aws.String(id), Code: aws.String(f.entryCode()), Message: aws.String("sqsfake: injected entry failure"), SenderFault: f.fault.Entries.SenderFault})
			continue
		}
		if err := apply(q, i, now); err != nil {
			failed(batchEntryError(id, err))
			continue
		}
		ok(i)
	}
	return end(f)
}
