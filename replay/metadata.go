package replay

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
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
// aside to make room. The name is reserved: a message that carries it with
// content the replayer did not write is escalated as InvalidMetadata.
const MetadataAttribute = "sqskit-replay"

// Metadata is the content of MetadataAttribute. It is informational, not
// trusted: the replayer reads the count (by the sample's contract), the
// previous delay (within MaxBackoff) and the DelaySeconds it sent with
// (within 900 s), and nothing else of it decides where a message goes, with
// which deduplication id, or when.
type Metadata struct {
	// OriginalID is the MessageId the message had when it first failed.
	OriginalID string `json:"id"`
	// FirstFailure is when the replayer first saw it in a dead-letter queue.
	FirstFailure time.Time `json:"first"`
	// SourceArn is the queue it was dead-lettered from, as SQS's
	// DeadLetterQueueSourceArn names it, or "" when SQS set none (the
	// "src" of a metadata attribute received is the sender's to forge,
	// and is not carried on).
	SourceArn string `json:"src,omitempty"`
	// Attempt is the counter, kept here when the counter attribute did not
	// fit.
	Attempt int `json:"n,omitempty"`
	// LastDelay is the previous replay's delay, for strategies that grow
	// from it (decorrelated jitter).
	LastDelay time.Duration `json:"prev,omitempty"`
	// SentDelay is the DelaySeconds the message was last sent with, 0 to
	// 900 s: its life on the main queue began that long after its
	// SentTimestamp.
	SentDelay time.Duration `json:"sd,omitempty"`
	// Reason is set on messages escalated to the operator queue.
	Reason Reason `json:"reason,omitempty"`
	// Detail explains the reason.
	Detail string `json:"detail,omitempty"`
	// Moved holds attributes moved aside: to make room for the replayer's
	// own, or, on an escalation, the ones SQS refused or the replayer did
	// not trust. Restore puts them back.
	Moved map[string]MovedAttribute `json:"moved,omitempty"`
}

// MovedAttribute is a message attribute kept inside the metadata. Build one
// with MoveAttribute; AttributeValue turns it back.
type MovedAttribute struct {
	// DataType is the attribute's data type: String, Number or Binary, with
	// an optional custom suffix.
	DataType string `json:"t"`
	// StringValue holds String and Number values.
	StringValue string `json:"s,omitempty"`
	// BinaryValue holds Binary values (base64 in the JSON).
	BinaryValue []byte `json:"b,omitempty"`
}

// MoveAttribute returns v as a MovedAttribute.
func MoveAttribute(v types.MessageAttributeValue) MovedAttribute {
	a := MovedAttribute{DataType: aws.ToString(v.DataType)}
	if sqsrule.BaseDataType(a.DataType) == "Binary" {
		a.BinaryValue = slices.Clone(v.BinaryValue)
	} else {
		a.StringValue = aws.ToString(v.StringValue)
	}
	return a
}

// AttributeValue returns the attribute as the SDK carries it.
func (a MovedAttribute) AttributeValue() types.MessageAttributeValue {
	v := types.MessageAttributeValue{DataType: aws.String(a.DataType)}
	if sqsrule.BaseDataType(a.DataType) == "Binary" {
		v.BinaryValue = slices.Clone(a.BinaryValue)
	} else {
		v.StringValue = aws.String(a.StringValue)
	}
	return v
}

// badMetadata says why a message's metadata cannot be used, and under which
// reason the message is escalated.
type badMetadata struct {
	reason Reason
	detail string
}

