package sqsfake

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/internal/sqsrule"
)

// queue is one queue's state. Every field is guarded by Server.mu.
type queue struct {
	name, url, arn string
	fifo           bool
	created        time.Time
	modified       time.Time
	attrs          queueAttrs
	tags           map[string]string

	messages []*message // in send order; deleted ones are compacted lazily
	deleted  int        // how many entries of messages are deleted
	bySeq    map[uint64]*message
	seq      uint64 // last message sequence on this queue

	dedup     map[string]dedupEntry // FIFO: dedup key → original send
	attempts  map[string]*attempt   // FIFO: ReceiveRequestAttemptId → result
	lastPurge time.Time             // zero if never purged
	// nextExpiry is the earliest time a message, dedup id or attempt can
	// expire; expire does nothing before it. Zero forces a scan.
	nextExpiry time.Time
}

type dedupEntry struct {
	messageID string
	seqNumber string
	expires   time.Time
}

// attempt remembers what a FIFO receive returned, so a retry with the same
// ReceiveRequestAttemptId returns the same messages and receipt handles.
type attempt struct {
	handles []string
	msgs    []*message
	expires time.Time
}

// queueAttrs are the settable attributes. Durations are whole seconds, as SQS
// keeps them.
type queueAttrs struct {
	visibility      int
	delay           int
	retention       int
	maxSize         int
	waitSeconds     int
	redrive         *redrivePolicy
	contentDedup    bool
	dedupScope      string // messageQueue or messageGroup
	throughputLimit string // perQueue or perMessageGroupId
	passthrough     map[string]string
}

type redrivePolicy struct {
	DeadLetterTargetArn string `json:"deadLetterTargetArn"`
	MaxReceiveCount     int    `json:"maxReceiveCount"`
	raw                 string
}

func defaultAttrs(fifo bool) queueAttrs {
	a := queueAttrs{visibility: 30, retention: 345600, maxSize: sqsrule.MaxMessageBytes, passthrough: map[string]string{}}
	if fifo {
		a.dedupScope = "messageQueue"
		a.throughputLimit = "perQueue"
	}
	return a
}

// isPassthrough reports attributes that are accepted and stored but not
// modeled.
func isPassthrough(name string) bool {
	switch name {
	case "Policy", "KmsMasterKeyId", "KmsDataKeyReusePeriodSeconds", "SqsManagedSseEnabled", "RedriveAllowPolicy":
		return true
	}
	return false
}

// apply validates and sets attributes; creating is true inside CreateQueue,
// where FifoQueue may be given.
func (a *queueAttrs) apply(in map[string]string, fifo, creating bool, lookupArn func(string) (*queue, bool)) error {
	for name, value := range in {
		var err error
		switch name {
		case "VisibilityTimeout":
			a.visibility, err = intAttr(name, value, 0, sqsrule.MaxVisibilitySeconds)
		case "DelaySeconds":
			a.delay, err = intAttr(name, value, 0, sqsrule.MaxDelaySeconds)
		case "MessageRetentionPeriod":
			a.retention, err = intAttr(name, value, sqsrule.MinRetentionSeconds, sqsrule.MaxRetentionSeconds)
		case "MaximumMessageSize":
			a.maxSize, err = intAttr(name, value, sqsrule.MinMessageBytesAttr, sqsrule.MaxMessageBytes)
		case "ReceiveMessageWaitTimeSeconds":
			a.waitSeconds, err = intAttr(name, value, 0, sqsrule.MaxWaitSeconds)
		case "RedrivePolicy":
			a.redrive, err = parseRedrive(value, fifo, lookupArn)
		case "FifoQueue":
			if !creating {
				return errInvalidAttributeName(name)
			}
			if b, perr := strconv.ParseBool(value); perr != nil || b != fifo {
				return errInvalidParameter("Invalid value for the parameter FifoQueue: %q; a FIFO queue name must end in .fifo and only a .fifo name may set FifoQueue=true", value)
			}
		case "ContentBasedDeduplication":
			if !fifo {
				return errInvalidAttributeName(name)
			}
			a.contentDedup, err = boolAttr(name, value)
		case "DeduplicationScope":
			if !fifo {
				return errInvalidAttributeName(name)
			}
			if value != "messageQueue" && value != "messageGroup" {
				return errInvalidAttributeValue("Invalid value for the parameter DeduplicationScope: %q (messageQueue or messageGroup)", value)
			}
			a.dedupScope = value
		case "FifoThroughputLimit":
			if !fifo {
				return errInvalidAttributeName(name)
			}
			if value != "perQueue" && value != "perMessageGroupId" {
				return errInvalidAttributeValue("Invalid value for the parameter FifoThroughputLimit: %q (perQueue or perMessageGroupId)", value)
			}
			a.throughputLimit = value
		default:
			if !isPassthrough(name) {
				return errInvalidAttributeName(name)
			}
			a.passthrough[name] = value
		}
		if err != nil {
			return err
		}
	}
	if fifo && a.throughputLimit == "perMessageGroupId" && a.dedupScope != "messageGroup" {
		return errInvalidAttributeValue("FifoThroughputLimit perMessageGroupId requires DeduplicationScope messageGroup")
	}
	return nil
}

