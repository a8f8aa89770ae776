package sqstest

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
)

// The wire cases send what other SDKs send and aws-sdk-go-v2 does not: explicit
// zeros, and text that is not valid.

func caseZerosReceiveVisibilityZeroLeavesMessageVisible(t caseT, e *env) {
	url := e.queue(t, map[string]string{"VisibilityTimeout": "600"})
	e.send(t, url, "again")
	in := &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 1}
	if out, err := e.api.ReceiveMessage(e.ctx(), in, explicitZero("VisibilityTimeout")); err != nil || len(out.Messages) != 1 {
		t.Fatalf("receive with VisibilityTimeout 0: %d messages, %v", lenMessages(out), err)
	}
	msgs := e.receive(t, url, maxMessages(1))
	if len(msgs) != 1 {
		t.Fatalf("expect the message visible again at once after a receive with VisibilityTimeout 0, got %d messages", len(msgs))
	}
	equal(t, "receive count", "2", msgs[0].Attributes["ApproximateReceiveCount"])
}

func caseZerosReceiveWaitZeroDoesNotLongPoll(t caseT, e *env) {
	url := e.queue(t, map[string]string{"ReceiveMessageWaitTimeSeconds": "20"})
	ctx, cancel := context.WithTimeout(e.ctx(), 5*time.Second)
	defer cancel()
	in := &sqs.ReceiveMessageInput{QueueUrl: aws.String(url)}
	out, err := e.api.ReceiveMessage(ctx, in, explicitZero("WaitTimeSeconds"))
	if err != nil {
		t.Fatalf("receive with WaitTimeSeconds 0 on a queue that long-polls for 20 s: expect an empty answer at once, got %v", err)
	}
	equal(t, "messages", 0, len(out.Messages))
}

func caseZerosReceiveMaxMessagesZeroRefused(t caseT, e *env) {
	url := e.queue(t, nil)
	_, err := e.api.ReceiveMessage(e.ctx(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url)}, explicitZero("MaxNumberOfMessages"))
	e.wantCode(t, err, "InvalidParameterValue")
}

func caseZerosSendDelayZeroOverridesQueueDelay(t caseT, e *env) {
	url := e.queue(t, map[string]string{"DelaySeconds": "900"})
	in := &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("now")}
	if _, err := e.api.SendMessage(e.ctx(), in, explicitZero("DelaySeconds")); err != nil {
		t.Fatalf("send with DelaySeconds 0: %v", err)
	}
	equalSlices(t, "received at once", []string{"now"}, bodies(e.receive(t, url)))
}

func caseZerosBatchEntryDelayZeroOverridesQueueDelay(t caseT, e *env) {
	url := e.queue(t, map[string]string{"DelaySeconds": "900"})
	in := &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: []types.SendMessageBatchRequestEntry{
		{Id: aws.String("late"), MessageBody: aws.String("late")},
		{Id: aws.String("now"), MessageBody: aws.String("now")},
	}}
	out, err := e.api.SendMessageBatch(e.ctx(), in, explicitZero("Entries.1.DelaySeconds"))
	if err != nil || len(out.Failed) > 0 {
		t.Fatalf("send batch: %v %v", err, out)
	}
	equalSlices(t, "received at once", []string{"now"}, bodies(e.receive(t, url)))
}

func caseZerosFIFOSendDelayZeroAccepted(t caseT, e *env) {
	url := e.fifo(t, map[string]string{"ContentBasedDeduplication": "true"})
	in := &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("m"), MessageGroupId: aws.String("g")}
	if _, err := e.api.SendMessage(e.ctx(), in, explicitZero("DelaySeconds")); err != nil {
		t.Fatalf("send with DelaySeconds 0 to a FIFO queue: expect success (only a non-zero value is refused), got %v", err)
	}
}

