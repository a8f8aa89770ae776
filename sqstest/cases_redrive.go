package sqstest

import (
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

func redrivePolicy(t *testing.T, e *env, dlqURL string, maxReceives int) string {
	t.Helper()
	arn := e.attrs(t, dlqURL, types.QueueAttributeNameQueueArn)["QueueArn"]
	return fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":%d}`, arn, maxReceives)
}

// failTimes receives the message n times and lets each receive lapse.
func (e *env) failTimes(t *testing.T, url string, n int) types.Message {
	t.Helper()
	var last types.Message
	for i := range n {
		got := e.receive(t, url, visibility(1), maxMessages(1))
		if len(got) != 1 {
			t.Fatalf("receive %d: expect 1 message, got %d", i+1, len(got))
		}
		last = got[0]
		e.h.Advance(t, seconds(1.2))
	}
	return last
}

func redriveCases() []testCase {
	return []testCase{
		{name: "redrive/moves-after-max-receives", run: func(t *testing.T, e *env) {
			dlq := e.queue(t, nil)
			src := e.queue(t, map[string]string{"RedrivePolicy": redrivePolicy(t, e, dlq, 2)})
			attrs := map[string]types.MessageAttributeValue{"k": str("String", "v"), "b": bin("Binary", []byte{9, 8})}
			sent := e.send(t, src, "poison", withAttrs(attrs))
			e.failTimes(t, src, 2)
			equal(t, "received from source after max receives", 0, len(e.receive(t, src)))
			got := e.receive(t, dlq)
			equal(t, "in the DLQ", 1, len(got))
			m := got[0]
			equal(t, "message id kept", aws.ToString(sent.MessageId), aws.ToString(m.MessageId))
			equal(t, "body kept", "poison", aws.ToString(m.Body))
			equal(t, "attribute k", "v", aws.ToString(m.MessageAttributes["k"].StringValue))
			equal(t, "attribute b", string([]byte{9, 8}), string(m.MessageAttributes["b"].BinaryValue))
		}},
		{name: "redrive/source-arn-attribute", needs: []Capability{RedriveMetadata}, run: func(t *testing.T, e *env) {
			dlq := e.queue(t, nil)
			src := e.queue(t, map[string]string{"RedrivePolicy": redrivePolicy(t, e, dlq, 1)})
			e.send(t, src, "poison")
			e.failTimes(t, src, 1)
			e.receive(t, src)
			got := e.receive(t, dlq)
			equal(t, "in the DLQ", 1, len(got))
			srcArn := e.attrs(t, src, types.QueueAttributeNameQueueArn)["QueueArn"]
			equal(t, "DeadLetterQueueSourceArn", srcArn, got[0].Attributes["DeadLetterQueueSourceArn"])
		}},
		{name: "redrive/fifo-keeps-group", run: func(t *testing.T, e *env) {
			dlq := e.fifo(t, nil)
			src := e.fifo(t, map[string]string{"RedrivePolicy": redrivePolicy(t, e, dlq, 1)})
			sent := e.sendFIFO(t, src, "g1", "poison")
			e.sendFIFO(t, src, "g1", "next")
			e.failTimes(t, src, 1)
			equalSlices(t, "the group goes on after the move", []string{"next"}, bodies(e.receive(t, src)))
			got := e.receive(t, dlq)
			equal(t, "in the DLQ", 1, len(got))
			equal(t, "message id kept", aws.ToString(sent.MessageId), aws.ToString(got[0].MessageId))
			equal(t, "group kept", "g1", got[0].Attributes["MessageGroupId"])
		}},
		{name: "redrive/fifo-dedup-id-becomes-message-id", needs: []Capability{RedriveMetadata}, run: func(t *testing.T, e *env) {
			dlq := e.fifo(t, nil)
			src := e.fifo(t, map[string]string{"RedrivePolicy": redrivePolicy(t, e, dlq, 1)})
			sent := e.sendFIFO(t, src, "g1", "poison")
			e.failTimes(t, src, 1)
			e.receive(t, src)
			got := e.receive(t, dlq)
			equal(t, "in the DLQ", 1, len(got))
			equal(t, "dedup id", aws.ToString(sent.MessageId), got[0].Attributes["MessageDeduplicationId"])
		}},
		{name: "redrive/type-mismatch-refused", needs: []Capability{QueueValidation}, run: func(t *testing.T, e *env) {
			dlq := e.fifo(t, nil)
			_, err := e.api.CreateQueue(e.ctx(), &sqs.CreateQueueInput{QueueName: aws.String(e.h.QueueName("mismatch")), Attributes: map[string]string{"RedrivePolicy": redrivePolicy(t, e, dlq, 3)}})
			if err == nil {
				t.Fatal("expect a standard queue with a FIFO dead-letter queue to be refused")
			}
		}},
		{name: "redrive/invalid-policy", needs: []Capability{QueueValidation}, run: func(t *testing.T, e *env) {
			dlq := e.queue(t, nil)
			url := e.queue(t, nil)
			for _, p := range []string{redrivePolicy(t, e, dlq, 0), redrivePolicy(t, e, dlq, 1001), `{"maxReceiveCount":3}`, `not json`} {
				_, err := e.api.SetQueueAttributes(e.ctx(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: map[string]string{"RedrivePolicy": p}})
				if err == nil {
					t.Fatalf("expect redrive policy %s to be refused", p)
				}
			}
		}},
	}
}
