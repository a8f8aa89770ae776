package sqsfake

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/internal/sqsrule"
)

// sendRequest is one message to send, from SendMessage or a batch entry.
type sendRequest struct {
	body        *string
	delay       int32
	attrs       map[string]types.MessageAttributeValue
	systemAttrs map[string]types.MessageSystemAttributeValue
	groupID     *string
	dedupID     *string
}

type sendResult struct {
	id, seqNumber, md5Body, md5Attrs string
}

// SendMessage sends one message.
func (c *Client) SendMessage(ctx context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	const op = "SendMessage"
	if in == nil {
		return nil, opError(op, errMissingParameter("QueueUrl"))
	}
	fault, err := c.s.begin(ctx, op, in.QueueUrl)
	if err != nil {
		return nil, err
	}
	c.s.mu.Lock()
	q, err := c.s.lookup(in.QueueUrl)
	var res sendResult
	if err == nil {
		res, err = c.s.send(q, sendRequest{in.MessageBody, in.DelaySeconds, in.MessageAttributes, in.MessageSystemAttributes, in.MessageGroupId, in.MessageDeduplicationId})
	}
	c.s.mu.Unlock()
	if err != nil {
		return nil, opError(op, err)
	}
	if fault != nil && fault.fault.AfterApply {
		return nil, opError(op, fault.err())
	}
	out := &sqs.SendMessageOutput{MessageId: aws.String(res.id), MD5OfMessageBody: aws.String(res.md5Body)}
	if res.md5Attrs != "" {
		out.MD5OfMessageAttributes = aws.String(res.md5Attrs)
	}
	if res.seqNumber != "" {
		out.SequenceNumber = aws.String(res.seqNumber)
	}
	return out, nil
}

// SendMessageBatch sends up to ten messages. Request-level problems fail the
// call; problems of one entry are reported in Failed[] with SenderFault true.
func (c *Client) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	const op = "SendMessageBatch"
	if in == nil {
		return nil, opError(op, errMissingParameter("QueueUrl"))
	}
	fault, err := c.s.begin(ctx, op, in.QueueUrl)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(in.Entries))
	total := 0
	for i, e := range in.Entries {
		ids[i] = aws.ToString(e.Id)
		total += sqsrule.MessageSize(aws.ToString(e.MessageBody), e.MessageAttributes)
	}
	if err := sqsrule.CheckBatchIDs(ids); err != nil {
		return nil, opError(op, fromViolation(err))
	}
	if total > sqsrule.MaxMessageBytes {
		return nil, opError(op, fromViolation(&sqsrule.Violation{Code: sqsrule.CodeBatchRequestTooLong, Reason: "batch requests cannot be longer than " + strconv.Itoa(sqsrule.MaxMessageBytes) + " bytes"}))
	}
	out := &sqs.SendMessageBatchOutput{}
	c.s.mu.Lock()
	q, err := c.s.lookup(in.QueueUrl)
	if err != nil {
		c.s.mu.Unlock()
		return nil, opError(op, err)
	}
	for i, e := range in.Entries {
		if fault.entryFails(i, ids[i]) {
			out.Failed = append(out.Failed, types.BatchResultErrorEntry{Id: e.Id, Code: aws.String(fault.entryCode()), Message: aws.String("sqsfake: injected entry failure"), SenderFault: fault.fault.Entries.SenderFault})
			continue
		}
		res, err := c.s.send(q, sendRequest{e.MessageBody, e.DelaySeconds, e.MessageAttributes, e.MessageSystemAttributes, e.MessageGroupId, e.MessageDeduplicationId})
		if err != nil {
			out.Failed = append(out.Failed, batchEntryError(ids[i], err))
			continue
		}
		ok := types.SendMessageBatchResultEntry{Id: e.Id, MessageId: aws.String(res.id), MD5OfMessageBody: aws.String(res.md5Body)}
		if res.md5Attrs != "" {
			ok.MD5OfMessageAttributes = aws.String(res.md5Attrs)
		}
		if res.seqNumber != "" {
			ok.SequenceNumber = aws.String(res.seqNumber)
		}
		out.Successful = append(out.Successful, ok)
	}
	c.s.mu.Unlock()
	if fault != nil && fault.fault.AfterApply {
		return nil, opError(op, fault.err())
	}
	return out, nil
}