// readMetadata parses the metadata attribute field by field. A missing one
// gives the zero value; one the replayer did not write gives a badMetadata.
func readMetadata(attrs map[string]types.MessageAttributeValue, counterAttribute string) (Metadata, *badMetadata) {
	v, ok := attrs[MetadataAttribute]
	if !ok {
		return Metadata{}, nil
	}
	invalid := func(format string, args ...any) (Metadata, *badMetadata) {
		return Metadata{}, &badMetadata{reason: InvalidMetadata, detail: fmt.Sprintf(format, args...)}
	}
	if sqsrule.BaseDataType(aws.ToString(v.DataType)) != "String" || v.StringValue == nil {
		return invalid("%s is not a String attribute", MetadataAttribute)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(*v.StringValue), &raw); err != nil || raw == nil { // null is no object
		return invalid("%s is not a JSON object", MetadataAttribute)
	}
	var md Metadata
	for _, name := range slices.Sorted(maps.Keys(raw)) { // in order: the same reason on every receive
		r := raw[name]
		var err error
		switch name {
		case "id":
			err = json.Unmarshal(r, &md.OriginalID)
		case "first":
			err = json.Unmarshal(r, &md.FirstFailure)
		case "src":
			err = json.Unmarshal(r, &md.SourceArn)
		case "reason":
			err = json.Unmarshal(r, &md.Reason)
		case "detail":
			err = json.Unmarshal(r, &md.Detail)
		case "n":
			var n int64
			if json.Unmarshal(r, &n) != nil || n < 0 || n > counterSanityLimit {
				return Metadata{}, &badMetadata{reason: InvalidCounter,
					detail: fmt.Sprintf("the count in %s is not a whole number from 0 to %d", MetadataAttribute, counterSanityLimit)}
			}
			md.Attempt = int(n)
		case "prev":
			var d int64
			if json.Unmarshal(r, &d) != nil || d < 0 {
				return invalid("the previous delay in %s is not a duration of 0 or more", MetadataAttribute)
			}
			md.LastDelay = time.Duration(d)
		case "sd":
			var d int64
			if json.Unmarshal(r, &d) != nil || d < 0 || d > sqsrule.MaxDelaySeconds*int64(time.Second) {
				return invalid("the sent delay in %s is not 0 to %d s", MetadataAttribute, sqsrule.MaxDelaySeconds)
			}
			md.SentDelay = time.Duration(d)
		case "moved":
			err = json.Unmarshal(r, &md.Moved)
		}
		if err != nil {
			return invalid("field %q of %s is malformed", name, MetadataAttribute)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(md.Moved)) {
		a := md.Moved[name]
		if sqsrule.CheckAttributeName(name) != nil || sqsrule.BaseDataType(a.DataType) == "" {
			return invalid("%s moves aside an entry that is not a valid attribute", MetadataAttribute)
		}
		if _, clash := attrs[name]; clash && name != MetadataAttribute && name != counterAttribute {
			return invalid("%s moves aside attribute %q, which the message also carries", MetadataAttribute, name)
		}
	}
	return md, nil
}

// keepAside returns the attribute name of attrs as a moved attribute, or nil
// when there is none: the value an escalation keeps for humans when the
// replayer cannot use it.
func keepAside(attrs map[string]types.MessageAttributeValue, name string) map[string]MovedAttribute {
	v, ok := attrs[name]
	if !ok {
		return nil
	}
	return map[string]MovedAttribute{name: MoveAttribute(v)}
}

func mergeMoved(a, b map[string]MovedAttribute) map[string]MovedAttribute {
	if len(b) == 0 {
		return a
	}
	out := maps.Clone(a)
	if out == nil {
		out = map[string]MovedAttribute{}
	}
	maps.Copy(out, b)
	return out
}

// Restore returns a message's attributes as its producer sent them: the
// replayer's attributes removed and any attribute it moved aside put back.
// Handlers of replayed messages that care about every attribute call it.
func Restore(attrs map[string]types.MessageAttributeValue, counterAttribute string) map[string]types.MessageAttributeValue {
	if counterAttribute == "" {
		counterAttribute = DefaultCounterAttribute
	}
	out := userAttributes(attrs, counterAttribute)
	md, bad := readMetadata(attrs, counterAttribute)
	if bad != nil {
		out[MetadataAttribute] = attrs[MetadataAttribute] // not the replayer's: the producer's own
		return out
	}
	for name, m := range md.Moved {
		out[name] = m.AttributeValue()
	}
	return out
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

// traceAttributes carry trace context (W3C); they are the last moved aside,
// so a consumer that does not call Restore still sees its trace.
var traceAttributes = []string{"traceparent", "tracestate", "baggage"}

// pack builds the attributes of an outgoing message: the user's, the
// counter (when there is room) and the metadata, within SQS's ten. With no
// room, user attributes are moved into the metadata, last by name first,
// trace attributes last of all, and Restore gives them back. It fails only
// when the metadata cannot be encoded.
func pack(user map[string]types.MessageAttributeValue, counterAttribute string, attempt int, md Metadata) (map[string]types.MessageAttributeValue, error) {
	out := make(map[string]types.MessageAttributeValue, len(user)+2)
	maps.Copy(out, user)
	md.Attempt = 0
	switch free := sqsrule.MaxAttributes - len(out); {
	case free >= 2 && attempt > 0:
		out[counterAttribute] = types.MessageAttributeValue{DataType: aws.String("Number"), StringValue: aws.String(strconv.Itoa(attempt))}
	case free >= 1:
		md.Attempt = attempt
	default:
		md.Attempt = attempt
		md.Moved = maps.Clone(md.Moved)
		if md.Moved == nil {
			md.Moved = map[string]MovedAttribute{}
		}
		for _, name := range moveOrder(out)[:1-free] {
			md.Moved[name] = MoveAttribute(out[name])
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

// moveOrder lists attribute names in the order they are moved aside: last
// by name first, trace attributes at the end.
func moveOrder(attrs map[string]types.MessageAttributeValue) []string {
	names := slices.Collect(maps.Keys(attrs))
	slices.SortFunc(names, func(a, b string) int {
		ta, tb := slices.Contains(traceAttributes, a), slices.Contains(traceAttributes, b)
		if ta != tb {
			if ta {
				return 1
			}
			return -1
		}
		return strings.Compare(b, a)
	})
	return names
}
