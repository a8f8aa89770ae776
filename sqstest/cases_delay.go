package sqstest

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

func delaySeconds(s int32) func(*sqs.SendMessageInput) {
	return func(in *sqs.SendMessageInput) { in.DelaySeconds = s }
}

func caseDelayPerMessage(t caseT, e *env) {
	url := e.queue(t, nil)
	e.send(t, url, "later", delaySeconds(1))
	e.send(t, url, "now")
	equalSlices(t, "before the delay", []string{"now"}, bodies(e.receive(t, url)))
	e.advance(seconds(1.5))
	equalSlices(t, "after the delay", []string{"later"}, bodies(e.receive(t, url)))
}

func caseDelayQueueDefault(t caseT, e *env) {
	url := e.queue(t, map[string]string{"DelaySeconds": "1"})
	e.send(t, url, "body")
	equal(t, "before the delay", 0, len(e.receive(t, url)))
	_, _, delayed := e.counts(t, url)
	equal(t, "delayed", 1, delayed)
	e.advance(seconds(1.5))
	equal(t, "after the delay", 1, len(e.receive(t, url)))
}

func caseDelayPerMessageOverridesQueue(t caseT, e *env) {
	url := e.queue(t, map[string]string{"DelaySeconds": "900"})
	e.send(t, url, "body", delaySeconds(1))
	e.advance(seconds(1.5))
	equal(t, "after the message's delay", 1, len(e.receive(t, url)))
}

func caseDelayStandardQueueDelayChangeIsNotRetroactive(t caseT, e *env) {
	url := e.queue(t, map[string]string{"DelaySeconds": "60"})
	e.send(t, url, "waiting")
	if _, err := e.api.SetQueueAttributes(e.ctx(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: map[string]string{"DelaySeconds": "0"}}); err != nil {
		t.Fatalf("set: %v", err)
	}
	equal(t, "received after the change", 0, len(e.receive(t, url)))
	_, _, delayed := e.counts(t, url)
	equal(t, "still delayed", 1, delayed)
	e.send(t, url, "new")
	equalSlices(t, "a new message takes the new delay", []string{"new"}, bodies(e.receive(t, url)))
}

func caseDelayFIFOQueueDelayChangeIsRetroactive(t caseT, e *env) {
	url := e.fifo(t, map[string]string{"DelaySeconds": "60"})
	e.sendFIFO(t, url, "g", "waiting")
	if _, err := e.api.SetQueueAttributes(e.ctx(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: map[string]string{"DelaySeconds": "0"}}); err != nil {
		t.Fatalf("set: %v", err)
	}
	equalSlices(t, "received at once after the change", []string{"waiting"}, bodies(e.receive(t, url)))
}

func caseDelayOutOfRange(t caseT, e *env) {
	_, err := e.api.SendMessage(e.ctx(), &sqs.SendMessageInput{QueueUrl: aws.String(e.queue(t, nil)), MessageBody: aws.String("x"), DelaySeconds: 901})
	e.wantCode(t, err, "InvalidParameterValue")
	wantOwnWords(t, "DelaySeconds 901", err)
}
