package sqstest

import (
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/internal/sqsrule"
)

func entries(n int, body func(i int) string) []types.SendMessageBatchRequestEntry {
	out := make([]types.SendMessageBatchRequestEntry, n)
	for i := range out {
		out[i] = types.SendMessageBatchRequestEntry{Id: aws.String("e" + strconv.Itoa(i)), MessageBody: aws.String(body(i))}
	}
	return out
}

func (e *env) sendBatch(url string, es []types.SendMessageBatchRequestEntry) (*sqs.SendMessageBatchOutput, error) {
	return e.api.SendMessageBatch(e.ctx(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: es})
}

func caseBatchSendTen(t caseT, e *env) {
	url := e.queue(t, nil)
	out, err := e.sendBatch(url, entries(10, func(i int) string { return "m" + strconv.Itoa(i) }))
	if err != nil {
		t.Fatalf("send batch: %v", err)
	}
	equal(t, "successful", 10, len(out.Successful))
	equal(t, "failed", 0, len(out.Failed))
	v, _, _ := e.counts(t, url)
	equal(t, "queued", 10, v)
}

func caseBatchEmpty(t caseT, e *env) {
	_, err := e.sendBatch(e.queue(t, nil), []types.SendMessageBatchRequestEntry{})
	wantType[types.EmptyBatchRequest](t, err)
}

func caseBatchTooManyEntries(t caseT, e *env) {
	_, err := e.sendBatch(e.queue(t, nil), entries(11, func(int) string { return "m" }))
	wantType[types.TooManyEntriesInBatchRequest](t, err)
}

func caseBatchIDsNotDistinct(t caseT, e *env) {
	es := entries(2, func(int) string { return "m" })
	es[1].Id = es[0].Id
	_, err := e.sendBatch(e.queue(t, nil), es)
	wantType[types.BatchEntryIdsNotDistinct](t, err)
}

func caseBatchInvalidEntryID(t caseT, e *env) {
	es := entries(1, func(int) string { return "m" })
	es[0].Id = aws.String("bad id!")
	_, err := e.sendBatch(e.queue(t, nil), es)
	wantType[types.InvalidBatchEntryId](t, err)
}

func caseBatchRequestTooLong(t caseT, e *env) {
	url := e.queue(t, nil)
	size, _ := strconv.Atoi(e.attrs(t, url)["MaximumMessageSize"])
	_, err := e.sendBatch(url, entries(2, func(int) string { return strings.Repeat("x", size/2+1) }))
	wantType[types.BatchRequestTooLong](t, err)
}

func caseBatchPartialFailure(t caseT, e *env) {
	url := e.queue(t, nil)
	out, err := e.sendBatch(url, entries(3, func(i int) string {
		if i == 1 {
			return "bad\x00body"
		}
		return "ok"
	}))
	if err != nil {
		t.Fatalf("send batch: %v", err)
	}
	equal(t, "successful", 2, len(out.Successful))
	equal(t, "failed", 1, len(out.Failed))
	f := out.Failed[0]
	equal(t, "failed id", "e1", aws.ToString(f.Id))
	equal(t, "sender fault", true, f.SenderFault)
	if aws.ToString(f.Code) == "" {
		t.Fatal("expect a failure code")
	}
}

func caseBatchDeleteAndChangeVisibility(t caseT, e *env) {
	url := e.queue(t, nil)
	if _, err := e.sendBatch(url, entries(4, func(i int) string { return "m" + strconv.Itoa(i) })); err != nil {
		t.Fatalf("send: %v", err)
	}
	var got []types.Message
	for len(got) < 4 {
		more := e.receive(t, url)
		if len(more) == 0 {
			t.Fatalf("expect 4 messages, got %d", len(got))
		}
		got = append(got, more...)
	}
	del, err := e.api.DeleteMessageBatch(e.ctx(), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: []types.DeleteMessageBatchRequestEntry{
		{Id: aws.String("0"), ReceiptHandle: got[0].ReceiptHandle}, {Id: aws.String("1"), ReceiptHandle: got[1].ReceiptHandle},
	}})
	if err != nil {
		t.Fatalf("delete batch: %v", err)
	}
	equal(t, "deleted", 2, len(del.Successful))
	vis, err := e.api.ChangeMessageVisibilityBatch(e.ctx(), &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(url), Entries: []types.ChangeMessageVisibilityBatchRequestEntry{
		{Id: aws.String("2"), ReceiptHandle: got[2].ReceiptHandle, VisibilityTimeout: 0}, {Id: aws.String("3"), ReceiptHandle: got[3].ReceiptHandle, VisibilityTimeout: 0},
	}})
	if err != nil {
		t.Fatalf("change visibility batch: %v", err)
	}
	equal(t, "released", 2, len(vis.Successful))
	var again []types.Message
	for range 3 {
		again = append(again, e.receive(t, url)...)
	}
	equal(t, "received again", 2, len(again))
}

