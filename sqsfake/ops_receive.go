package sqsfake

import (
	"context"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqskit/sqskit/internal/sqsrule"
)

// ReceiveMessage returns up to MaxNumberOfMessages messages. With a wait time
// (WaitTimeSeconds, or the queue's ReceiveMessageWaitTimeSeconds when zero) it
// blocks until a message can be received, the wait ends, or ctx is done; it
// wakes when a message is sent, a delay ends or a visibility timeout expires.
func (c *Client) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	const op = "ReceiveMessage"
	if in == nil {
		return nil, opError(op, errMissingParameter("QueueUrl"))
	}
	fault, err := c.s.begin(ctx, op, in.QueueUrl)
	if err != nil {
		return nil, err
	}
	req, err := newReceiveRequest(in)
	if err != nil {
		return nil, opError(op, err)
	}
	var deadline time.Time
	for {
		c.s.mu.Lock()
		q, err := c.s.lookup(in.QueueUrl)
		if err != nil {
			c.s.mu.Unlock()
			return nil, opError(op, err)
		}
		now := c.s.now()
		if deadline.IsZero() {
			wait := req.wait
			if wait < 0 {
				wait = q.attrs.waitSeconds
			}
			deadline = now.Add(time.Duration(wait) * time.Second)
		}
		msgs, next, err := c.s.receive(q, req, now)
		if err != nil {
			c.s.mu.Unlock()
			return nil, opError(op, err)
		}
		if len(msgs) > 0 || !now.Before(deadline) {
			out := &sqs.ReceiveMessageOutput{}
			for _, m := range msgs {
				out.Messages = append(out.Messages, m.toSDK(req.wantSystem, req.wantUser))
			}
			c.s.mu.Unlock()
			if fault != nil && fault.fault.AfterApply {
				return nil, opError(op, fault.err())
			}
			return out, nil
		}
		wake := c.s.wake
		c.s.mu.Unlock()

		until := deadline
		if !next.IsZero() && next.Before(until) {
			until = next
		}
		timer, stop := c.s.opts.Clock.After(until.Sub(now))
		select {
		case <-wake:
		case <-timer:
		case <-ctx.Done():
			stop()
			return nil, opError(op, ctx.Err())
		}
		stop()
	}
}

type receiveRequest struct {
	max        int
	visibility int // seconds; -1 means the queue default
	wait       int // seconds; -1 means the queue default
	attemptID  string
	wantSystem func(string) bool
	wantUser   func(string) bool
}

// newReceiveRequest validates a receive. A zero int32 is "not set" for the
// SDK, so it means the queue's default, as on the wire.
func newReceiveRequest(in *sqs.ReceiveMessageInput) (receiveRequest, error) {
	r := receiveRequest{max: 1, visibility: -1, wait: -1}
	if in.MaxNumberOfMessages != 0 {
		if in.MaxNumberOfMessages < 1 || in.MaxNumberOfMessages > sqsrule.MaxReceiveMessages {
			return r, errInvalidParameter("Value %d for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10, if provided.", in.MaxNumberOfMessages)
		}
		r.max = int(in.MaxNumberOfMessages)
	}
	if in.VisibilityTimeout != 0 {
		if in.VisibilityTimeout < 0 || in.VisibilityTimeout > sqsrule.MaxVisibilitySeconds {
			return r, errInvalidParameter("Value %d for parameter VisibilityTimeout is invalid. Reason: Must be between 0 and 43200, if provided.", in.VisibilityTimeout)
		}
		r.visibility = int(in.VisibilityTimeout)
	}
	if in.WaitTimeSeconds != 0 {
		if in.WaitTimeSeconds < 0 || in.WaitTimeSeconds > sqsrule.MaxWaitSeconds {
			return r, errInvalidParameter("Value %d for parameter WaitTimeSeconds is invalid. Reason: Must be >= 0 and <= 20, if provided.", in.WaitTimeSeconds)
		}
		r.wait = int(in.WaitTimeSeconds)
	}
	if in.ReceiveRequestAttemptId != nil {
		if err := sqsrule.CheckAttemptID(*in.ReceiveRequestAttemptId); err != nil {
			return r, fromViolation(err)
		}
		r.attemptID = *in.ReceiveRequestAttemptId
	}
	system := map[string]bool{}
	//lint:ignore SA1019 callers still send the legacy field and SQS still honours it
	for _, n := range in.AttributeNames {
		system[string(n)] = true
	}
	for _, n := range in.MessageSystemAttributeNames {
		system[string(n)] = true
	}
	r.wantSystem = func(name string) bool { return system["All"] || system[name] }
	user := in.MessageAttributeNames
	r.wantUser = func(name string) bool {
		for _, want := range user {
			switch {
			case want == "All" || want == ".*" || want == name:
				return true
			case strings.HasSuffix(want, ".*") && strings.HasPrefix(name, strings.TrimSuffix(want, "*")):
				return true
			}
		}
		return false
	}
	return r, nil
}

