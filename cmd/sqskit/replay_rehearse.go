package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/internal/parking"
	"github.com/sqskit/sqskit/internal/queueref"
	"github.com/sqskit/sqskit/internal/sqsrule"
	"github.com/sqskit/sqskit/replay"
	"github.com/sqskit/sqskit/sqsfake"
)

// rehearsal is what a replay did to an in-memory copy of a sample.
type rehearsal struct {
	Queue        string           `json:"queue"`
	Selected     int              `json:"selected"`
	Copied       int              `json:"copied"`
	Result       *replayResult    `json:"result"`
	Arrived      []arrivedCopy    `json:"arrived"`
	LeftInSource int              `json:"leftInSource"`
	Note         string           `json:"note"`
	Queues       []rehearsedQueue `json:"queues"`
}

// arrivedCopy is a message as it reached a target in the copy.
type arrivedCopy struct {
	OriginalID string `json:"originalId"`
	Target     string `json:"target"`
	Group      string `json:"group,omitempty"`
	Counter    string `json:"counter,omitempty"`
	Attributes string `json:"attributes"`
}

// rehearsedQueue is a queue the copy was made with.
type rehearsedQueue struct {
	Name       string            `json:"name"`
	Attributes map[string]string `json:"attributes"`
}

// copiedAttributes are the queue attributes a copy keeps: what changes how
// a replay goes (FIFO, deduplication, sizes, timeouts), not its redrive
// policy or its permissions.
var copiedAttributes = []string{"FifoQueue", "ContentBasedDeduplication", "DeduplicationScope", "FifoThroughputLimit",
	"MaximumMessageSize", "MessageRetentionPeriod", "VisibilityTimeout", "DelaySeconds"}

func copyOf(attrs map[string]string, withDelay bool) map[string]string {
	out := map[string]string{}
	for _, k := range copiedAttributes {
		if v, ok := attrs[k]; ok && v != "" && (withDelay || k != "DelaySeconds") {
			out[k] = v
		}
	}
	return out
}

// rehearse copies up to n of the planned messages into an in-memory SQS
// whose queues have the real ones' names and attributes, runs the same
// replay there, and reports what arrived. Nothing real is changed: the
// real queues are only read (their attributes).
func rehearse(ctx context.Context, c *sqs.Client, q *replayQueues, p *replayPlan, policy replay.Policy, n int) (*rehearsal, error) {
	sample := p.Selected[:min(n, len(p.Selected))]
	r := &rehearsal{Queue: q.source, Selected: len(p.Selected), Copied: len(sample), Arrived: []arrivedCopy{}, Queues: []rehearsedQueue{},
		Note: "the copies carry the real messages' bodies, attributes, groups and counters; SQS's DeadLetterQueueSourceArn cannot be copied, so targets are the plan's"}
	fake := sqsfake.New()
	fc := fake.Client()
	create := func(name string, attrs map[string]string) (string, error) {
		out, err := fc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
		if err != nil {
			return "", fmt.Errorf("rehearsal: create the copy of %s: %w", name, err)
		}
		r.Queues = append(r.Queues, rehearsedQueue{Name: name, Attributes: attrs})
		return aws.ToString(out.QueueUrl), nil
	}
	source, err := create(queueref.Name(q.source), copyOf(q.attrs, false))
	if err != nil {
		return nil, err
	}
	targets := map[string]string{} // real URL → copy's URL
	for _, m := range sample {
		if _, ok := targets[m.target]; ok {
			continue
		}
		attrs := q.toAttrs
		if m.target != q.to {
			if attrs, err = queueAttributes(ctx, c, m.target, m.target); err != nil {
				return nil, err
			}
		}
		if targets[m.target], err = create(queueref.Name(m.target), copyOf(attrs, true)); err != nil {
			return nil, err
		}
	}
	todo := map[string]string{}
	var order []string
	realID := map[string]string{} // copy's id → real id
	for _, m := range sample {
		in := &sqs.SendMessageInput{QueueUrl: aws.String(source), MessageBody: m.msg.Body, MessageAttributes: cleanAttributes(m.msg.MessageAttributes)}
		if m.Group != "" && sqsrule.IsFIFO(source) {
			in.MessageGroupId = aws.String(m.Group)
			in.MessageDeduplicationId = aws.String(m.ID)
		}
		if th := m.msg.Attributes[string(types.MessageSystemAttributeNameAWSTraceHeader)]; th != "" {
			in.MessageSystemAttributes = map[string]types.MessageSystemAttributeValue{
				string(types.MessageSystemAttributeNameAWSTraceHeader): {DataType: aws.String("String"), StringValue: aws.String(th)}}
		}
		out, err := fc.SendMessage(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("rehearsal: copy message %s: %w", m.ID, err)
		}
		todo[aws.ToString(out.MessageId)] = targets[m.target]
		order = append(order, aws.ToString(out.MessageId))
		realID[aws.ToString(out.MessageId)] = m.ID
	}
	res, err := executeReplay(ctx, fc, source, order, todo, policy, func(string) {})
	if err != nil {
		return nil, fmt.Errorf("rehearsal: %w", err)
	}
	for i := range res.Messages {
		res.Messages[i].ID = realID[res.Messages[i].ID]
	}
	for i := range res.Failures {
		res.Failures[i].ID = realID[res.Failures[i].ID]
	}
	r.Result = res
	for _, real := range sortedKeys(targets) {
		arrived, err := receiveEverything(ctx, fc, targets[real])
		if err != nil {
			return nil, fmt.Errorf("rehearsal: %w", err)
		}
		for _, m := range arrived {
			md, _ := parking.Read(m.MessageAttributes, policy.CounterAttribute)
			id := md.OriginalID
			if rid, ok := realID[id]; ok {
				id = rid
			}
			counter := ""
			if v, ok := m.MessageAttributes[policy.CounterAttribute]; ok {
				counter = aws.ToString(v.StringValue)
			} else if md.Attempt > 0 {
				counter = strconv.Itoa(md.Attempt)
			}
			names := sortedKeys(m.MessageAttributes)
			r.Arrived = append(r.Arrived, arrivedCopy{OriginalID: id, Target: queueref.Name(real),
				Group: m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)], Counter: counter, Attributes: strings.Join(names, ",")})
		}
	}
	out, err := fc.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(source), AttributeNames: []types.QueueAttributeName{
		types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err == nil {
		for _, k := range []string{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"} {
			v, _ := strconv.Atoi(out.Attributes[k])
			r.LeftInSource += v
		}
	}
	return r, nil
}

// cleanAttributes copies message attributes without the list fields SQS
// refuses on a send.
func cleanAttributes(in map[string]types.MessageAttributeValue) map[string]types.MessageAttributeValue {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]types.MessageAttributeValue, len(in))
	for k, v := range in {
		out[k] = types.MessageAttributeValue{DataType: v.DataType, StringValue: v.StringValue, BinaryValue: v.BinaryValue}
	}
	return out
}

// receiveEverything receives every visible message of url (keeping them
// invisible for ten minutes, so none comes twice), in receive order.
func receiveEverything(ctx context.Context, c *sqs.Client, url string) ([]types.Message, error) {
	var all []types.Message
	for range 1000 {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: 600,
			MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}})
		if err != nil {
			return all, err
		}
		if len(out.Messages) == 0 {
			break
		}
		all = append(all, out.Messages...)
	}
	slices.SortStableFunc(all, func(a, b types.Message) int {
		sa, _ := sentAt(&a)
		sb, _ := sentAt(&b)
		return sa.Compare(sb)
	})
	return all, nil
}