func intAttr(name, value string, lo, hi int) (int, error) {
	n, err := strconv.Atoi(value)
	if err != nil || n < lo || n > hi {
		return 0, errInvalidAttributeValue("Invalid value for the parameter %s: %q (must be %d to %d)", name, value, lo, hi)
	}
	return n, nil
}

func boolAttr(name, value string) (bool, error) {
	switch strings.ToLower(value) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, errInvalidAttributeValue("Invalid value for the parameter %s: %q (true or false)", name, value)
}

func parseRedrive(value string, fifo bool, lookupArn func(string) (*queue, bool)) (*redrivePolicy, error) {
	if value == "" {
		return nil, nil // an empty policy removes redrive
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(value), &raw); err != nil {
		return nil, errInvalidAttributeValue("Invalid value for the parameter RedrivePolicy: %v", err)
	}
	p := &redrivePolicy{raw: value}
	arn, _ := raw["deadLetterTargetArn"].(string)
	if arn == "" {
		return nil, errInvalidAttributeValue("Value %s for parameter RedrivePolicy is invalid. Reason: Redrive policy does not contain mandatory attribute: deadLetterTargetArn.", value)
	}
	p.DeadLetterTargetArn = arn
	// SQS accepts maxReceiveCount as a JSON number or a numeric string.
	switch v := raw["maxReceiveCount"].(type) {
	case float64:
		p.MaxReceiveCount = int(v)
		if float64(p.MaxReceiveCount) != v {
			p.MaxReceiveCount = 0
		}
	case string:
		p.MaxReceiveCount, _ = strconv.Atoi(v)
	}
	if p.MaxReceiveCount < sqsrule.MinMaxReceiveCount || p.MaxReceiveCount > sqsrule.MaxMaxReceiveCount {
		return nil, errInvalidAttributeValue("Value %s for parameter RedrivePolicy is invalid. Reason: maxReceiveCount must be %d to %d.", value, sqsrule.MinMaxReceiveCount, sqsrule.MaxMaxReceiveCount)
	}
	dlq, ok := lookupArn(arn)
	if !ok {
		return nil, errInvalidAttributeValue("Value %s for parameter RedrivePolicy is invalid. Reason: Dead letter target does not exist.", value)
	}
	if dlq.fifo != fifo {
		return nil, errInvalidAttributeValue("Value %s for parameter RedrivePolicy is invalid. Reason: Dead-letter target must be of the same type (FIFO or standard) as the source queue.", value)
	}
	return p, nil
}

// equalAttrs reports whether creating a queue with in would leave q's
// attributes unchanged: CreateQueue on an existing name succeeds only then.
func (q *queue) equalAttrs(in map[string]string) bool {
	current := q.settableAttributes()
	for k, v := range in {
		if k == "FifoQueue" {
			continue
		}
		if current[k] != v {
			return false
		}
	}
	return true
}

func (q *queue) settableAttributes() map[string]string {
	a := q.attrs
	out := map[string]string{
		"VisibilityTimeout":             strconv.Itoa(a.visibility),
		"DelaySeconds":                  strconv.Itoa(a.delay),
		"MessageRetentionPeriod":        strconv.Itoa(a.retention),
		"MaximumMessageSize":            strconv.Itoa(a.maxSize),
		"ReceiveMessageWaitTimeSeconds": strconv.Itoa(a.waitSeconds),
		"SqsManagedSseEnabled":          "true",
	}
	if a.redrive != nil {
		out["RedrivePolicy"] = fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":%d}`, a.redrive.DeadLetterTargetArn, a.redrive.MaxReceiveCount)
	}
	if q.fifo {
		out["FifoQueue"] = "true"
		out["ContentBasedDeduplication"] = strconv.FormatBool(a.contentDedup)
		out["DeduplicationScope"] = a.dedupScope
		out["FifoThroughputLimit"] = a.throughputLimit
	}
	maps.Copy(out, a.passthrough)
	return out
}

// attributes returns every attribute GetQueueAttributes can report.
func (q *queue) attributes(now time.Time) map[string]string {
	out := q.settableAttributes()
	visible, inFlight, delayed := q.counts(now)
	out["ApproximateNumberOfMessages"] = strconv.Itoa(visible)
	out["ApproximateNumberOfMessagesNotVisible"] = strconv.Itoa(inFlight)
	out["ApproximateNumberOfMessagesDelayed"] = strconv.Itoa(delayed)
	out["CreatedTimestamp"] = strconv.FormatInt(q.created.Unix(), 10)
	out["LastModifiedTimestamp"] = strconv.FormatInt(q.modified.Unix(), 10)
	out["QueueArn"] = q.arn
	return out
}

// counts returns the visible, in-flight and delayed messages at now.
func (q *queue) counts(now time.Time) (visible, inFlight, delayed int) {
	for _, m := range q.messages {
		switch {
		case m.deleted:
		case m.receiveCount == 0 && m.visibleAt.After(now):
			delayed++
		case m.visibleAt.After(now):
			inFlight++
		default:
			visible++
		}
	}
	return visible, inFlight, delayed
}

// isQueueAttributeName reports names GetQueueAttributes accepts.
func isQueueAttributeName(name string) bool {
	return slices.Contains(types.QueueAttributeName("").Values(), types.QueueAttributeName(name))
}
