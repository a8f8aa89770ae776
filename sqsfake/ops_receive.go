package sqsfake

import (
	"context"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/internal/sqsrule"
)

// receiveMessage returns up to MaxNumberOfMessages messages. With a wait
// time (WaitTimeSeconds, or the queue's ReceiveMessageWaitTimeSeconds when
// absent) it blocks until a message can be received, the wait ends, or ctx is
// done; it wakes when a message is sent, a delay ends, a visibility timeout
// expires or a FIFO group unlocks.
func (s *Server) receiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput) (*sqs.ReceiveMessageOutput, error) {
	f, err := s.begin(ctx, "ReceiveMessage", queueNameOf(in.QueueUrl), in)
	if err != nil {
		return nil, err
	}
	req, err := newReceiveRequest(in, requestOf(ctx).zeros)
	if err != nil {
		return nil, err
	}
	var deadline time.Time
	for {
		now := s.lock()
		q, err := s.lookup(in.QueueUrl)
		if err != nil {
			s.mu.Unlock()
			return nil, err
		}
		if deadline.IsZero() {
			wait := req.wait
			if wait < 0 {
				wait = q.attrs.waitSeconds
			}
			deadline = now.Add(time.Duration(wait) * time.Second)
		}
		msgs, err := s.receive(q, req, now)
		if err != nil {
			s.mu.Unlock()
			return nil, err
		}
		if len(msgs) > 0 || !now.Before(deadline) {
			out := &sqs.ReceiveMessageOutput{}
			if len(msgs) > 0 {
				out.Messages = make([]types.Message, len(msgs))
				for i, m := range msgs {
					out.Messages[i] = m.toSDK(req.wantSystem, req.wantUser)
				}
			}
			s.mu.Unlock()
			return out, end(f)
		}
		// Sleep until something can change: a message becoming visible on
		// this queue, a move task's next move, or the end of the wait.
		until := deadline
		for _, t := range []time.Time{q.msgs.next(), s.nextMoveTime(now)} {
			if !t.IsZero() && t.Before(until) {
				until = t
			}
		}
		wake, timer, done := s.park(now, until)
		s.mu.Unlock()

		select {
		case <-wake:
		case <-timer:
		case <-ctx.Done():
			done()
			return nil, ctx.Err()
		case <-requestOf(ctx).drain:
			done()
			return &sqs.ReceiveMessageOutput{}, end(f) // the server is shutting down
		}
		done()
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
// SDK, so it means the queue's default, unless the request sent it as an
// explicit 0 (zeros), which SQS reads as zero.
func newReceiveRequest(in *sqs.ReceiveMessageInput, zeros explicitZeros) (receiveRequest, error) {
	r := receiveRequest{max: 1, visibility: -1, wait: -1}
	if in.MaxNumberOfMessages != 0 || zeros.maxMessages {
		if in.MaxNumberOfMessages < 1 || in.MaxNumberOfMessages > sqsrule.MaxReceiveMessages {
			return r, errInvalidParameter("Value %d for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10, if provided.", in.MaxNumberOfMessages)
		}
		r.max = int(in.MaxNumberOfMessages)
	}
	if in.VisibilityTimeout != 0 || zeros.visibility {
		if in.VisibilityTimeout < 0 || in.VisibilityTimeout > sqsrule.MaxVisibilitySeconds {
			return r, errInvalidParameter("Value %d for parameter VisibilityTimeout is invalid. Reason: Must be between 0 and 43200, if provided.", in.VisibilityTimeout)
		}
		r.visibility = int(in.VisibilityTimeout)
	}
	if in.WaitTimeSeconds != 0 || zeros.wait {
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

// receive takes up to r.max messages from q at now, in delivery order,
// touching only the messages it returns and those it moves to the
// dead-letter queue on the way. Callers hold s.mu.
func (s *Server) receive(q *queue, r receiveRequest, now time.Time) ([]*message, error) {
	q.tick(now)
	visibility := time.Duration(q.attrs.visibility) * time.Second
	if r.visibility >= 0 {
		visibility = time.Duration(r.visibility) * time.Second
	}
	if q.fifo && r.attemptID != "" {
		if a, ok := q.attempts[r.attemptID]; ok && a.valid() {
			for _, m := range a.msgs {
				q.msgs.setVisibleAt(m, now.Add(visibility), now)
			}
			return a.msgs, nil
		}
	}
	if q.msgs.inFlight >= s.opts.InFlightLimit {
		if q.fifo {
			return nil, nil
		}
		return nil, errOverLimit("Maximum number of in-flight messages reached (%d).", s.opts.InFlightLimit)
	}
	var out []*message
	p := q.msgs.picker()
	for len(out) < r.max && q.msgs.inFlight < s.opts.InFlightLimit {
		m := p.next()
		if m == nil {
			break
		}
		if s.redrive(q, m, now) {
			continue
		}
		m.receiveCount++
		if m.firstRecv.IsZero() {
			m.firstRecv = now
		}
		m.lastRecvAt = now
		q.msgs.deliver(m, now, visibility)
		m.handle = receiptHandle(q, m)
		m.touched = false
		out = append(out, m)
	}
	p.done()
	if q.fifo && r.attemptID != "" && len(out) > 0 {
		a := &attempt{msgs: out, expires: now.Add(sqsrule.AttemptIDWindow)}
		for _, m := range out {
			a.handles = append(a.handles, m.handle)
		}
		q.attempts[r.attemptID] = a
		q.attemptOrd = append(q.attemptOrd, expiring{key: r.attemptID, at: a.expires})
	}
	return out, nil
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
