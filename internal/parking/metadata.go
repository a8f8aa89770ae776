// Package parking holds the replayer's metadata format and the way a
// message is built to be sent on from a queue: replayed to its target, or
// escalated (parked) on an operator queue in the first of four forms SQS
// accepts. Package replay and package consumer's Parker share it, so a
// message parked by either reads the same to a human and to the replayer.
package parking

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

	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/internal/sqsrule"
)

// DefaultCounterAttribute is the counter attribute of the AWS sample
// (amazon-sqs-dlq-replay-backoff), so messages replayed by either are
// understood by the other.
const DefaultCounterAttribute = "sqs-dlq-replay-nb"

// MetadataAttribute holds the provenance as JSON (see Metadata).
const MetadataAttribute = "sqskit-replay"

// CounterSanityLimit: a counter above this is forged, whatever the policy.
const CounterSanityLimit = 1_000_000

// Reason says why a message is parked.
type Reason string

// The reasons this package itself finds.
const (
	InvalidCounter  Reason = "invalid-counter"
	InvalidMetadata Reason = "invalid-metadata"
	TooLarge        Reason = "too-large"
	Unsendable      Reason = "unsendable"
)

// Metadata is the content of MetadataAttribute (see replay.Metadata for the
// contract).
type Metadata struct {
	OriginalID   string    `json:"id"`
	FirstFailure time.Time `json:"first"`
	SourceArn    string    `json:"src,omitempty"`
	// From is the URL of the queue the message was parked from.
	From      string                            `json:"from,omitempty"`
	Attempt   int                               `json:"n,omitempty"`
	LastDelay time.Duration                     `json:"prev,omitempty"`
	SentDelay time.Duration                     `json:"sd,omitempty"`
	Reason    Reason                            `json:"reason,omitempty"`
	Detail    string                            `json:"detail,omitempty"`
	Moved     map[string]handler.AttributeValue `json:"-"` // as wireAttribute, under "moved"
}

// MoveAttribute returns v as the metadata keeps a moved attribute.
func MoveAttribute(v types.MessageAttributeValue) handler.AttributeValue {
	a := handler.AttributeValue{DataType: aws.ToString(v.DataType)}
	if a.BaseType() == "Binary" {
		a.BinaryValue = slices.Clone(v.BinaryValue)
	} else {
		a.StringValue = aws.ToString(v.StringValue)
	}
	return a
}

// sdkAttribute returns a moved attribute as the SDK carries it.
func sdkAttribute(a handler.AttributeValue) types.MessageAttributeValue {
	v := types.MessageAttributeValue{DataType: aws.String(a.DataType)}
	if a.BaseType() == "Binary" {
		v.BinaryValue = slices.Clone(a.BinaryValue)
	} else {
		v.StringValue = aws.String(a.StringValue)
	}
	return v
}

// wireAttribute is a moved attribute as the metadata's JSON has carried it
// since the first release: short keys, within SQS's 256 KiB of attributes.
type wireAttribute struct {
	DataType    string `json:"t"`
	StringValue string `json:"s,omitempty"`
	BinaryValue []byte `json:"b,omitempty"`
}

func toWire(moved map[string]handler.AttributeValue) map[string]wireAttribute {
	if moved == nil {
		return nil
	}
	out := make(map[string]wireAttribute, len(moved))
	for name, a := range moved {
		out[name] = wireAttribute(a)
	}
	return out
}

func fromWire(moved map[string]wireAttribute) map[string]handler.AttributeValue {
	if moved == nil {
		return nil
	}
	out := make(map[string]handler.AttributeValue, len(moved))
	for name, a := range moved {
		out[name] = handler.AttributeValue(a)
	}
	return out
}

// metadataJSON is Metadata as JSON carries it.
type metadataJSON struct {
	plainMetadata
	Moved map[string]wireAttribute `json:"moved,omitempty"`
}

type plainMetadata Metadata // Metadata without its JSON methods

// MarshalJSON writes the metadata attribute's JSON.
func (m Metadata) MarshalJSON() ([]byte, error) {
	return json.Marshal(metadataJSON{plainMetadata(m), toWire(m.Moved)})
}

// UnmarshalJSON reads the metadata attribute's JSON.
func (m *Metadata) UnmarshalJSON(b []byte) error {
	var j metadataJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*m = Metadata(j.plainMetadata)
	m.Moved = fromWire(j.Moved)
	return nil
}

// BadMetadata says why a message's metadata cannot be used, and under which
// reason the message is escalated.
type BadMetadata struct {
	Reason Reason
	Detail string
}