func caseTextLoneSurrogateRefused(t caseT, e *env) {
	url := e.queue(t, nil)
	in := &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("a@LONE@b")}
	_, err := e.api.SendMessage(e.ctx(), in, replaceInBody("@LONE@", `\ud800`, "%ED%A0%80"))
	wantType[types.InvalidMessageContents](t, err)
	equal(t, "messages stored", 0, len(e.receive(t, url)))
}

func caseTextInvalidUTF8Refused(t caseT, e *env) {
	url := e.queue(t, nil)
	in := &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("a@BAD@b")}
	_, err := e.api.SendMessage(e.ctx(), in, replaceInBody("@BAD@", "\xff\xfe", "%FF%FE"))
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorFault() == smithy.FaultServer {
		t.Fatalf("expect a client error for a body that is not UTF-8, got %v", err)
	}
	equal(t, "messages stored", 0, len(e.receive(t, url)))
}

func caseTextSurrogatePairAccepted(t caseT, e *env) {
	url := e.queue(t, nil)
	in := &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("a@PAIR@b")}
	if _, err := e.api.SendMessage(e.ctx(), in, replaceInBody("@PAIR@", `\ud83d\ude00`, "%F0%9F%98%80")); err != nil {
		t.Fatalf("send an escaped surrogate pair: %v", err)
	}
	equalSlices(t, "body", []string{"a\U0001F600b"}, bodies(e.receive(t, url)))
}

func caseErrorsMessagesDoNotRepeatTheCode(t caseT, e *env) {
	url := e.queue(t, nil)
	q := aws.String(url)
	entry := func(id string) types.SendMessageBatchRequestEntry {
		return types.SendMessageBatchRequestEntry{Id: aws.String(id), MessageBody: aws.String("b")}
	}
	many := make([]types.SendMessageBatchRequestEntry, 11)
	for i := range many {
		many[i] = entry("e" + string(rune('a'+i)))
	}
	// DelaySeconds 901's message is checked by caseDelayOutOfRange, which a
	// backend without the range check skips.
	calls := []struct {
		what string
		call func() error
	}{
		{"a NUL in the body", func() error {
			_, err := e.api.SendMessage(e.ctx(), &sqs.SendMessageInput{QueueUrl: q, MessageBody: aws.String("a\x00b")})
			return err
		}},
		{"MaxNumberOfMessages 11", func() error {
			_, err := e.api.ReceiveMessage(e.ctx(), &sqs.ReceiveMessageInput{QueueUrl: q, MaxNumberOfMessages: 11})
			return err
		}},
		{"duplicate batch ids", func() error {
			_, err := e.sendBatch(url, []types.SendMessageBatchRequestEntry{entry("x"), entry("x")})
			return err
		}},
		{"a bad batch id", func() error {
			_, err := e.sendBatch(url, []types.SendMessageBatchRequestEntry{entry("no spaces")})
			return err
		}},
		{"11 entries", func() error {
			_, err := e.sendBatch(url, many)
			return err
		}},
		{"a missing queue", func() error {
			_, err := e.api.GetQueueUrl(e.ctx(), &sqs.GetQueueUrlInput{QueueName: aws.String(e.queueName("absent"))})
			return err
		}},
	}
	for _, c := range calls {
		wantOwnWords(t, c.what, c.call())
	}
}

// wantOwnWords fails unless err is a service error whose message is in SQS's
// words: not empty, and not a repeat of its code.
func wantOwnWords(t caseT, what string, err error) {
	t.Helper()
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("%s: expect a service error, got %v", what, err)
	}
	code, msg := apiErr.ErrorCode(), apiErr.ErrorMessage()
	short := code[strings.LastIndex(code, ".")+1:]
	if msg == "" || strings.Contains(msg, short) {
		t.Errorf("%s: expect a message in SQS's words that does not repeat the code %s, got %q", what, code, msg)
	}
}

func lenMessages(out *sqs.ReceiveMessageOutput) int {
	if out == nil {
		return 0
	}
	return len(out.Messages)
}
