package sqsfake

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"time"

	"github.com/sqskit/sqskit/internal/sqsrule"
)

type redrivePolicy struct {
	DeadLetterTargetArn string
	MaxReceiveCount     int
}

// parseRedrive validates a RedrivePolicy: a JSON object naming an existing
// dead-letter queue of the same type that allows c's queue as a source, and
// a maxReceiveCount of 1 to 1000 (a number or a numeric string, as SQS
// accepts both). "" removes redrive.
func parseRedrive(value string, c attrContext) (*redrivePolicy, error) {
	if value == "" {
		return nil, nil
	}
	invalid := func(reason string) error {
		return errInvalidAttributeValue("Value %s for parameter RedrivePolicy is invalid. Reason: %s", value, reason)
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(value), &raw); err != nil {
		return nil, invalid("Invalid JSON: " + err.Error() + ".")
	}
	arn, _ := raw["deadLetterTargetArn"].(string)
	if arn == "" {
		return nil, invalid("Redrive policy does not contain mandatory attribute: deadLetterTargetArn.")
	}
	p := &redrivePolicy{DeadLetterTargetArn: arn}
	switch v := raw["maxReceiveCount"].(type) {
	case float64:
		if float64(int(v)) == v {
			p.MaxReceiveCount = int(v)
		}
	case string:
		p.MaxReceiveCount, _ = strconv.Atoi(v)
	}
	if p.MaxReceiveCount < sqsrule.MinMaxReceiveCount || p.MaxReceiveCount > sqsrule.MaxMaxReceiveCount {
		return nil, invalid("Invalid value for maxReceiveCount: must be an integer from 1 to 1000.")
	}
	if arn == c.arn {
		return nil, invalid("A queue cannot be its own dead-letter queue.")
	}
	dlq, ok := c.lookupArn(arn)
	if !ok {
		return nil, invalid("Dead letter target does not exist.")
	}
	if dlq.fifo != c.fifo {
		return nil, invalid("Dead-letter target must be of the same type (FIFO or standard) as the source queue.")
	}
	if !dlq.attrs.allow.permits(c.arn) {
		return nil, invalid("Queue " + c.arn + " is not allowed to use " + arn + " as a dead-letter queue: its RedriveAllowPolicy denies it.")
	}
	return p, nil
}

// redriveAllowPolicy says which source queues may name a queue as their
// dead-letter queue. A nil policy allows all.
type redriveAllowPolicy struct {
	permission string // allowAll, denyAll or byQueue
	sources    []string
	raw        string
}

func (p *redriveAllowPolicy) permits(sourceArn string) bool {
	if p == nil {
		return true
	}
	switch p.permission {
	case "denyAll":
		return false
	case "byQueue":
		return slices.Contains(p.sources, sourceArn)
	}
	return true
}

// parseRedriveAllow validates a RedriveAllowPolicy: redrivePermission
// allowAll, denyAll or byQueue, and sourceQueueArns (1 to 10) only with
// byQueue. "" restores the default, allowAll.
func parseRedriveAllow(value string) (*redriveAllowPolicy, error) {
	if value == "" {
		return nil, nil
	}
	invalid := func(reason string) error {
		return errInvalidAttributeValue("Value %s for parameter RedriveAllowPolicy is invalid. Reason: %s", value, reason)
	}
	var raw struct {
		Permission *string   `json:"redrivePermission"`
		Sources    *[]string `json:"sourceQueueArns"`
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(value)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return nil, invalid("Invalid JSON: " + err.Error() + ".")
	}
	if raw.Permission == nil {
		return nil, invalid("Redrive allow policy does not contain mandatory attribute: redrivePermission.")
	}
	p := &redriveAllowPolicy{permission: *raw.Permission, raw: value}
	switch p.permission {
	case "allowAll", "denyAll":
		if raw.Sources != nil {
			return nil, invalid("sourceQueueArns can be given only when redrivePermission is byQueue.")
		}
	case "byQueue":
		if raw.Sources == nil || len(*raw.Sources) == 0 || len(*raw.Sources) > 10 {
			return nil, invalid("byQueue needs 1 to 10 sourceQueueArns.")
		}
		for _, arn := range *raw.Sources {
			if !isQueueArn(arn) {
				return nil, invalid("sourceQueueArns holds " + strconv.Quote(arn) + ", which is not an SQS queue ARN.")
			}
		}
		p.sources = *raw.Sources
	default:
		return nil, invalid("redrivePermission must be allowAll, denyAll or byQueue.")
	}
	return p, nil
}

// checkPolicy validates a queue Policy as far as sqsfake models policies:
// stored, not enforced, but it must be a JSON object.
func checkPolicy(value string) error {
	if value == "" {
		return nil
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(value), &doc); err != nil {
		return errInvalidAttributeValue("Invalid value for the parameter Policy. Reason: the policy is not a JSON object: %v.", err)
	}
	return nil
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
	moved := newMessage()
	*moved = message{
		id: m.id, body: m.body, attrs: m.attrs, systemAttrs: m.systemAttrs,
		groupID: m.groupID, sourceArn: q.arn,
		sentAt: m.sentAt, enqueuedAt: m.enqueuedAt, visibleAt: now,
		firstRecv: m.firstRecv, receiveCount: m.receiveCount,
		md5Body: m.md5Body, md5Attrs: m.md5Attrs,
		readyPos: -1, agePos: -1,
	}
	if dlq.fifo {
		moved.dedupID = m.id
		moved.enqueuedAt = now // a FIFO DLQ restarts the retention period
	}
	q.msgs.remove(m)
	dlq.store(moved, s.nextSeq(), now)
	s.notify() // long polls on the DLQ
	return true
}
