package sqstest

import (
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

func redrivePolicy(t caseT, e *env, dlqURL string, maxReceives int) string {
	t.Helper()
	arn := e.attrs(t, dlqURL, types.QueueAttributeNameQueueArn)["QueueArn"]
	return fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":%d}`, arn, maxReceives)
}

// failTimes receives the message n times and lets each receive lapse.
func (e *env) failTimes(t caseT, url string, n int) types.Message {
	t.Helper()
	var last types.Message
	for i := range n {
		got := e.receive(t, url, visibility(1), maxMessages(1))
		if len(got) != 1 {
			t.Fatalf("receive %d: expect 1 message, got %d", i+1, len(got))
		}
		last = got[0]
		e.advance(seconds(1.2))
	}
	return last
}

func caseRedriveMovesAfterMaxReceives(t caseT, e *env) {
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
}

func caseRedriveSourceARNAttribute(t caseT, e *env) {
	dlq := e.queue(t, nil)
	src := e.queue(t, map[string]string{"RedrivePolicy": redrivePolicy(t, e, dlq, 1)})
	e.send(t, src, "poison")
	e.failTimes(t, src, 1)
	e.receive(t, src)
	got := e.receive(t, dlq)
	equal(t, "in the DLQ", 1, len(got))
	srcArn := e.attrs(t, src, types.QueueAttributeNameQueueArn)["QueueArn"]
	equal(t, "DeadLetterQueueSourceArn", srcArn, got[0].Attributes["DeadLetterQueueSourceArn"])
}

func caseRedriveFIFOKeepsGroup(t caseT, e *env) {
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
}

func caseRedriveFIFODedupIDBecomesMessageID(t caseT, e *env) {
	dlq := e.fifo(t, nil)
	src := e.fifo(t, map[string]string{"RedrivePolicy": redrivePolicy(t, e, dlq, 1)})
	sent := e.sendFIFO(t, src, "g1", "poison")
	e.failTimes(t, src, 1)
	e.receive(t, src)
	got := e.receive(t, dlq)
	equal(t, "in the DLQ", 1, len(got))
	equal(t, "dedup id", aws.ToString(sent.MessageId), got[0].Attributes["MessageDeduplicationId"])
}

func caseRedriveStandardDLQKeepsTheEnqueueTime(t caseT, e *env) {
	dlq := e.queue(t, map[string]string{"MessageRetentionPeriod": "60"})
	src := e.queue(t, map[string]string{"RedrivePolicy": redrivePolicy(t, e, dlq, 1)})
	e.send(t, src, "old")
	e.advance(50 * time.Second)
	e.failTimes(t, src, 1)
	e.receive(t, src)
	v, _, _ := e.counts(t, dlq)
	equal(t, "in the DLQ", 1, v)
	e.advance(10 * time.Second) // 61 s after the send, 10 s after the move
	v, _, _ = e.counts(t, dlq)
	equal(t, "expired from a standard DLQ by its original enqueue time", 0, v)
}

func caseRedriveFIFODLQRestartsRetention(t caseT, e *env) {
	dlq := e.fifo(t, map[string]string{"MessageRetentionPeriod": "60"})
	src := e.fifo(t, map[string]string{"RedrivePolicy": redrivePolicy(t, e, dlq, 1)})
	e.sendFIFO(t, src, "g", "old")
	e.advance(50 * time.Second)
	e.failTimes(t, src, 1)
	e.receive(t, src)
	e.advance(10 * time.Second)
	v, _, _ := e.counts(t, dlq)
	equal(t, "kept by a FIFO DLQ, which restarts the period", 1, v)
}

func caseRedriveMaxReceiveCountAsString(t caseT, e *env) {
	dlq := e.queue(t, nil)
	arn := e.arn(t, dlq)
	src := e.queue(t, map[string]string{"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"1"}`, arn)})
	e.send(t, src, "poison")
	e.failTimes(t, src, 1)
	equal(t, "received past the count", 0, len(e.receive(t, src)))
	equal(t, "in the DLQ", 1, len(e.receive(t, dlq)))
}

func caseRedriveEmptyPolicyRemovesRedrive(t caseT, e *env) {
	dlq := e.queue(t, nil)
	src := e.queue(t, map[string]string{"RedrivePolicy": redrivePolicy(t, e, dlq, 1)})
	if _, err := e.api.SetQueueAttributes(e.ctx(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(src), Attributes: map[string]string{"RedrivePolicy": ""}}); err != nil {
		t.Fatalf("set: %v", err)
	}
	if p := e.attrs(t, src)["RedrivePolicy"]; p != "" {
		t.Fatalf("expect no redrive policy, got %s", p)
	}
	e.send(t, src, "kept")
	e.failTimes(t, src, 2)
	equal(t, "still delivered from the source", 1, len(e.receive(t, src)))
}

func caseRedriveAllowPolicyValidated(t caseT, e *env) {
	dlq := e.queue(t, nil)
	other := e.arn(t, e.queue(t, nil))
	for _, p := range []string{
		`{"redrivePermission":"sometimes"}`,
		`not json`,
		`{"redrivePermission":"byQueue"}`,
		`{"redrivePermission":"allowAll","sourceQueueArns":["` + other + `"]}`,
		`{"sourceQueueArns":["` + other + `"]}`,
	} {
		_, err := e.api.SetQueueAttributes(e.ctx(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(dlq), Attributes: map[string]string{"RedriveAllowPolicy": p}})
		if err == nil {
			t.Fatalf("expect RedriveAllowPolicy %s to be refused", p)
		}
	}
	valid := `{"redrivePermission":"byQueue","sourceQueueArns":["` + other + `"]}`
	if _, err := e.api.SetQueueAttributes(e.ctx(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(dlq), Attributes: map[string]string{"RedriveAllowPolicy": valid}}); err != nil {
		t.Fatalf("expect %s to be accepted: %v", valid, err)
	}
	if e.attrs(t, dlq, types.QueueAttributeNameRedriveAllowPolicy)["RedriveAllowPolicy"] == "" {
		t.Fatal("expect the policy to be readable")
	}
}

func caseRedriveAllowPolicyDenyAllEnforced(t caseT, e *env) {
	dlq := e.queue(t, map[string]string{"RedriveAllowPolicy": `{"redrivePermission":"denyAll"}`})
	src := e.queue(t, nil)
	_, err := e.api.SetQueueAttributes(e.ctx(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(src), Attributes: map[string]string{"RedrivePolicy": redrivePolicy(t, e, dlq, 3)}})
	if err == nil {
		t.Fatal("expect a dead-letter queue that denies all sources to be refused")
	}
}

func caseRedriveAllowPolicyByQueueEnforced(t caseT, e *env) {
	allowed, denied := e.queue(t, nil), e.queue(t, nil)
	dlq := e.queue(t, map[string]string{"RedriveAllowPolicy": `{"redrivePermission":"byQueue","sourceQueueArns":["` + e.arn(t, allowed) + `"]}`})
	policy := redrivePolicy(t, e, dlq, 3)
	if _, err := e.api.SetQueueAttributes(e.ctx(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(allowed), Attributes: map[string]string{"RedrivePolicy": policy}}); err != nil {
		t.Fatalf("expect the listed source to be accepted: %v", err)
	}
	if _, err := e.api.SetQueueAttributes(e.ctx(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(denied), Attributes: map[string]string{"RedrivePolicy": policy}}); err == nil {
		t.Fatal("expect a source the policy does not list to be refused")
	}
}

func caseRedriveTypeMismatchRefused(t caseT, e *env) {
	dlq := e.fifo(t, nil)
	_, err := e.api.CreateQueue(e.ctx(), &sqs.CreateQueueInput{QueueName: aws.String(e.queueName("mismatch")), Attributes: map[string]string{"RedrivePolicy": redrivePolicy(t, e, dlq, 3)}})
	if err == nil {
		t.Fatal("expect a standard queue with a FIFO dead-letter queue to be refused")
	}
}

func caseRedriveInvalidPolicy(t caseT, e *env) {
	dlq := e.queue(t, nil)
	url := e.queue(t, nil)
	for _, p := range []string{redrivePolicy(t, e, dlq, 0), redrivePolicy(t, e, dlq, 1001), `{"maxReceiveCount":3}`, `not json`} {
		_, err := e.api.SetQueueAttributes(e.ctx(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: map[string]string{"RedrivePolicy": p}})
		if err == nil {
			t.Fatalf("expect redrive policy %s to be refused", p)
		}
	}
}
