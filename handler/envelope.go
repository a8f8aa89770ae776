package handler

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
)

// Envelope is what the Envelopes middleware unwrapped from a message: an
// SNS notification (a topic subscribed by the queue without raw message
// delivery) or an EventBridge event (a rule whose target is the queue).
// Read it in a handler with EnvelopeFrom.
//
// Its fields come from the message body, which anyone who can publish to
// the topic or the bus controls: read them, never let them choose a
// destination.
type Envelope struct {
	// Kind is EnvelopeSNS or EnvelopeEventBridge.
	Kind string
	// ID is the SNS MessageId or the EventBridge event id.
	ID string
	// Time is the SNS Timestamp or the EventBridge time, as sent (RFC 3339).
	Time string

	// SNS: the topic's ARN and the Subject, if the publisher gave one.
	TopicARN, Subject string

	// EventBridge: source, detail-type, account, region and resources.
	Source, DetailType, Account, Region string
	Resources                           []string
}

// The kinds of Envelope.
const (
	EnvelopeSNS         = "sns"
	EnvelopeEventBridge = "eventbridge"
)

// ReasonEnvelope is the reason a message with a malformed envelope is
// parked under.
const ReasonEnvelope = "malformed-envelope"

// ErrEnvelope matches the failure of a body that looks like an SNS
// notification or an EventBridge event but is not a valid one: a
// notification without a string Message, a wrong type, an attribute that
// does not decode, an envelope inside an envelope. It is permanent
// (Escalate with ReasonEnvelope).
var ErrEnvelope = errors.New("handler: malformed envelope")

// Limits of what an envelope may carry, from SNS's own: at most 10 message
// attributes, a Subject of at most 100 characters.
const (
	maxSNSAttributes = 10
	maxSNSSubject    = 100
)

// Envelopes returns middleware that unwraps SNS notifications and
// EventBridge events before the handler sees them, so one queue can carry
// raw bodies, SNS fan-out with or without raw message delivery, and
// EventBridge events alike:
//
//   - an SNS notification (a JSON object with "Type" and "TopicArn"; a
//     Type other than Notification is malformed, as no other SNS message
//     reaches a queue): the handler's Message.Body becomes the notification's
//     Message, and its MessageAttributes ({"Type","Value"} pairs: String,
//     Number, Binary in base64, String.Array) become message attributes,
//     as raw message delivery would have set them;
//   - an EventBridge event (a JSON object with "detail-type" and "source";
//     without "detail" it is malformed): the Body becomes the detail, as
//     JSON;
//   - anything else, plain JSON from another producer or an SNS message
//     delivered raw, passes through unchanged.
//
// What was unwrapped is on the handler's ctx (EnvelopeFrom). A body that
// looks like an envelope but is malformed fails with ErrEnvelope, parked
// at once under ReasonEnvelope; so does an envelope inside an envelope
// (route EventBridge to SQS directly, not through SNS). The message parked
// is the one received: the middleware writes a copy of the attributes, not
// the received map. A plain body costs a search for the two keys, and no
// decoding; an envelope, one JSON decoding. Works the same in the Consumer and in the Lambda
// adapter; put it before Typed or a Router in the chain.
func Envelopes() Middleware {
	return func(next Handler) Handler {
		return func(ctx context.Context, m *Message) error {
			env, err := UnwrapEnvelope(m)
			if err != nil {
				return err
			}
			if env != nil {
				ctx = context.WithValue(ctx, envelopeKey{}, env)
			}
			return next(ctx, m)
		}
	}
}

type envelopeKey struct{}

// EnvelopeFrom returns the envelope Envelopes unwrapped from the message
// ctx belongs to, or nil for a plain body.
func EnvelopeFrom(ctx context.Context) *Envelope {
	e, _ := ctx.Value(envelopeKey{}).(*Envelope)
	return e
}

