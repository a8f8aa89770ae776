package consumer

import (
	"strconv"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Message is a received SQS message, the same for the poller and for Lambda.
type Message struct {
	ID            string
	ReceiptHandle string
	Body          string
	// Attributes are the system attributes (SentTimestamp,
	// ApproximateReceiveCount, MessageGroupId, …).
	Attributes map[string]string
	// MessageAttributes are the sender's attributes.
	MessageAttributes map[string]types.MessageAttributeValue
}

// GroupID returns the MessageGroupId, or "". On a standard queue a group id
// names a fair-queue tenant and does not order anything.
func (m *Message) GroupID() string { return m.Attributes["MessageGroupId"] }

// ReceiveCount returns ApproximateReceiveCount, or 0 when absent.
func (m *Message) ReceiveCount() int {
	n, _ := strconv.Atoi(m.Attributes["ApproximateReceiveCount"])
	return n
}

func fromEvent(r events.SQSMessage) *Message {
	m := &Message{ID: r.MessageId, ReceiptHandle: r.ReceiptHandle, Body: r.Body, Attributes: r.Attributes}
	if len(r.MessageAttributes) > 0 {
		m.MessageAttributes = make(map[string]types.MessageAttributeValue, len(r.MessageAttributes))
		for name, v := range r.MessageAttributes {
			m.MessageAttributes[name] = types.MessageAttributeValue{DataType: aws.String(v.DataType), StringValue: v.StringValue, BinaryValue: v.BinaryValue}
		}
	}
	return m
}