// receive takes up to r.max messages from q at now. It also returns the
// earliest later time at which a message becomes receivable, so a long poll
// knows when to look again. Callers hold s.mu.
func (s *Server) receive(q *queue, r receiveRequest, now time.Time) ([]*message, time.Time, error) {
	q.expire(now)
	visibility := time.Duration(q.attrs.visibility) * time.Second
	if r.visibility >= 0 {
		visibility = time.Duration(r.visibility) * time.Second
	}
	if q.fifo && r.attemptID != "" {
		if a, ok := q.attempts[r.attemptID]; ok && a.valid() {
			for _, m := range a.msgs {
				m.visibleAt = now.Add(visibility)
			}
			return a.msgs, time.Time{}, nil
		}
	}
	if len(q.messages)-q.deleted >= s.opts.InFlightLimit {
		if _, inFlight, _ := q.counts(now); inFlight >= s.opts.InFlightLimit {
			if q.fifo {
				return nil, time.Time{}, nil
			}
			return nil, time.Time{}, errOverLimit("Maximum number of in-flight messages reached (%d).", s.opts.InFlightLimit)
		}
	}

	var out []*message
	var next time.Time
	// FIFO: a group with any message in flight is locked, wherever that
	// message sits in the group; a delayed message also holds back the rest
	// of its group behind it.
	blocked := map[string]bool{}
	if q.fifo {
		for _, m := range q.messages {
			if !m.deleted && m.inFlight(now) {
				blocked[m.groupID] = true
			}
		}
	}
	for i := 0; i < len(q.messages) && len(out) < r.max; i++ {
		m := q.messages[i]
		if m.deleted || (q.fifo && blocked[m.groupID]) {
			continue
		}
		if m.visibleAt.After(now) {
			if next.IsZero() || m.visibleAt.Before(next) {
				next = m.visibleAt
			}
			if q.fifo {
				blocked[m.groupID] = true
			}
			continue
		}
		if s.redrive(q, m, now) {
			continue
		}
		m.receiveCount++
		if m.firstRecv.IsZero() {
			m.firstRecv = now
		}
		m.handle = receiptHandle(q, m)
		m.lastRecvAt = now
		m.visibleAt = now.Add(visibility)
		m.touched = false
		out = append(out, m)
	}
	if q.fifo && r.attemptID != "" && len(out) > 0 {
		a := &attempt{msgs: out, expires: now.Add(sqsrule.AttemptIDWindow)}
		for _, m := range out {
			a.handles = append(a.handles, m.handle)
		}
		q.attempts[r.attemptID] = a
		q.expiresBy(a.expires)
	}
	return out, next, nil
}

// valid reports whether a retry may return the attempt's messages again:
// none was deleted, received again, or had its visibility changed.
func (a *attempt) valid() bool {
	for i, m := range a.msgs {
		if m.deleted || m.touched || m.handle != a.handles[i] {
			return false
		}
	}
	return true
}

// redrive moves m to the dead-letter queue instead of delivering it when it
// was received maxReceiveCount times already. It keeps MessageId, body and
// attributes, sets DeadLetterQueueSourceArn, and on FIFO replaces the
// deduplication id with the MessageId. Callers hold s.mu.
func (s *Server) redrive(q *queue, m *message, now time.Time) bool {
	p := q.attrs.redrive
	if p == nil || m.receiveCount < p.MaxReceiveCount {
		return false
	}
	dlq, ok := s.lookupArn(p.DeadLetterTargetArn)
	if !ok {
		return false // SQS keeps delivering when the target is gone
	}
	moved := &message{
		id: m.id, body: m.body, attrs: m.attrs, systemAttrs: m.systemAttrs,
		groupID: m.groupID, sourceArn: q.arn,
		sentAt: m.sentAt, enqueuedAt: m.enqueuedAt, visibleAt: now,
		firstRecv: m.firstRecv, receiveCount: m.receiveCount,
		md5Body: m.md5Body, md5Attrs: m.md5Attrs,
	}
	if dlq.fifo {
		moved.dedupID = m.id
		moved.enqueuedAt = now // a FIFO DLQ restarts the retention period
	}
	q.remove(m)
	dlq.add(moved)
	s.notify() // long polls on the DLQ
	return true
}
