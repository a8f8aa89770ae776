package replay

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/internal/sqsrule"
)

// DefaultCounterAttribute is the counter attribute of the AWS sample
// (amazon-sqs-dlq-replay-backoff), so messages replayed by either are
// understood by the other.
const DefaultCounterAttribute = "sqs-dlq-replay-nb"

// MetadataAttribute holds the replayer's provenance (original MessageId,
// first failure, source queue, last delay, escalation reason) as JSON, and,
// when the message has no room, the counter and any user attribute moved
// aside to make room.
const MetadataAttribute = "sqskit-replay"

// Metadata is the content of MetadataAttribute.
type Metadata struct {
	// OriginalID is the MessageId the message had when it first failed.
	OriginalID string `json:"id"`
	// FirstFailure is when the replayer first saw it in a dead-letter queue.
	FirstFailure time.Time `json:"first"`
	// SourceArn is the queue it was dead-lettered from, when known.
	SourceArn string `json:"src,omitempty"`
	// Attempt is the counter, kept here when the counter attribute did not
	// fit.
	Attempt int `json:"n,omitempty"`
	// LastDelay is the previous replay's delay, for strategies that grow
	// from it (decorrelated jitter).
	LastDelay time.Duration `json:"prev,omitempty"`
	// SentDelay is the DelaySeconds the message was last sent with: its
	// life on the main queue began that long after its SentTimestamp, and
	// the next delay counts from there.
	SentDelay time.Duration `json:"sd,omitempty"`
	// Reason is set on messages escalated to the operator queue.
	Reason Reason `json:"reason,omitempty"`
	// Detail explains the reason.
	Detail string `json:"detail,omitempty"`
	// Moved holds user attributes moved aside to make room for the
	// replayer's own; Restore puts them back.
	Moved map[string]movedAttribute `json:"moved,omitempty"`
}

type movedAttribute struct {
	DataType string `json:"t"`
	String   string `json:"s,omitempty"`
	Binary   string `json:"b,omitempty"` // base64
}

// readMetadata parses the metadata attribute; a missing or unreadable one
// gives the zero value and false.
func readMetadata(attrs map[string]types.MessageAttributeValue) (Metadata, bool) {
	v, ok := attrs[MetadataAttribute]
	if !ok || v.StringValue == nil {
		return Metadata{}, false
	}
	var md Metadata
	if err := json.Unmarshal([]byte(*v.StringValue), &md); err != nil {
		return Metadata{}, false
	}
	return md, true
}

// Restore returns a message's attributes as its producer sent them: the
// replayer's attributes removed and any attribute it moved aside put back.
// Handlers of replayed messages that care about every attribute call it.
func Restore(attrs map[string]types.MessageAttributeValue, counterAttribute string) map[string]types.MessageAttributeValue {
	if counterAttribute == "" {
		counterAttribute = DefaultCounterAttribute
	}
	out := userAttributes(attrs, counterAttribute)
	if md, ok := readMetadata(attrs); ok {
		for name, m := range md.Moved {
			out[name] = m.value()
		}
	}
	return out
}

func (m movedAttribute) value() types.MessageAttributeValue {
	v := types.MessageAttributeValue{DataType: aws.String(m.DataType)}
	if m.Binary != "" {
		b, _ := base64.StdEncoding.DecodeString(m.Binary)
		v.BinaryValue = b
	} else {
		v.StringValue = aws.String(m.String)
	}
	return v
}

// userAttributes copies attributes without the replayer's own, with the
// list fields that received attributes may carry cleared (SQS refuses them
// on send).
func userAttributes(attrs map[string]types.MessageAttributeValue, counterAttribute string) map[string]types.MessageAttributeValue {
	out := make(map[string]types.MessageAttributeValue, len(attrs))
	for name, v := range attrs {
		if name == counterAttribute || name == MetadataAttribute {
			continue
		}
		out[name] = types.MessageAttributeValue{DataType: v.DataType, StringValue: v.StringValue, BinaryValue: slices.Clone(v.BinaryValue)}
	}
	return out
}

// pack builds the attributes of an outgoing message: the user's, the
// counter (when there is room) and the metadata, within SQS's ten. With no
// room, user attributes are moved into the metadata, last by name first,
// and Restore gives them back. It fails only when the metadata cannot be
// encoded.
func pack(user map[string]types.MessageAttributeValue, counterAttribute string, attempt int, md Metadata) (map[string]types.MessageAttributeValue, error) {
	out := maps.Clone(user)
	if out == nil {
		out = map[string]types.MessageAttributeValue{}
	}
	md.Attempt = 0
	switch free := sqsrule.MaxAttributes - len(out); {
	case free >= 2 && attempt > 0:
		out[counterAttribute] = types.MessageAttributeValue{DataType: aws.String("Number"), StringValue: aws.String(fmt.Sprint(attempt))}
	case free >= 1:
		md.Attempt = attempt
	default:
		md.Attempt = attempt
		names := slices.Sorted(maps.Keys(out))
		for _, name := range names[len(names)-(1-free):] {
			v := out[name]
			if md.Moved == nil {
				md.Moved = map[string]movedAttribute{}
			}
			m := movedAttribute{DataType: aws.ToString(v.DataType), String: aws.ToString(v.StringValue)}
			if v.BinaryValue != nil {
				m.Binary, m.String = base64.StdEncoding.EncodeToString(v.BinaryValue), ""
			}
			md.Moved[name] = m
			delete(out, name)
		}
	}
	b, err := json.Marshal(md)
	if err != nil {
		return nil, err
	}
	out[MetadataAttribute] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(string(b))}
	return out, nil
}
