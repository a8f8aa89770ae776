package parking

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/fifo"
	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/internal/sqsrule"
)

// Form is how much of a message an escalation carries. A replay is always
// sent whole; an escalation SQS would refuse whole is tried again with less,
// so it reaches the operator queue in a form SQS accepts.
type Form int

const (
	FormWhole             Form = iota // body, attributes, counter, metadata, trace header
	FormAttributesAside               // the attributes moved into the metadata
	FormAttributesLeftOut             // body and metadata only; the detail names what is left out
	FormBodyOnly                      // the body alone: the reason is only in logs and hooks
)

// EscalationGroup is the group of escalations on a FIFO operator queue when
// the message has no valid group of its own.
const EscalationGroup = "sqskit-escalations"

// Outgoing is a received message to be sent on in the replayer's format.
type Outgoing struct {
	// Message is the message as received: its MessageId (which SQS
	// assigned, the seed of the deduplication id), body, attributes and
	// system attributes (group id, AWSTraceHeader).
	Message *types.Message
	// Target is the queue it goes to: FIFO by the .fifo suffix.
	Target string
	// Escalation: parked on the operator queue, not replayed.
	Escalation bool
	// CounterAttribute names the counter; Count is the value it carries out.
	CounterAttribute string
	Count            int
	// Attempt seeds the deduplication id with the message id: the same
	// message and attempt always give the same id.
	Attempt int
	// DelaySeconds is the delay on a standard target, 0 to 900.
	DelaySeconds int32
	// Metadata is the provenance it carries (SentDelay is set from
	// DelaySeconds).
	Metadata Metadata
	// MaxMessageBytes is the target's size limit.
	MaxMessageBytes int
}

// Build returns the message to send in form f, checked against SQS's
// rules: on error, reason says why SQS would refuse it.
func (o *Outgoing) Build(f Form) (fifo.Message, Reason, error) {
	m := o.Message
	body := aws.ToString(m.Body)
	user := UserAttributes(m.MessageAttributes, o.CounterAttribute)
	md := o.Metadata
	md.SentDelay = time.Duration(o.DelaySeconds) * time.Second
	var attrs map[string]types.MessageAttributeValue
	var err error
	switch f {
	case FormWhole:
		attrs, err = Pack(user, o.CounterAttribute, o.Count, md)
	case FormAttributesAside:
		for name, v := range user {
			md.Moved = MergeMoved(md.Moved, map[string]handler.AttributeValue{name: MoveAttribute(v)})
		}
		attrs, err = Pack(nil, o.CounterAttribute, o.Count, md)
	case FormAttributesLeftOut:
		names := slices.Sorted(maps.Keys(user))
		names = append(names, slices.Sorted(maps.Keys(md.Moved))...)
		md.Moved = nil
		md.Detail += "; attributes left out: " + strings.Join(names, ", ")
		attrs, err = Pack(nil, o.CounterAttribute, o.Count, md)
	}
	if err != nil {
		return fifo.Message{}, Unsendable, fmt.Errorf("metadata: %w", err)
	}
	if err := sqsrule.CheckBody(body); err != nil {
		return fifo.Message{}, Unsendable, err
	}
	if err := sqsrule.CheckAttributes(attrs); err != nil {
		return fifo.Message{}, Unsendable, err
	}
	if size := sqsrule.MessageSize(body, attrs); size > o.MaxMessageBytes {
		return fifo.Message{}, TooLarge, fmt.Errorf("%d bytes with the replay metadata exceed %d", size, o.MaxMessageBytes)
	}
	out := fifo.Message{Body: body, Attributes: attrs}
	if f < FormAttributesLeftOut {
		out.TraceHeader = TraceHeader(m.Attributes)
	}
	group := m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
	if !sqsrule.IsFIFO(o.Target) {
		if group != "" && sqsrule.CheckGroupID(group) == nil {
			out.GroupID = group // a fair queue's tenant
		}
		out.DelaySeconds = o.DelaySeconds
		return out, "", nil
	}
	kind := "replay"
	if o.Escalation {
		kind = "escalate"
		if sqsrule.CheckGroupID(group) != nil {
			group = EscalationGroup
		}
	}
	out.GroupID = group
	out.DeduplicationID = DedupID(kind, aws.ToString(m.MessageId), o.Attempt)
	return out, "", nil
}

// DedupID fixes a FIFO deduplication id from what SQS vouches for: the
// received message's own MessageId and the attempt. A crash between send
// and delete sends the same id again, which SQS drops within its 5-minute
// window; two messages that claim the same history in their attributes
// still get two ids.
func DedupID(kind, messageID string, attempt int) string {
	sum := sha256.Sum256([]byte(kind + "\x00" + messageID + "\x00" + strconv.Itoa(attempt)))
	return hex.EncodeToString(sum[:])
}

// TraceHeader returns the AWSTraceHeader among system attributes when it
// looks like one SQS accepts (printable ASCII, at most 1 KiB), else "".
func TraceHeader(system map[string]string) string {
	h := system[string(types.MessageSystemAttributeNameAWSTraceHeader)]
	if len(h) > 1024 {
		return ""
	}
	for i := 0; i < len(h); i++ {
		if h[i] < 0x20 || h[i] > 0x7e {
			return ""
		}
	}
	return h
}

// HoldSeconds is a hold of d as SQS takes it: whole seconds, rounded up so
// a message is never visible before d has passed, from 0 to 12 h.
func HoldSeconds(d time.Duration) int32 {
	return sqsrule.Seconds(min(d, sqsrule.MaxVisibility))
}
