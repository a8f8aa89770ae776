package replay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// ErrMalformedEvent matches the error HandleLambda returns for an event
// Lambda should not have sent (a record without a messageId, which cannot
// be reported on its own): the whole batch fails and Lambda retries it.
var ErrMalformedEvent = errors.New("replay: malformed SQS event")

// HandleLambda handles a Lambda invocation whose event source is the DLQ
// (with ReportBatchItemFailures). The whole event is one pass, however many
// records it holds: sends go ten and 1 MiB at most per call, several at
// once. Replayed and escalated messages are reported as successes, and
// Lambda deletes them; held, waiting, skipped, failed and rejected ones are
// reported as failures, so they stay in the DLQ (a held message is
// invisible until due; its 12 h count from 15 minutes before the
// invocation, the event source mapping's receive). Duplicate records are
// handled once. The DLQ must not have a redrive policy of its own:
// escalation is explicit.
func (r *Replayer) HandleLambda(ctx context.Context, event events.SQSEvent) (events.SQSEventResponse, error) {
	invoked := time.Now()
	msgs := make([]types.Message, 0, len(event.Records))
	seen := make(map[string]bool, len(event.Records))
	for i, rec := range event.Records {
		if rec.MessageId == "" {
			return events.SQSEventResponse{}, fmt.Errorf("%w: record %d has no messageId", ErrMalformedEvent, i)
		}
		if seen[rec.MessageId] {
			continue
		}
		seen[rec.MessageId] = true
		msgs = append(msgs, fromRecord(rec))
	}
	var resp events.SQSEventResponse
	if len(msgs) == 0 {
		return resp, nil
	}
	r.obs.consumed.Add(ctx, int64(len(msgs)), r.obs.attrs)
	var items []*item
	if r.rate.admit(ctx, len(msgs)) {
		r.rate.took(len(msgs), len(msgs))
		// A call that failed for good fails its messages, reported one by
		// one: failing the invocation would make Lambda send the moved
		// ones again.
		items, _, _ = r.process(ctx, msgs, invoked.Add(-lambdaReceiveAllowance), nil, true, nil)
	}
	moved := make(map[string]bool, len(items))
	for _, it := range items {
		moved[aws.ToString(it.msg.MessageId)] = it.state == replayed || it.state == escalated
	}
	for _, m := range msgs {
		if !moved[aws.ToString(m.MessageId)] {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: aws.ToString(m.MessageId)})
		}
	}
	return resp, nil
}

// fromRecord turns a Lambda record into the message a receive returns.
func fromRecord(rec events.SQSMessage) types.Message {
	m := types.Message{MessageId: aws.String(rec.MessageId), ReceiptHandle: aws.String(rec.ReceiptHandle), Body: aws.String(rec.Body),
		Attributes: rec.Attributes}
	if len(rec.MessageAttributes) > 0 {
		m.MessageAttributes = make(map[string]types.MessageAttributeValue, len(rec.MessageAttributes))
		for name, v := range rec.MessageAttributes {
			m.MessageAttributes[name] = types.MessageAttributeValue{DataType: aws.String(v.DataType), StringValue: v.StringValue, BinaryValue: v.BinaryValue}
		}
	}
	return m
}
