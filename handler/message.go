package handler

import (
	"strconv"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

// Message is a received SQS message, the same for the long-poller (package
// consumer) and for Lambda.
//
// It is the handler's: it may read and write it (a middleware that
// normalises attributes, say). The runtime keeps its own copies of what it
// needs — the id it reports and deletes by, the FIFO group, the receive
// count and the receipt handle — and never reads them back from the
// Message, so a write changes nothing but what hooks see.
type Message struct {
	ID string
	// ReceiptHandle is the handle of the receive that delivered the
	// message. When SQS delivers it again while the consumer still holds
	// it (its visibility lapsed), the consumer settles it with the newer
	// handle and does not update this field, which the handler may be
	// reading: leave deletes and visibility changes to the runtime.
	ReceiptHandle string
	Body          string
	// Attributes are the system attributes (SentTimestamp,
	// ApproximateReceiveCount, MessageGroupId, AWSTraceHeader, …).
	Attributes map[string]string
	// MessageAttributes are the sender's attributes.
	MessageAttributes map[string]AttributeValue
}

// AttributeValue is a message attribute as SQS carries it: this package's
// own type, so that a Lambda needs no SQS client types. Package consumer
// converts to and from the SDK's types.MessageAttributeValue.
type AttributeValue struct {
	// DataType is String, Number or Binary, optionally with a custom suffix
	// ("Number.int").
	DataType string
	// StringValue holds String and Number values.
	StringValue string
	// BinaryValue holds Binary values.
	BinaryValue []byte
}

// BaseType returns the data type without its custom suffix: String, Number,
// Binary (or whatever precedes the first dot).
func (v AttributeValue) BaseType() string {
	base, _, _ := strings.Cut(v.DataType, ".")
	return base
}

// GroupID returns the MessageGroupId, or "". On a standard queue a group id
// names a fair-queue tenant and does not order anything.
func (m *Message) GroupID() string { return m.Attributes["MessageGroupId"] }

// ReceiveCount returns ApproximateReceiveCount, or 0 when absent.
func (m *Message) ReceiveCount() int {
	n, _ := strconv.Atoi(m.Attributes["ApproximateReceiveCount"])
	return n
}

// fromRecord turns a Lambda record into a Message. List values, which SQS
// does not support, are dropped.
func fromRecord(r events.SQSMessage) *Message {
	m := &Message{ID: r.MessageId, ReceiptHandle: r.ReceiptHandle, Body: r.Body, Attributes: r.Attributes}
	if len(r.MessageAttributes) > 0 {
		m.MessageAttributes = make(map[string]AttributeValue, len(r.MessageAttributes))
		for name, v := range r.MessageAttributes {
			a := AttributeValue{DataType: v.DataType, BinaryValue: v.BinaryValue}
			if v.StringValue != nil {
				a.StringValue = *v.StringValue
			}
			m.MessageAttributes[name] = a
		}
	}
	return m
}

// isFIFO reports whether a queue URL or ARN names a FIFO queue: by its
// .fifo suffix, never by the presence of group ids (fair queues put group
// ids on standard queues).
func isFIFO(queue string) bool { return strings.HasSuffix(queue, ".fifo") }
