package sqsfake

import (
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/internal/sqsrule"
)

// msgState is where a stored message is in its life.
type msgState uint8

const (
	stateDelayed  msgState = iota // sent with a delay that has not ended
	stateVisible                  // receivable (on FIFO, once its group allows)
	stateInFlight                 // received, its visibility timeout running
)

// message is one stored message. Fields are guarded by Server.mu; body,
// attrs and systemAttrs never change once stored, so responses may share
// them after the lock is released.
type message struct {
	seq          uint64 // unique for the Server's life: delivery order, receipt handles
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

	// Store indexes (see messages).
	state            msgState
	readyPos, agePos int
	group            *group
	prev, next       *message // neighbours in the FIFO group
	lane             *lane    // the timed lane holding it, if delayed or in flight
	tprev, tnext     *message // neighbours in the lane
}

func newMessage() *message { return &message{readyPos: -1, agePos: -1} }

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
	var selected map[string]types.MessageAttributeValue
	for name, v := range m.attrs {
		if user(name) {
			if selected == nil {
				selected = map[string]types.MessageAttributeValue{}
			}
			selected[name] = v
		}
	}
	if len(selected) > 0 {
		out.MessageAttributes = selected
		out.MD5OfMessageAttributes = aws.String(sqsrule.MD5OfAttributes(selected))
	}
	return out
}

func (m *message) systemAttributes(want func(string) bool) map[string]string {
	var out map[string]string
	add := func(name, value string) {
		if value != "" && want(name) {
			if out == nil {
				out = map[string]string{}
			}
			out[name] = value
		}
	}
	add("SenderId", "AIDASQSFAKESENDER")
	// Formatted only when asked for: most receives ask for none.
	if want("SentTimestamp") {
		add("SentTimestamp", millis(m.sentAt))
	}
	if want("ApproximateReceiveCount") {
		add("ApproximateReceiveCount", strconv.Itoa(m.receiveCount))
	}
	if want("ApproximateFirstReceiveTimestamp") {
		add("ApproximateFirstReceiveTimestamp", millis(m.firstRecv))
	}
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
