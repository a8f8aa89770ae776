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
	handleGone                       // the message was deleted, purged or expired
)

// resolve finds the message a receipt handle names. A handle that does not
// parse or belongs to another queue is ReceiptHandleIsInvalid. Callers hold
// s.mu.
func (q *queue) resolve(handle *string) (*message, handleState, error) {
	if handle == nil || *handle == "" {
		return nil, 0, errMissingParameter("ReceiptHandle")
	}
	name, seq, ok := parseReceiptHandle(*handle)
	if !ok || name != q.name {
		return nil, 0, errReceiptHandleInvalid("The input receipt handle %q is not a valid receipt handle.", *handle)
	}
	m, ok := q.bySeq[seq]
	switch {
	case !ok || m.deleted:
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
	q.remove(m)
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
	m.visibleAt = until
	m.touched = true
	s.notify()
	return nil
}

// DeleteMessage deletes a message by receipt handle.
func (c *Client) DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	const op = "DeleteMessage"
	if in == nil {
		return nil, opError(op, errMissingParameter("QueueUrl"))
	}
	fault, err := c.s.begin(ctx, op, in.QueueUrl)
	if err != nil {
		return nil, err
	}
	c.s.mu.Lock()
	q, err := c.s.lookup(in.QueueUrl)
	if err == nil {
		err = c.s.deleteMessage(q, in.ReceiptHandle, c.s.now())
	}
	c.s.mu.Unlock()
	if err != nil {
		return nil, opError(op, err)
	}
	if fault != nil && fault.fault.AfterApply {
		return nil, opError(op, fault.err())
	}
	return &sqs.DeleteMessageOutput{}, nil
}

// ChangeMessageVisibility sets a received message's visibility timeout,
// counted from now.
func (c *Client) ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	const op = "ChangeMessageVisibility"
	if in == nil {
		return nil, opError(op, errMissingParameter("QueueUrl"))
	}
	fault, err := c.s.begin(ctx, op, in.QueueUrl)
	if err != nil {
		return nil, err
	}
	c.s.mu.Lock()
	q, err := c.s.lookup(in.QueueUrl)
	if err == nil {
		err = c.s.changeVisibility(q, in.ReceiptHandle, in.VisibilityTimeout, c.s.now())
	}
	c.s.mu.Unlock()
	if err != nil {
		return nil, opError(op, err)
	}
	if fault != nil && fault.fault.AfterApply {
		return nil, opError(op, fault.err())
	}
	return &sqs.ChangeMessageVisibilityOutput{}, nil
}

// DeleteMessageBatch deletes up to ten messages; each entry succeeds or fails
// on its own.
func (c *Client) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	const op = "DeleteMessageBatch"
	if in == nil {
		return nil, opError(op, errMissingParameter("QueueUrl"))
	}
	ids := make([]string, len(in.Entries))
	for i, e := range in.Entries {
		ids[i] = aws.ToString(e.Id)
	}
	out := &sqs.DeleteMessageBatchOutput{}
	err := c.s.batch(ctx, op, in.QueueUrl, ids, func(q *queue, i int, now time.Time) error {
		return c.s.deleteMessage(q, in.Entries[i].ReceiptHandle, now)
	}, func(i int) {
		out.Successful = append(out.Successful, types.DeleteMessageBatchResultEntry{Id: in.Entries[i].Id})
	}, func(f types.BatchResultErrorEntry) { out.Failed = append(out.Failed, f) })
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ChangeMessageVisibilityBatch changes the visibility of up to ten messages;
// each entry succeeds or fails on its own.
func (c *Client) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	const op = "ChangeMessageVisibilityBatch"
	if in == nil {
		return nil, opError(op, errMissingParameter("QueueUrl"))
	}
	ids := make([]string, len(in.Entries))
	for i, e := range in.Entries {
		ids[i] = aws.ToString(e.Id)
	}
	out := &sqs.ChangeMessageVisibilityBatchOutput{}
	err := c.s.batch(ctx, op, in.QueueUrl, ids, func(q *queue, i int, now time.Time) error {
		return c.s.changeVisibility(q, in.Entries[i].ReceiptHandle, in.Entries[i].VisibilityTimeout, now)
	}, func(i int) {
		out.Successful = append(out.Successful, types.ChangeMessageVisibilityBatchResultEntry{Id: in.Entries[i].Id})
	}, func(f types.BatchResultErrorEntry) { out.Failed = append(out.Failed, f) })
	if err != nil {
		return nil, err
	}
	return out, nil
}

// batch runs a receipt-handle batch operation: request-level checks, then
// apply per entry, reporting each as ok or failed.
func (s *Server) batch(ctx context.Context, op string, queueURL *string, ids []string, apply func(*queue, int, time.Time) error, ok func(int), failed func(types.BatchResultErrorEntry)) error {
	fault, err := s.begin(ctx, op, queueURL)
	if err != nil {
		return err
	}
	if err := sqsrule.CheckBatchIDs(ids); err != nil {
		return opError(op, fromViolation(err))
	}
	s.mu.Lock()
	q, err := s.lookup(queueURL)
	if err != nil {
		s.mu.Unlock()
		return opError(op, err)
	}
	now := s.now()
	for i, id := range ids {
		if fault.entryFails(i, id) {
			failed(types.BatchResultErrorEntry{Id: aws.String(id), Code: aws.String(fault.entryCode()), Message: aws.String("sqsfake: injected entry failure"), SenderFault: fault.fault.Entries.SenderFault})
			continue
		}
		if err := apply(q, i, now); err != nil {
			failed(batchEntryError(id, err))
			continue
		}
		ok(i)
	}
	s.mu.Unlock()
	if fault != nil && fault.fault.AfterApply {
		return opError(op, fault.err())
	}
	return nil
}
