package sqstest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

type pollResult struct {
	msgs []types.Message
	err  error
}

// poll starts a receive in the background and returns where its result
// arrives.
func (e *env) poll(ctx context.Context, url string, fns ...func(*sqs.ReceiveMessageInput)) <-chan pollResult {
	in := &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10}
	for _, fn := range fns {
		fn(in)
	}
	done := make(chan pollResult, 1)
	go func() {
		defer func() {
			// A panicking backend fails the case that awaits this receive,
			// not the process (Check runs in a command).
			if p := recover(); p != nil {
				done <- pollResult{err: fmt.Errorf("panic: %v", p)}
			}
		}()
		out, err := e.api.ReceiveMessage(ctx, in)
		if err != nil {
			done <- pollResult{err: err}
			return
		}
		done <- pollResult{msgs: out.Messages}
	}()
	return done
}

func await(t caseT, done <-chan pollResult) pollResult {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("long poll did not return within 30 s")
		return pollResult{}
	}
}

// awaitMessages waits for a background receive that must succeed.
func awaitMessages(t caseT, done <-chan pollResult) []types.Message {
	t.Helper()
	r := await(t, done)
	if r.err != nil {
		t.Fatalf("receive: %v", r.err)
	}
	return r.msgs
}

func casePollWakesOnSend(t caseT, e *env) {
	url := e.queue(t, nil)
	done := e.poll(e.ctx(), url, wait(10))
	e.waitForPollers(t, 1)
	e.send(t, url, "wake")
	msgs := awaitMessages(t, done)
	equalSlices(t, "bodies", []string{"wake"}, bodies(msgs))
}

func casePollReturnsEmptyWhenWaitEnds(t caseT, e *env) {
	url := e.queue(t, nil)
	done := e.poll(e.ctx(), url, wait(1))
	e.waitForPollers(t, 1)
	e.advance(seconds(1.2))
	msgs := awaitMessages(t, done)
	equal(t, "received", 0, len(msgs))
}

func casePollWakesWhenVisibilityExpires(t caseT, e *env) {
	url := e.queue(t, nil)
	e.send(t, url, "body")
	equal(t, "first receive", 1, len(e.receive(t, url, visibility(1))))
	done := e.poll(e.ctx(), url, wait(5))
	e.waitForPollers(t, 1)
	e.advance(seconds(1.1))
	msgs := awaitMessages(t, done)
	equal(t, "received after expiry", 1, len(msgs))
}

func casePollWakesWhenDelayEnds(t caseT, e *env) {
	url := e.queue(t, nil)
	e.send(t, url, "body", delaySeconds(1))
	done := e.poll(e.ctx(), url, wait(5))
	e.waitForPollers(t, 1)
	e.advance(seconds(1.1))
	msgs := awaitMessages(t, done)
	equal(t, "received after delay", 1, len(msgs))
}

func casePollQueueDefaultWait(t caseT, e *env) {
	url := e.queue(t, map[string]string{"ReceiveMessageWaitTimeSeconds": "10"})
	done := e.poll(e.ctx(), url)
	e.waitForPollers(t, 1)
	e.send(t, url, "wake")
	msgs := awaitMessages(t, done)
	equal(t, "received by the queue's long poll", 1, len(msgs))
}

func casePollCancelledByContext(t caseT, e *env) {
	url := e.queue(t, nil)
	ctx, cancel := context.WithCancel(e.ctx())
	done := e.poll(ctx, url, wait(20))
	e.waitForPollers(t, 1)
	cancel()
	r := await(t, done)
	if !errors.Is(r.err, context.Canceled) {
		t.Fatalf("expect context.Canceled, got %v", r.err)
	}
}

func casePollFIFOWakesWhenVisibilityExpires(t caseT, e *env) {
	url := e.fifo(t, nil)
	e.sendFIFO(t, url, "g", "body")
	equal(t, "first receive", 1, len(e.receive(t, url, visibility(1))))
	done := e.poll(e.ctx(), url, wait(5))
	e.waitForPollers(t, 1)
	e.advance(seconds(1.1))
	msgs := awaitMessages(t, done)
	equalSlices(t, "received once the visibility timeout expired", []string{"body"}, bodies(msgs))
}

func casePollWakesOnRelease(t caseT, e *env) {
	url := e.queue(t, nil)
	e.send(t, url, "body")
	got := e.receive(t, url)
	done := e.poll(e.ctx(), url, wait(10))
	e.waitForPollers(t, 1)
	if err := e.changeVisibility(url, got[0], 0); err != nil {
		t.Fatalf("release: %v", err)
	}
	equal(t, "received after the release", 1, len(awaitMessages(t, done)))
}

func casePollFIFOWakesWhenGroupUnlocks(t caseT, e *env) {
	url := e.fifo(t, nil)
	e.sendFIFO(t, url, "g", "1")
	e.sendFIFO(t, url, "g", "2")
	first := e.receive(t, url, maxMessages(1))
	done := e.poll(e.ctx(), url, wait(10))
	e.waitForPollers(t, 1)
	e.delete(t, url, first[0])
	equalSlices(t, "the group's next message", []string{"2"}, bodies(awaitMessages(t, done)))
}

func casePollWakesOnBatchSend(t caseT, e *env) {
	url := e.queue(t, nil)
	done := e.poll(e.ctx(), url, wait(10))
	e.waitForPollers(t, 1)
	if _, err := e.sendBatch(url, entries(3, func(i int) string { return "m" + strconv.Itoa(i) })); err != nil {
		t.Fatalf("send batch: %v", err)
	}
	if n := len(awaitMessages(t, done)); n < 1 {
		t.Fatal("expect the long poll to return the batch")
	}
}

func casePollWaitOutOfRange(t caseT, e *env) {
	_, err := e.api.ReceiveMessage(e.ctx(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(e.queue(t, nil)), WaitTimeSeconds: 21})
	e.wantCode(t, err, "InvalidParameterValue")
}

func casePollMaxNumberOfMessages(t caseT, e *env) {
	url := e.queue(t, nil)
	for range 12 {
		e.send(t, url, "m")
	}
	got := e.receive(t, url, maxMessages(10))
	if len(got) < 1 || len(got) > 10 {
		t.Fatalf("expect 1 to 10 messages, got %d", len(got))
	}
	equal(t, "default of one", 1, len(e.receive(t, url, maxMessages(0))))
	_, err := e.api.ReceiveMessage(e.ctx(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 11})
	e.wantCode(t, err, "InvalidParameterValue")
}