// send validates and stores one message. Callers hold s.mu.
func (s *Server) send(q *queue, r sendRequest) (sendResult, error) {
	if r.body == nil {
		return sendResult{}, errMissingParameter("MessageBody")
	}
	body := *r.body
	if err := sqsrule.CheckBody(body); err != nil {
		return sendResult{}, fromViolation(err)
	}
	if err := sqsrule.CheckAttributes(r.attrs); err != nil {
		return sendResult{}, fromViolation(err)
	}
	if err := sqsrule.CheckSize(body, r.attrs, q.attrs.maxSize); err != nil {
		return sendResult{}, fromViolation(err)
	}
	if err := sqsrule.CheckDelaySeconds(r.delay); err != nil {
		return sendResult{}, fromViolation(err)
	}
	for name, v := range r.systemAttrs {
		if name != "AWSTraceHeader" || aws.ToString(v.DataType) != "String" || aws.ToString(v.StringValue) == "" {
			return sendResult{}, errInvalidParameter("Message system attribute %s is not valid: only AWSTraceHeader of type String is supported.", name)
		}
	}
	now := s.now()
	q.expire(now)
	m := &message{
		body: body, attrs: copyAttrs(r.attrs), systemAttrs: maps.Clone(r.systemAttrs),
		sentAt: now, enqueuedAt: now, md5Body: sqsrule.MD5OfBody(body),
	}
	m.md5Attrs = sqsrule.MD5OfAttributes(m.attrs)
	if r.groupID != nil {
		if err := sqsrule.CheckGroupID(*r.groupID); err != nil {
			return sendResult{}, fromViolation(err)
		}
		m.groupID = *r.groupID
	}
	delay := time.Duration(q.attrs.delay) * time.Second
	if q.fifo {
		if r.delay != 0 {
			return sendResult{}, errInvalidParameter("Value %d for parameter DelaySeconds is invalid. Reason: The request include parameter that is not valid for this queue type.", r.delay)
		}
		if r.groupID == nil {
			return sendResult{}, errMissingParameter("MessageGroupId")
		}
		switch {
		case r.dedupID != nil:
			if err := sqsrule.CheckDedupID(*r.dedupID); err != nil {
				return sendResult{}, fromViolation(err)
			}
			m.dedupID = *r.dedupID
		case q.attrs.contentDedup:
			sum := sha256.Sum256([]byte(body))
			m.dedupID = hex.EncodeToString(sum[:])
		default:
			return sendResult{}, errInvalidParameter("The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly")
		}
		key := m.dedupID
		if q.attrs.dedupScope == "messageGroup" {
			key = m.groupID + "\x00" + key
		}
		if d, dup := q.dedup[key]; dup {
			// Accepted, not enqueued: the caller gets the original's id.
			return sendResult{id: d.messageID, seqNumber: d.seqNumber, md5Body: m.md5Body, md5Attrs: m.md5Attrs}, nil
		}
		m.id = s.newMessageID()
		q.add(m)
		q.dedup[key] = dedupEntry{messageID: m.id, seqNumber: m.seqNumber, expires: now.Add(sqsrule.DedupWindow)}
		q.expiresBy(now.Add(sqsrule.DedupWindow))
	} else {
		if r.dedupID != nil {
			return sendResult{}, errInvalidParameter("The request include parameter MessageDeduplicationId that is not valid for this queue type")
		}
		if r.delay != 0 {
			delay = time.Duration(r.delay) * time.Second
		}
		m.id = s.newMessageID()
		q.add(m)
	}
	m.visibleAt = now.Add(delay)
	s.notify()
	return sendResult{id: m.id, seqNumber: m.seqNumber, md5Body: m.md5Body, md5Attrs: m.md5Attrs}, nil
}