func caseBatchChangeVisibilityEntryFailure(t caseT, e *env) {
	url := e.queue(t, nil)
	e.send(t, url, "m")
	got := e.receive(t, url)
	out, err := e.api.ChangeMessageVisibilityBatch(e.ctx(), &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(url), Entries: []types.ChangeMessageVisibilityBatchRequestEntry{
		{Id: aws.String("good"), ReceiptHandle: got[0].ReceiptHandle, VisibilityTimeout: 60}, {Id: aws.String("bad"), ReceiptHandle: aws.String("garbage")},
	}})
	if err != nil {
		t.Fatalf("change visibility batch: %v", err)
	}
	equal(t, "successful", 1, len(out.Successful))
	equal(t, "failed", 1, len(out.Failed))
	equal(t, "failed id", "bad", aws.ToString(out.Failed[0].Id))
	equal(t, "sender fault", true, out.Failed[0].SenderFault)
}

func caseBatchSendResultsCarryDigests(t caseT, e *env) {
	url := e.queue(t, nil)
	es := entries(2, func(i int) string { return "m" + strconv.Itoa(i) })
	attrs := map[string]types.MessageAttributeValue{"k": str("String", "v")}
	es[1].MessageAttributes = attrs
	out, err := e.sendBatch(url, es)
	if err != nil || len(out.Successful) != 2 {
		t.Fatalf("send batch: %v", err)
	}
	for _, ok := range out.Successful {
		body, wantAttrs := "m0", ""
		if aws.ToString(ok.Id) == "e1" {
			body, wantAttrs = "m1", sqsrule.MD5OfAttributes(attrs)
		}
		equal(t, "MD5OfMessageBody", sqsrule.MD5OfBody(body), aws.ToString(ok.MD5OfMessageBody))
		equal(t, "MD5OfMessageAttributes", wantAttrs, aws.ToString(ok.MD5OfMessageAttributes))
		if aws.ToString(ok.MessageId) == "" {
			t.Fatal("expect a message id")
		}
	}
}

func caseBatchDeleteIDsNotDistinct(t caseT, e *env) {
	url := e.queue(t, nil)
	e.send(t, url, "m")
	got := e.receive(t, url)
	_, err := e.api.DeleteMessageBatch(e.ctx(), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: []types.DeleteMessageBatchRequestEntry{
		{Id: aws.String("same"), ReceiptHandle: got[0].ReceiptHandle}, {Id: aws.String("same"), ReceiptHandle: got[0].ReceiptHandle},
	}})
	wantType[types.BatchEntryIdsNotDistinct](t, err)
}

func caseBatchDeleteEntryFailure(t caseT, e *env) {
	url := e.queue(t, nil)
	e.send(t, url, "m")
	got := e.receive(t, url)
	out, err := e.api.DeleteMessageBatch(e.ctx(), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: []types.DeleteMessageBatchRequestEntry{
		{Id: aws.String("good"), ReceiptHandle: got[0].ReceiptHandle}, {Id: aws.String("bad"), ReceiptHandle: aws.String("garbage")},
	}})
	if err != nil {
		t.Fatalf("delete batch: %v", err)
	}
	equal(t, "successful", 1, len(out.Successful))
	equal(t, "failed", 1, len(out.Failed))
	equal(t, "failed id", "bad", aws.ToString(out.Failed[0].Id))
	equal(t, "sender fault", true, out.Failed[0].SenderFault)
}
