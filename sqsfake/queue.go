package sqsfake

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/internal/sqsrule"
)

// queue is one queue's state. Every field is guarded by Server.mu.
type queue struct {
	id       uint64 // this incarnation of the name; unique for the Server's life
	name     string
	arn      string
	fifo     bool
	created  time.Time
	modified time.Time
	attrs    queueAttrs
	tags     map[string]string

	msgs    *messages
	fifoSeq uint64 // last FIFO SequenceNumber

	dedup      map[string]dedupEntry // FIFO: dedup key → original send
	dedupOrder []expiring
	attempts   map[string]*attempt // FIFO: ReceiveRequestAttemptId → result
	attemptOrd []expiring
	lastPurge  time.Time // zero if never purged

	quota map[bucketKey]*bucket // Options.Quota's buckets; nil until used
}

// expiring names a map entry and when it expires. Entries are appended in
// time order with one fixed window, so the oldest is always first.
type expiring struct {
	key string
	at  time.Time
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

func newQueue(id uint64, name, arn string, fifo bool, now time.Time) *queue {
	return &queue{
		id: id, name: name, arn: arn, fifo: fifo, created: now, modified: now,
		attrs: defaultAttrs(fifo), tags: map[string]string{}, msgs: newMessages(fifo),
		dedup: map[string]dedupEntry{}, attempts: map[string]*attempt{},
	}
}

// tick brings the queue to now: due messages become visible, old messages,
// dedup ids and receive attempts expire. Each step touches only what is due.
func (q *queue) tick(now time.Time) {
	q.msgs.tick(now)
	q.msgs.expire(now, time.Duration(q.attrs.retention)*time.Second)
	for len(q.dedupOrder) > 0 && !q.dedupOrder[0].at.After(now) {
		e := q.dedupOrder[0]
		q.dedupOrder = q.dedupOrder[1:]
		if d, ok := q.dedup[e.key]; ok && d.expires.Equal(e.at) {
			delete(q.dedup, e.key)
		}
	}
	for len(q.attemptOrd) > 0 && !q.attemptOrd[0].at.After(now) {
		e := q.attemptOrd[0]
		q.attemptOrd = q.attemptOrd[1:]
		if a, ok := q.attempts[e.key]; ok && a.expires.Equal(e.at) {
			delete(q.attempts, e.key)
		}
	}
}

// store adds a message at the tail of q, giving it the server-wide sequence
// seq. Callers hold Server.mu.
func (q *queue) store(m *message, seq uint64, now time.Time) {
	m.seq = seq
	if q.fifo {
		// SequenceNumber: 20 digits, growing per queue, like the service's.
		q.fifoSeq++
		m.seqNumber = fmt.Sprintf("%020d", uint64(10_000_000_000_000_000_000)+q.fifoSeq)
	}
	q.msgs.add(m, now)
}

// purge drops every message and receive attempt.
func (q *queue) purge() {
	q.msgs = newMessages(q.fifo)
	q.attempts = map[string]*attempt{}
	q.attemptOrd = nil
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
	allow           *redriveAllowPolicy
	contentDedup    bool
	dedupScope      string // queue or messageGroup
	throughputLimit string // perQueue or perMessageGroupId
	passthrough     map[string]string
}

func defaultAttrs(fifo bool) queueAttrs {
	a := queueAttrs{visibility: 30, retention: 345600, maxSize: sqsrule.MaxMessageBytes, passthrough: map[string]string{}}
	if fifo {
		a.dedupScope = "queue"
		a.throughputLimit = "perQueue"
	}
	return a
}

// attrContext is what validating attributes needs from the Server.
type attrContext struct {
	arn       string // the ARN of the queue being created or changed
	fifo      bool
	creating  bool // inside CreateQueue, where FifoQueue may be given
	lookupArn func(string) (*queue, bool)
}

// apply validates and sets attributes.
func (a *queueAttrs) apply(in map[string]string, c attrContext) error {
	for _, name := range slices.Sorted(maps.Keys(in)) { // deterministic first error
		value := in[name]
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
			a.redrive, err = parseRedrive(value, c)
		case "RedriveAllowPolicy":
			a.allow, err = parseRedriveAllow(value)
		case "FifoQueue":
			// Only a FIFO queue knows the attribute, and only at creation:
			// SQS answers FifoQueue=false on a standard queue as unknown.
			if !c.creating || !c.fifo {
				return errInvalidAttributeName(name)
			}
			if b, perr := strconv.ParseBool(value); perr != nil || !b {
				return errInvalidAttributeValue("Invalid value for the parameter FifoQueue. Reason: %q; a queue whose name ends in .fifo is created with FifoQueue=true.", value)
			}
		case "ContentBasedDeduplication":
			if !c.fifo {
				return errInvalidAttributeName(name)
			}
			a.contentDedup, err = boolAttr(name, value)
		case "DeduplicationScope":
			if !c.fifo {
				return errInvalidAttributeName(name)
			}
			if value != "queue" && value != "messageGroup" {
				return errInvalidAttributeValue("Invalid value for the parameter DeduplicationScope. Reason: %q is not one of messageGroup or queue.", value)
			}
			a.dedupScope = value
		case "FifoThroughputLimit":
			if !c.fifo {
				return errInvalidAttributeName(name)
			}
			if value != "perQueue" && value != "perMessageGroupId" {
				return errInvalidAttributeValue("Invalid value for the parameter FifoThroughputLimit. Reason: %q is not one of perQueue or perMessageGroupId.", value)
			}
			a.throughputLimit = value
		case "Policy":
			err = checkPolicy(value)
		case "KmsDataKeyReusePeriodSeconds":
			_, err = intAttr(name, value, 60, 86400)
		case "SqsManagedSseEnabled":
			_, err = boolAttr(name, value)
		case "KmsMasterKeyId":
		default:
			return errInvalidAttributeName(name)
		}
		if err != nil {
			return err
		}
		if isPassthrough(name) {
			if name == "Policy" && value == "" {
				delete(a.passthrough, name) // an empty Policy removes it
				continue
			}
			a.passthrough[name] = value
		}
	}
	if c.fifo && a.throughputLimit == "perMessageGroupId" && a.dedupScope != "messageGroup" {
		return errInvalidAttributeValue("Invalid value for the parameter FifoThroughputLimit. Reason: perMessageGroupId requires DeduplicationScope messageGroup.")
	}
	return nil
}

