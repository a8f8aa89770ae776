package sqsfake

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
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
	delaySet    bool // DelaySeconds was sent, perhaps as an explicit 0
	attrs       map[string]types.MessageAttributeValue
	systemAttrs map[string]types.MessageSystemAttributeValue
	groupID     *string
	dedupID     *string
}

type sendResult struct {
	id, seqNumber, md5Body, md5Attrs, md5System string
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return aws.String(s)
}

// sendMessage sends one message.
func (s *Server) sendMessage(ctx context.Context, in *sqs.SendMessageInput) (*sqs.SendMessageOutput, error) {
	f, err := s.begin(ctx, "SendMessage", queueNameOf(in.QueueUrl), in)
	if err != nil {
		return nil, err
	}
	now := s.lock()
	q, err := s.lookup(in.QueueUrl)
	var res sendResult
	if err == nil {
		res, err = s.send(q, sendRequest{in.MessageBody, in.DelaySeconds, in.DelaySeconds != 0 || requestOf(ctx).zeros.delay, in.MessageAttributes, in.MessageSystemAttributes, in.MessageGroupId, in.MessageDeduplicationId}, now)
	}
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return &sqs.SendMessageOutput{
		MessageId:                    aws.String(res.id),
		MD5OfMessageBody:             aws.String(res.md5Body),
		MD5OfMessageAttributes:       optional(res.md5Attrs),
		MD5OfMessageSystemAttributes: optional(res.md5System),
		SequenceNumber:               optional(res.seqNumber),
	}, end(f)
}

// sendMessageBatch sends up to ten messages. Request-level problems fail the
// call; problems of one entry are reported in Failed[] with SenderFault true.
func (s *Server) sendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput) (*sqs.SendMessageBatchOutput, error) {
	f, err := s.begin(ctx, "SendMessageBatch", queueNameOf(in.QueueUrl), in)
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
		return nil, fromViolation(err)
	}
	if total > sqsrule.MaxMessageBytes {
		return nil, fromViolation(&sqsrule.Violation{Code: sqsrule.CodeBatchRequestTooLong, Reason: "batch requests cannot be longer than " + strconv.Itoa(sqsrule.MaxMessageBytes) + " bytes"})
	}
	out := &sqs.SendMessageBatchOutput{}
	zeros := requestOf(ctx).zeros
	now := s.lock()
	defer s.mu.Unlock()
	q, err := s.lookup(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	if q.fifo {
		// On a FIFO queue an entry without its group or deduplication id
		// fails the whole request, as on SQS, not just the entry.
		for _, e := range in.Entries {
			if e.MessageGroupId == nil {
				return nil, errMissingParameter("MessageGroupId")
			}
			if e.MessageDeduplicationId == nil && !q.attrs.contentDedup {
				return nil, errNoDedupID()
			}
		}
	}
	for i, e := range in.Entries {
		if f.entryFails(i, ids[i]) {
			out.Failed = append(out.Failed, types.BatchResultErrorEntry{Id: e.Id, Code: aws.String(f.entryCode()), Message: aws.String("sqsfake: injected entry failure"), SenderFault: f.fault.Entries.SenderFault})
			continue
		}
		res, err := s.send(q, sendRequest{e.MessageBody, e.DelaySeconds, e.DelaySeconds != 0 || zeros.entryDelayZero(i), e.MessageAttributes, e.MessageSystemAttributes, e.MessageGroupId, e.MessageDeduplicationId}, now)
		if err != nil {
			out.Failed = append(out.Failed, batchEntryError(ids[i], err))
			continue
		}
		out.Successful = append(out.Successful, types.SendMessageBatchResultEntry{
			Id:                           e.Id,
			MessageId:                    aws.String(res.id),
			MD5OfMessageBody:             aws.String(res.md5Body),
			MD5OfMessageAttributes:       optional(res.md5Attrs),
			MD5OfMessageSystemAttributes: optional(res.md5System),
			SequenceNumber:               optional(res.seqNumber),
		})
	}
	return withRequiredLists(out), end(f)
}

// withRequiredLists gives a batch result both of its lists, which the
// service always sends.
func withRequiredLists(out *sqs.SendMessageBatchOutput) *sqs.SendMessageBatchOutput {
	if out.Successful == nil {
		out.Successful = []types.SendMessageBatchResultEntry{}
	}
	if out.Failed == nil {
		out.Failed = []types.BatchResultErrorEntry{}
	}
	return out
}

// send validates and stores one message. Callers hold s.mu.
func (s *Server) send(q *queue, r sendRequest, now time.Time) (sendResult, error) {
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
		if name != "AWSTraceHeader" || aws.ToString(v.DataType) != "String" || aws.ToString(v.StringValue) == "" || v.BinaryValue != nil {
			return sendResult{}, errInvalidParameter("Message system attribute %s is not valid: only AWSTraceHeader of type String is supported.", name)
		}
	}
	q.tick(now)
	m := newMessage()
	m.body, m.attrs, m.systemAttrs = body, r.attrs, r.systemAttrs
	m.sentAt, m.enqueuedAt = now, now
	m.md5Body = sqsrule.MD5OfBody(body)
	m.md5Attrs = sqsrule.MD5OfAttributes(m.attrs)
	md5System := sqsrule.MD5OfSystemAttributes(r.systemAttrs)
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
			return sendResult{}, errNoDedupID()
		}
		key := m.dedupID
		if q.attrs.dedupScope == "messageGroup" {
			key = m.groupID + "\x00" + key
		}
		if d, dup := q.dedup[key]; dup {
			// Accepted, not enqueued: the caller gets the original's id.
			return sendResult{id: d.messageID, seqNumber: d.seqNumber, md5Body: m.md5Body, md5Attrs: m.md5Attrs, md5System: md5System}, nil
		}
		seq := s.nextSeq()
		m.id = messageID(seq)
		m.visibleAt = now.Add(delay)
		q.store(m, seq, now)
		expires := now.Add(sqsrule.DedupWindow)
		q.dedup[key] = dedupEntry{messageID: m.id, seqNumber: m.seqNumber, expires: expires}
		q.dedupOrder = append(q.dedupOrder, expiring{key: key, at: expires})
	} else {
		if r.dedupID != nil {
			return sendResult{}, errInvalidParameter("The request include parameter MessageDeduplicationId that is not valid for this queue type")
		}
		if r.delaySet { // an explicit 0 overrides the queue's delay too
			delay = time.Duration(r.delay) * time.Second
		}
		seq := s.nextSeq()
		m.id = messageID(seq)
		m.visibleAt = now.Add(delay)
		q.store(m, seq, now)
	}
	s.notify()
	return sendResult{id: m.id, seqNumber: m.seqNumber, md5Body: m.md5Body, md5Attrs: m.md5Attrs, md5System: md5System}, nil
}

func errNoDedupID() error {
	return errInvalidParameter("The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly")
}