// UnwrapEnvelope unwraps m in place as Envelopes does and returns what it
// unwrapped: nil and no error for a plain body, an error matching
// ErrEnvelope (an Escalate outcome with ReasonEnvelope) for a malformed
// one. It never panics, whatever the body.
func UnwrapEnvelope(m *Message) (*Envelope, error) {
	env, body, attrs, err := unwrap(m.Body)
	if err != nil {
		return nil, Escalate(ReasonEnvelope, fmt.Errorf("%w: %w", ErrEnvelope, err))
	}
	if env == nil {
		return nil, nil
	}
	if inner, _, _, _ := unwrap(body); inner != nil {
		return nil, Escalate(ReasonEnvelope, fmt.Errorf("%w: an %s envelope inside an %s envelope", ErrEnvelope, inner.Kind, env.Kind))
	}
	m.Body = body
	if len(attrs) > 0 {
		merged := make(map[string]AttributeValue, len(m.MessageAttributes)+len(attrs))
		for k, v := range m.MessageAttributes {
			merged[k] = v
		}
		for k, v := range attrs {
			merged[k] = v
		}
		m.MessageAttributes = merged
	}
	return env, nil
}

// probe holds the keys that tell an envelope from a plain body, raw, for
// a body that did not decode as an envelope: it tells a malformed
// envelope from a plain body that merely has a field of the same name.
type probe struct {
	Type       json.RawMessage `json:"Type"`
	TopicArn   json.RawMessage `json:"TopicArn"`
	DetailType json.RawMessage `json:"detail-type"`
	Source     json.RawMessage `json:"source"`
	Detail     json.RawMessage `json:"detail"`
}

// envelopeJSON is both envelopes' fields, decoded in one pass.
//
// An SNS notification as SNS delivers it to an SQS queue without raw
// message delivery is the JSON document of
// https://docs.aws.amazon.com/sns/latest/dg/http-notification-json.html
// (Type, MessageId, TopicArn, Subject, Message, Timestamp, signature
// fields, MessageAttributes of {"Type","Value"}).
//
// An EventBridge event as a rule delivers it to an SQS target has the
// structure of
// https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-events-structure.html
// (version, id, detail-type, source, account, time, region, resources,
// detail).
type envelopeJSON struct {
	Type              *string                 `json:"Type"`
	MessageID         string                  `json:"MessageId"`
	TopicArn          *string                 `json:"TopicArn"`
	Subject           *string                 `json:"Subject"`
	Message           *string                 `json:"Message"`
	Timestamp         string                  `json:"Timestamp"`
	MessageAttributes map[string]snsAttribute `json:"MessageAttributes"`

	ID         string          `json:"id"`
	DetailType *string         `json:"detail-type"`
	Source     *string         `json:"source"`
	Account    string          `json:"account"`
	Time       string          `json:"time"`
	Region     string          `json:"region"`
	Resources  []string        `json:"resources"`
	Detail     json.RawMessage `json:"detail"`
}

type snsAttribute struct {
	Type  string `json:"Type"`
	Value string `json:"Value"`
}

// The keys an envelope must have, as SNS and EventBridge write them: a body
// with neither is plain, and costs no JSON decoding. (encoding/json would
// match keys in any case or \u-escaped; no sender of envelopes writes them
// so, and such a body is taken as plain.)
var (
	keyTopicArn   = []byte(`"TopicArn"`)
	keyDetailType = []byte(`"detail-type"`)
)