// isPassthrough reports attributes that are validated and stored but not
// modeled.
func isPassthrough(name string) bool {
	switch name {
	case "Policy", "KmsMasterKeyId", "KmsDataKeyReusePeriodSeconds", "SqsManagedSseEnabled":
		return true
	}
	return false
}

func intAttr(name, value string, lo, hi int) (int, error) {
	n, err := strconv.Atoi(value)
	if err != nil || n < lo || n > hi {
		return 0, errInvalidAttributeValue("Invalid value for the parameter %s. Reason: %q must be from %d to %d.", name, value, lo, hi)
	}
	return n, nil
}

func boolAttr(name, value string) (bool, error) {
	switch value {
	case "true", "True", "TRUE":
		return true, nil
	case "false", "False", "FALSE":
		return false, nil
	}
	return false, errInvalidAttributeValue("Invalid value for the parameter %s. Reason: %q must be true or false.", name, value)
}

// equalAttrs reports whether creating a queue with in would leave q's
// attributes unchanged: CreateQueue on an existing name succeeds only then.
func (q *queue) equalAttrs(in map[string]string) bool {
	current := q.settableAttributes()
	for k, v := range in {
		switch k {
		case "FifoQueue":
			continue
		case "RedrivePolicy", "RedriveAllowPolicy", "Policy":
			// JSON documents: the same document in other spacing, member
			// order or number form (maxReceiveCount "5" or 5) is equal.
			if !sameJSON(current[k], v) {
				return false
			}
			continue
		}
		if current[k] != v {
			return false
		}
	}
	return true
}

// sameJSON reports whether two JSON documents hold the same values, numbers
// compared with numeric strings as SQS reads them; "" equals only "".
func sameJSON(a, b string) bool {
	if a == b {
		return true
	}
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return reflect.DeepEqual(normalizeJSON(x), normalizeJSON(y))
}

// normalizeJSON turns numeric strings into numbers, so {"maxReceiveCount":"5"}
// and {"maxReceiveCount":5} compare equal.
func normalizeJSON(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = normalizeJSON(e)
		}
	case []any:
		for i, e := range v {
			v[i] = normalizeJSON(e)
		}
	case string:
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			return f
		}
	}
	return v
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
	if a.allow != nil {
		out["RedriveAllowPolicy"] = a.allow.raw
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
func (q *queue) attributes() map[string]string {
	out := q.settableAttributes()
	out["ApproximateNumberOfMessages"] = strconv.Itoa(q.msgs.visible)
	out["ApproximateNumberOfMessagesNotVisible"] = strconv.Itoa(q.msgs.inFlight)
	out["ApproximateNumberOfMessagesDelayed"] = strconv.Itoa(q.msgs.delayed)
	out["CreatedTimestamp"] = strconv.FormatInt(q.created.Unix(), 10)
	out["LastModifiedTimestamp"] = strconv.FormatInt(q.modified.Unix(), 10)
	out["QueueArn"] = q.arn
	return out
}

// isQueueAttributeName reports names GetQueueAttributes accepts.
func isQueueAttributeName(name string) bool {
	return slices.Contains(types.QueueAttributeName("").Values(), types.QueueAttributeName(name))
}
