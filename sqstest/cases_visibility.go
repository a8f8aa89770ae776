package sqstest

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

func caseVisibilityHiddenWhileInFlight(t caseT, e *env) {
	url := e.queue(t, nil)
	e.send(t, url, "body")
	equal(t, "first receive", 1, len(e.receive(t, url)))
	equal(t, "second receive", 0, len(e.receive(t, url)))
}

func caseVisibilityRedeliveredAfterTimeout(t caseT, e *env) {
	url := e.queue(t, nil)
	e.send(t, url, "body")
	equal(t, "first receive", 1, len(e.receive(t, url, visibility(1))))
	e.advance(seconds(1.5))
	equal(t, "after timeout", 1, len(e.receive(t, url)))
}

func caseVisibilityQueueDefaultApplies(t caseT, e *env) {
	url := e.queue(t, map[string]string{"VisibilityTimeout": "1"})
	e.send(t, url, "body")
	equal(t, "first receive", 1, len(e.receive(t, url)))
	equal(t, "while hidden", 0, len(e.receive(t, url)))
	e.advance(seconds(1.5))
	equal(t, "after the queue's timeout", 1, len(e.receive(t, url)))
}

func caseVisibilityChangeToZeroReleasesNow(t caseT, e *env) {
	url := e.queue(t, nil)
	e.send(t, url, "body")
	got := e.receive(t, url)
	equal(t, "received", 1, len(got))
	if err := e.changeVisibility(url, got[0], 0); err != nil {
		t.Fatalf("change visibility: %v", err)
	}
	equal(t, "received again", 1, len(e.receive(t, url)))
}

func caseVisibilityExtendKeepsHidden(t caseT, e *env) {
	url := e.queue(t, nil)
	e.send(t, url, "body")
	got := e.receive(t, url, visibility(1))
	if err := e.changeVisibility(url, got[0], 30); err != nil {
		t.Fatalf("change visibility: %v", err)
	}
	e.advance(seconds(1.5))
	equal(t, "received after the original timeout", 0, len(e.receive(t, url)))
}

func caseVisibilityChangeCountsFromTheCall(t caseT, e *env) {
	url := e.queue(t, nil)
	e.send(t, url, "body")
	got := e.receive(t, url, visibility(60))
	e.advance(50 * time.Second)
	if err := e.changeVisibility(url, got[0], 20); err != nil {
		t.Fatalf("change visibility: %v", err)
	}
	e.advance(15 * time.Second)
	equal(t, "15 s after a 20 s change", 0, len(e.receive(t, url)))
	e.advance(6 * time.Second)
	equal(t, "21 s after a 20 s change", 1, len(e.receive(t, url)))
}

func caseVisibilityNotInFlight(t caseT, e *env) {
	url := e.queue(t, nil)
	e.send(t, url, "body")
	got := e.receive(t, url, visibility(1))
	e.advance(seconds(1.5))
	err := e.changeVisibility(url, got[0], 10)
	wantType[types.MessageNotInflight](t, err)
}

func caseVisibilityTwelveHourCap(t caseT, e *env) {
	url := e.queue(t, nil)
	e.send(t, url, "body")
	got := e.receive(t, url, visibility(43200))
	e.advance(time.Hour)
	e.wantCode(t, e.changeVisibility(url, got[0], 43200), "InvalidParameterValue")
	if err := e.changeVisibility(url, got[0], 11*3600); err != nil {
		t.Fatalf("expect an extension within 12 h of the receive to pass: %v", err)
	}
}

func caseVisibilityOutOfRange(t caseT, e *env) {
	url := e.queue(t, nil)
	e.send(t, url, "body")
	got := e.receive(t, url)
	e.wantCode(t, e.changeVisibility(url, got[0], 43201), "InvalidParameterValue")
	_, err := e.api.ReceiveMessage(e.ctx(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), VisibilityTimeout: 43201})
	e.wantCode(t, err, "InvalidParameterValue")
}

func caseVisibilityDeleteTwiceSucceeds(t caseT, e *env) {
	url := e.queue(t, nil)
	e.send(t, url, "body")
	got := e.receive(t, url)
	e.delete(t, url, got[0])
	e.delete(t, url, got[0])
}

func caseVisibilityDeleteAfterTimeoutOnStandard(t caseT, e *env) {
	url := e.queue(t, nil)
	e.send(t, url, "body")
	got := e.receive(t, url, visibility(1))
	e.advance(seconds(1.5))
	e.delete(t, url, got[0])
	equal(t, "received after delete", 0, len(e.receive(t, url)))
}

func caseVisibilityStaleHandleDeleteSucceeds(t caseT, e *env) {
	url := e.queue(t, nil)
	e.send(t, url, "body")
	first := e.receive(t, url, visibility(1))
	e.advance(seconds(1.5))
	equal(t, "received again", 1, len(e.receive(t, url)))
	// SQS documents that the call succeeds; whether it deletes is not
	// promised.
	e.delete(t, url, first[0])
}

func caseVisibilityChangeAfterDeleteFails(t caseT, e *env) {
	url := e.queue(t, nil)
	e.send(t, url, "body")
	got := e.receive(t, url)
	e.delete(t, url, got[0])
	e.wantCode(t, e.changeVisibility(url, got[0], 10), "InvalidParameterValue")
}

func caseVisibilityReleaseRedeliversWithANewHandle(t caseT, e *env) {
	url := e.queue(t, nil)
	e.send(t, url, "body")
	first := e.receive(t, url)
	if err := e.changeVisibility(url, first[0], 0); err != nil {
		t.Fatalf("release: %v", err)
	}
	second := e.receive(t, url)
	equal(t, "received again", 1, len(second))
	equal(t, "ApproximateReceiveCount", "2", second[0].Attributes["ApproximateReceiveCount"])
	if aws.ToString(first[0].ReceiptHandle) == aws.ToString(second[0].ReceiptHandle) {
		t.Fatal("expect a new receipt handle")
	}
}

func caseVisibilityMalformedReceiptHandle(t caseT, e *env) {
	url := e.queue(t, nil)
	_, err := e.api.DeleteMessage(e.ctx(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String("not-a-handle")})
	wantType[types.ReceiptHandleIsInvalid](t, err)
}