// unwrap recognises an envelope in body: nil for a plain body, else the
// envelope, the inner body and the attributes it carried.
func unwrap(body string) (*Envelope, string, map[string]AttributeValue, error) {
	b := bytes.TrimLeft([]byte(body), " \t\r\n")
	if len(b) == 0 || b[0] != '{' || !bytes.Contains(b, keyTopicArn) && !bytes.Contains(b, keyDetailType) {
		return nil, "", nil, nil
	}
	var e envelopeJSON
	if err := json.Unmarshal(b, &e); err != nil {
		var typeErr *json.UnmarshalTypeError
		if !errors.As(err, &typeErr) {
			return nil, "", nil, nil // not JSON: a plain body
		}
		var p probe
		if json.Unmarshal(b, &p) != nil {
			return nil, "", nil, nil
		}
		switch {
		case p.TopicArn != nil && p.Type != nil:
			return nil, "", nil, fmt.Errorf("SNS notification: %w", err)
		case p.DetailType != nil && p.Source != nil:
			return nil, "", nil, fmt.Errorf("EventBridge event: %w", err)
		}
		return nil, "", nil, nil // a plain body with fields of other types
	}
	switch {
	case e.TopicArn != nil && e.Type != nil:
		return unwrapSNS(&e)
	case e.DetailType != nil && e.Source != nil:
		return unwrapEventBridge(&e)
	}
	return nil, "", nil, nil
}

func unwrapSNS(n *envelopeJSON) (*Envelope, string, map[string]AttributeValue, error) {
	switch {
	case *n.Type != "Notification":
		return nil, "", nil, fmt.Errorf("SNS message of type %.40q, not Notification", *n.Type)
	case n.Message == nil:
		return nil, "", nil, errors.New("SNS notification without Message")
	case *n.TopicArn == "":
		return nil, "", nil, errors.New("SNS notification with an empty TopicArn")
	case n.Subject != nil && len(*n.Subject) > maxSNSSubject:
		return nil, "", nil, fmt.Errorf("SNS Subject longer than %d characters", maxSNSSubject)
	case len(n.MessageAttributes) > maxSNSAttributes:
		return nil, "", nil, fmt.Errorf("%d SNS message attributes, more than %d", len(n.MessageAttributes), maxSNSAttributes)
	}
	var attrs map[string]AttributeValue
	if len(n.MessageAttributes) > 0 {
		attrs = make(map[string]AttributeValue, len(n.MessageAttributes))
		for name, a := range n.MessageAttributes {
			v, err := snsAttributeValue(a)
			if err != nil {
				return nil, "", nil, fmt.Errorf("SNS message attribute %.256q: %w", name, err)
			}
			attrs[name] = v
		}
	}
	env := &Envelope{Kind: EnvelopeSNS, ID: n.MessageID, Time: n.Timestamp, TopicARN: *n.TopicArn}
	if n.Subject != nil {
		env.Subject = *n.Subject
	}
	return env, *n.Message, attrs, nil
}

// snsAttributeValue converts an SNS message attribute to the value raw
// message delivery would give: the same data type, Binary decoded from
// base64.
func snsAttributeValue(a snsAttribute) (AttributeValue, error) {
	switch a.Type {
	case "String", "Number", "String.Array":
		return AttributeValue{DataType: a.Type, StringValue: a.Value}, nil
	case "Binary":
		v, err := base64.StdEncoding.DecodeString(a.Value)
		if err != nil {
			return AttributeValue{}, fmt.Errorf("value of type Binary not in base64: %w", err)
		}
		return AttributeValue{DataType: a.Type, BinaryValue: v}, nil
	}
	return AttributeValue{}, fmt.Errorf("unknown type %.40q", a.Type)
}

func unwrapEventBridge(e *envelopeJSON) (*Envelope, string, map[string]AttributeValue, error) {
	switch {
	case *e.DetailType == "" || *e.Source == "":
		return nil, "", nil, errors.New("EventBridge event with an empty detail-type or source")
	case e.Detail == nil:
		return nil, "", nil, errors.New("EventBridge event without detail")
	case bytes.Equal(e.Detail, []byte("null")):
		return nil, "", nil, errors.New("EventBridge event with a null detail")
	}
	return &Envelope{
		Kind: EnvelopeEventBridge, ID: e.ID, Time: e.Time,
		Source: *e.Source, DetailType: *e.DetailType, Account: e.Account, Region: e.Region, Resources: e.Resources,
	}, string(e.Detail), nil, nil
}
