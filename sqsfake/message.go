package sqsfake

import (
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/internal/sqsrule"
)

// message is one stored message. Fields are guarded by Server.mu.
type message struct {
	seq          uint64 // position in its queue, for receipt handles
	id           string
	body         string
	attrs        map[string]types.MessageAttributeValue
	systemAttrs  map[string]types.MessageSystemAttributeValue
	groupID      string
	dedupID      string
	seqNumber    string // FIFO only
	sourceArn    string // DeadLetterQueueSourceArn, set by redrive
	sentAt       time.Time
	enqueuedAt   time.Time // retention counts from here
	visibleAt    time.Time // delay end, or visibility timeout end
	firstRecv    time.Time
	receiveCount int
	handle       string    // receipt handle of the latest receive; "" before
	lastRecvAt   time.Time // latest receive, for the 12-hour visibility cap
	deleted      bool
	touched      bool // deleted or visibility changed since the latest receive
	md5Body      string
	md5Attrs     string
}

// inFlight reports whether the message was received and is still invisible.
func (m *message) inFlight(now time.Time) bool {
	return m.handle != "" && m.visibleAt.After(now)
}

// toSDK builds the message a receive returns, with only the requested system
// and message attributes.
func (m *message) toSDK(sys func(string) bool, user func(string) bool) types.Message {
	out := types.Message{
		MessageId:     aws.String(m.id),
		ReceiptHandle: aws.String(m.handle),
		Body:          aws.String(m.body),
		MD5OfBody:     aws.String(m.md5Body),
	}
	if attrs := m.systemAttributes(sys); len(attrs) > 0 {
		out.Attributes = attrs
	}
	selected := map[string]types.MessageAttributeValue{}
	for name, v := range m.attrs {
		if user(name) {
			selected[name] = copyAttr(v)
		}
	}
	if len(selected) > 0 {
		out.MessageAttributes = selected
		out.MD5OfMessageAttributes = aws.String(sqsrule.MD5OfAttributes(selected))
	}
	return out
}

func (m *message) systemAttributes(want func(string) bool) map[string]string {
	out := map[string]string{}
	add := func(name, value string) {
		if value != "" && want(name) {
			out[name] = value
		}
	}
	add("SenderId", "AIDASQSFAKESENDER")
	add("SentTimestamp", millis(m.sentAt))
	add("ApproximateReceiveCount", strconv.Itoa(m.receiveCount))
	add("ApproximateFirstReceiveTimestamp", millis(m.firstRecv))
	add("MessageGroupId", m.groupID)
	add("MessageDeduplicationId", m.dedupID)
	add("SequenceNumber", m.seqNumber)
	add("DeadLetterQueueSourceArn", m.sourceArn)
	if v, ok := m.systemAttrs["AWSTraceHeader"]; ok && v.StringValue != nil {
		add("AWSTraceHeader", *v.StringValue)
	}
	return out
}

func millis(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return strconv.FormatInt(t.UnixMilli(), 10)
}

// copyAttr returns a deep copy so callers never share memory with the store.
func copyAttr(v types.MessageAttributeValue) types.MessageAttributeValue {
	out := types.MessageAttributeValue{DataType: v.DataType, StringValue: v.StringValue}
	if v.BinaryValue != nil {
		out.BinaryValue = slices.Clone(v.BinaryValue)
	}
	return out
}

func copyAttrs(in map[string]types.MessageAttributeValue) map[string]types.MessageAttributeValue {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]types.MessageAttributeValue, len(in))
	for k, v := range in {
		out[k] = copyAttr(v)
	}
	return out
}