// Read parses the metadata attribute field by field. A missing one gives
// the zero value; one the replayer did not write gives a BadMetadata.
func Read(attrs map[string]types.MessageAttributeValue, counterAttribute string) (Metadata, *BadMetadata) {
	v, ok := attrs[MetadataAttribute]
	if !ok {
		return Metadata{}, nil
	}
	invalid := func(format string, args ...any) (Metadata, *BadMetadata) {
		return Metadata{}, &BadMetadata{Reason: InvalidMetadata, Detail: fmt.Sprintf(format, args...)}
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
		case "from":
			err = json.Unmarshal(r, &md.From)
		case "reason":
			err = json.Unmarshal(r, &md.Reason)
		case "detail":
			err = json.Unmarshal(r, &md.Detail)
		case "n":
			var n int64
			if json.Unmarshal(r, &n) != nil || n < 0 || n > CounterSanityLimit {
				return Metadata{}, &BadMetadata{Reason: InvalidCounter,
					Detail: fmt.Sprintf("the count in %s is not a whole number from 0 to %d", MetadataAttribute, CounterSanityLimit)}
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
			var moved map[string]wireAttribute
			err = json.Unmarshal(r, &moved)
			md.Moved = fromWire(moved)
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

// Counter reads the counter attribute: a whole number from 0 to
// CounterSanityLimit, as a Number or String attribute. ok is false when the
// message has none.
func Counter(attrs map[string]types.MessageAttributeValue, counterAttribute string) (n int, ok bool, err error) {
	v, ok := attrs[counterAttribute]
	if !ok {
		return 0, false, nil
	}
	if base := sqsrule.BaseDataType(aws.ToString(v.DataType)); base != "Number" && base != "String" {
		return 0, true, fmt.Errorf("counter %s is not a Number or String attribute", counterAttribute)
	}
	c, err := strconv.ParseInt(strings.TrimSpace(aws.ToString(v.StringValue)), 10, 64)
	switch {
	case err != nil:
		return 0, true, fmt.Errorf("counter %s is not a whole number", counterAttribute)
	case c < 0:
		return 0, true, fmt.Errorf("counter %s is negative", counterAttribute)
	case c > CounterSanityLimit:
		return 0, true, fmt.Errorf("counter %s is beyond any real count", counterAttribute)
	}
	return int(c), true, nil
}

// KeepAside returns the attribute name of attrs as a moved attribute, or nil
// when there is none: the value an escalation keeps for humans when it
// cannot be used.
func KeepAside(attrs map[string]types.MessageAttributeValue, name string) map[string]handler.AttributeValue {
	v, ok := attrs[name]
	if !ok {
		return nil
	}
	return map[string]handler.AttributeValue{name: MoveAttribute(v)}
}

// MergeMoved returns a with b's entries added, a itself when b is empty.
func MergeMoved(a, b map[string]handler.AttributeValue) map[string]handler.AttributeValue {
	if len(b) == 0 {
		return a
	}
	out := maps.Clone(a)
	if out == nil {
		out = map[string]handler.AttributeValue{}
	}
	maps.Copy(out, b)
	return out
}

// Restore returns a message's attributes as its producer sent them: the
// replayer's attributes removed and any attribute it moved aside put back.
func Restore(attrs map[string]types.MessageAttributeValue, counterAttribute string) map[string]types.MessageAttributeValue {
	if counterAttribute == "" {
		counterAttribute = DefaultCounterAttribute
	}
	out := UserAttributes(attrs, counterAttribute)
	md, bad := Read(attrs, counterAttribute)
	if bad != nil {
		out[MetadataAttribute] = attrs[MetadataAttribute] // not the replayer's: the producer's own
		return out
	}
	for name, m := range md.Moved {
		out[name] = sdkAttribute(m)
	}
	return out
}

// UserAttributes copies attributes without the replayer's own, with the
// list fields that received attributes may carry cleared (SQS refuses them
// on send).
func UserAttributes(attrs map[string]types.MessageAttributeValue, counterAttribute string) map[string]types.MessageAttributeValue {
	out := make(map[string]types.MessageAttributeValue, len(attrs))
	for name, v := range attrs {
		if name == counterAttribute || name == MetadataAttribute {
			continue
		}
		out[name] = types.MessageAttributeValue{DataType: v.DataType, StringValue: v.StringValue, BinaryValue: slices.Clone(v.BinaryValue)}
	}
	return out
}

// moveRank orders attributes by how much a consumer that does not call
// Restore would miss them: trace context (W3C) moves after the others, so
// it still sees its trace, and the SQS Extended Client's payload size
// attributes move last of all (in practice never: at most one attribute
// moves), since without them such a consumer would take an S3 pointer for
// the body.
func moveRank(name string) int {
	switch name {
	case "ExtendedPayloadSize", "SQSLargePayloadSize":
		return 2
	case "traceparent", "tracestate", "baggage":
		return 1
	}
	return 0
}

// Pack builds the attributes of an outgoing message: the user's, the
// counter (when there is room) and the metadata, within SQS's ten. With no
// room, user attributes are moved into the metadata, last by name first,
// in moveRank's order, and Restore gives them back. It fails only
// when the metadata cannot be encoded.
func Pack(user map[string]types.MessageAttributeValue, counterAttribute string, attempt int, md Metadata) (map[string]types.MessageAttributeValue, error) {
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
			md.Moved = map[string]handler.AttributeValue{}
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

// moveOrder lists attribute names in the order they are moved aside: by
// moveRank, then last by name first.
func moveOrder(attrs map[string]types.MessageAttributeValue) []string {
	names := slices.Collect(maps.Keys(attrs))
	slices.SortFunc(names, func(a, b string) int {
		if ra, rb := moveRank(a), moveRank(b); ra != rb {
			return ra - rb
		}
		return strings.Compare(b, a)
	})
	return names
}
