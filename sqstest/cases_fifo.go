package sqstest

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

func attemptID(id string) func(*sqs.ReceiveMessageInput) {
	return func(in *sqs.ReceiveMessageInput) { in.ReceiveRequestAttemptId = aws.String(id) }
}

// drainFIFO receives and deletes until the queue is empty, returning bodies
// in delivery order.
func (e *env) drainFIFO(t caseT, url string) []string {
	t.Helper()
	var out []string
	for range 100 {
		got := e.receive(t, url)
		if len(got) == 0 {
			return out
		}
		for _, m := range got {
			out = append(out, aws.ToString(m.Body))
			e.delete(t, url, m)
		}
	}
	t.Fatal("queue did not drain in 100 receives")
	return nil
}

func caseFIFOMissingGroupID(t caseT, e *env) {
	_, err := e.api.SendMessage(e.ctx(), &sqs.SendMessageInput{QueueUrl: aws.String(e.fifo(t, nil)), MessageBody: aws.String("x"), MessageDeduplicationId: aws.String("d")})
	e.wantCode(t, err, "MissingParameter")
}

func caseFIFOMissingDedupID(t caseT, e *env) {
	_, err := e.api.SendMessage(e.ctx(), &sqs.SendMessageInput{QueueUrl: aws.String(e.fifo(t, nil)), MessageBody: aws.String("x"), MessageGroupId: aws.String("g")})
	e.wantCode(t, err, "InvalidParameterValue")
}

func caseFIFOPerMessageDelayRefused(t caseT, e *env) {
	_, err := e.api.SendMessage(e.ctx(), &sqs.SendMessageInput{QueueUrl: aws.String(e.fifo(t, nil)), MessageBody: aws.String("x"), MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String("d"), DelaySeconds: 5})
	e.wantCode(t, err, "InvalidParameterValue")
}

func caseFIFOQueueDelayApplies(t caseT, e *env) {
	url := e.fifo(t, map[string]string{"DelaySeconds": "1"})
	e.sendFIFO(t, url, "g", "a")
	equal(t, "before the delay", 0, len(e.receive(t, url)))
	e.advance(seconds(1.5))
	equal(t, "after the delay", 1, len(e.receive(t, url)))
}

func caseFIFOIDCharsetAndLength(t caseT, e *env) {
	url := e.fifo(t, nil)
	for _, tc := range []struct{ g, d string }{{"bad group", "d"}, {"g", "bad dedup"}, {strings.Repeat("g", 129), "d"}, {"g", strings.Repeat("d", 129)}, {"g\u00e9", "d"}} {
		_, err := e.api.SendMessage(e.ctx(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("x"), MessageGroupId: aws.String(tc.g), MessageDeduplicationId: aws.String(tc.d)})
		e.wantCode(t, err, "InvalidParameterValue")
	}
	if _, err := e.api.SendMessage(e.ctx(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("x"), MessageGroupId: aws.String(`!"#$%&'()*+,-./:;<=>?@[\]^_{|}~` + "`"), MessageDeduplicationId: aws.String(strings.Repeat("d", 128))}); err != nil {
		t.Fatalf("expect punctuation and 128 characters to pass: %v", err)
	}
}

func caseFIFOOrderWithinGroup(t caseT, e *env) {
	url := e.fifo(t, nil)
	var want []string
	for i := range 15 {
		b := "m" + strconv.Itoa(i)
		want = append(want, b)
		e.sendFIFO(t, url, "g", b)
	}
	equalSlices(t, "order", want, e.drainFIFO(t, url))
}

func caseFIFOGroupLock(t caseT, e *env) {
	url := e.fifo(t, nil)
	e.sendFIFO(t, url, "a", "a1")
	e.sendFIFO(t, url, "a", "a2")
	e.sendFIFO(t, url, "b", "b1")
	first := e.receive(t, url, maxMessages(1))
	equalSlices(t, "first", []string{"a1"}, bodies(first))
	equalSlices(t, "while a1 is in flight", []string{"b1"}, bodies(e.receive(t, url)))
	e.delete(t, url, first[0])
	equalSlices(t, "after a1 is deleted", []string{"a2"}, bodies(e.receive(t, url)))
}

func caseFIFOReleaseUnblocksGroupInOrder(t caseT, e *env) {
	url := e.fifo(t, nil)
	e.sendFIFO(t, url, "g", "1")
	e.sendFIFO(t, url, "g", "2")
	first := e.receive(t, url, maxMessages(1))
	if err := e.changeVisibility(url, first[0], 0); err != nil {
		t.Fatalf("release: %v", err)
	}
	again := e.receive(t, url, maxMessages(1))
	equalSlices(t, "the released message comes first again", []string{"1"}, bodies(again))
}

func caseFIFOGroupLockedByAnyMessageInFlight(t caseT, e *env) {
	url := e.fifo(t, nil)
	e.sendFIFO(t, url, "g", "1")
	e.sendFIFO(t, url, "g", "2")
	got := e.receive(t, url, maxMessages(2))
	equalSlices(t, "both received", []string{"1", "2"}, bodies(got))
	if err := e.changeVisibility(url, got[0], 0); err != nil {
		t.Fatalf("release: %v", err)
	}
	equal(t, "while 2 is in flight, 1 is not delivered", 0, len(e.receive(t, url)))
	if err := e.changeVisibility(url, got[1], 0); err != nil {
		t.Fatalf("release: %v", err)
	}
	equalSlices(t, "after both are released", []string{"1", "2"}, bodies(e.receive(t, url)))
}

func caseFIFOSeveralPerGroupPerReceive(t caseT, e *env) {
	url := e.fifo(t, nil)
	for i := range 5 {
		e.sendFIFO(t, url, "g", strconv.Itoa(i))
	}
	equalSlices(t, "one receive", []string{"0", "1", "2", "3", "4"}, bodies(e.receive(t, url)))
}

func caseFIFODedupExplicitID(t caseT, e *env) {
	url := e.fifo(t, nil)
	first := e.send(t, url, "one", group("g"), dedup("same"))
	second := e.send(t, url, "two", group("g"), dedup("same"))
	equal(t, "duplicate returns the original id", aws.ToString(first.MessageId), aws.ToString(second.MessageId))
	equalSlices(t, "delivered", []string{"one"}, e.drainFIFO(t, url))
}

func caseFIFODedupContentBased(t caseT, e *env) {
	url := e.fifo(t, map[string]string{"ContentBasedDeduplication": "true"})
	e.send(t, url, "same body", group("g"))
	e.send(t, url, "same body", group("g"), withAttrs(map[string]types.MessageAttributeValue{"differs": str("String", "yes")}))
	got := e.receive(t, url)
	equal(t, "one copy (attributes do not count)", 1, len(got))
	sum := sha256.Sum256([]byte("same body"))
	equal(t, "dedup id is SHA-256 of the body", hex.EncodeToString(sum[:]), got[0].Attributes["MessageDeduplicationId"])
}

func caseFIFODedupSurvivesDelete(t caseT, e *env) {
	url := e.fifo(t, nil)
	e.sendFIFO(t, url, "g", "once")
	equalSlices(t, "first", []string{"once"}, e.drainFIFO(t, url))
	e.sendFIFO(t, url, "g", "once")
	equal(t, "after resend within the window", 0, len(e.receive(t, url)))
}

func caseFIFODedupWindowEnds(t caseT, e *env) {
	url := e.fifo(t, nil)
	e.sendFIFO(t, url, "g", "again")
	e.drainFIFO(t, url)
	e.advance(4*time.Minute + 59*time.Second)
	e.sendFIFO(t, url, "g", "again")
	equal(t, "inside the window", 0, len(e.drainFIFO(t, url)))
	e.advance(2 * time.Second)
	e.sendFIFO(t, url, "g", "again")
	equal(t, "after the window", 1, len(e.drainFIFO(t, url)))
}

func caseFIFODedupScopeMessageGroup(t caseT, e *env) {
	url := e.fifo(t, map[string]string{"DeduplicationScope": "messageGroup", "FifoThroughputLimit": "perMessageGroupId"})
	e.send(t, url, "a", group("g1"), dedup("same"))
	e.send(t, url, "b", group("g2"), dedup("same"))
	e.send(t, url, "c", group("g2"), dedup("same"))
	got := e.drainFIFO(t, url)
	equal(t, "one per group", 2, len(got))
}

func caseFIFODedupScopeQueue(t caseT, e *env) {
	url := e.fifo(t, nil)
	e.send(t, url, "a", group("g1"), dedup("same"))
	e.send(t, url, "b", group("g2"), dedup("same"))
	equal(t, "one per queue", 1, len(e.drainFIFO(t, url)))
}

func caseFIFOSequenceNumbersGrow(t caseT, e *env) {
	url := e.fifo(t, nil)
	a := e.sendFIFO(t, url, "g", "a")
	b := e.sendFIFO(t, url, "g", "b")
	sa, sb := aws.ToString(a.SequenceNumber), aws.ToString(b.SequenceNumber)
	if sa == "" || len(sa) > len(sb) || (len(sa) == len(sb) && sa >= sb) {
		t.Fatalf("expect growing sequence numbers, got %q then %q", sa, sb)
	}
	got := e.receive(t, url, maxMessages(1))
	equal(t, "SequenceNumber attribute", sa, got[0].Attributes["SequenceNumber"])
	equal(t, "MessageGroupId attribute", "g", got[0].Attributes["MessageGroupId"])
}

func caseFIFOAttributes(t caseT, e *env) {
	a := e.attrs(t, e.fifo(t, map[string]string{"ContentBasedDeduplication": "true", "DeduplicationScope": "messageGroup", "FifoThroughputLimit": "perMessageGroupId"}))
	equal(t, "FifoQueue", "true", a["FifoQueue"])
	equal(t, "ContentBasedDeduplication", "true", a["ContentBasedDeduplication"])
	equal(t, "DeduplicationScope", "messageGroup", a["DeduplicationScope"])
	equal(t, "FifoThroughputLimit", "perMessageGroupId", a["FifoThroughputLimit"])
}

func caseFIFOAttemptIDReturnsSameMessages(t caseT, e *env) {
	url := e.fifo(t, nil)
	e.sendFIFO(t, url, "g", "1")
	e.sendFIFO(t, url, "g", "2")
	first := e.receive(t, url, attemptID("attempt-1"))
	retry := e.receive(t, url, attemptID("attempt-1"))
	equalSlices(t, "bodies", bodies(first), bodies(retry))
	for i := range first {
		equal(t, "receipt handle", aws.ToString(first[i].ReceiptHandle), aws.ToString(retry[i].ReceiptHandle))
	}
	equal(t, "receive count unchanged", first[0].Attributes["ApproximateReceiveCount"], retry[0].Attributes["ApproximateReceiveCount"])
}

func caseFIFOAttemptIDInvalidAfterDelete(t caseT, e *env) {
	url := e.fifo(t, nil)
	e.sendFIFO(t, url, "g", "1")
	e.sendFIFO(t, url, "g", "2")
	first := e.receive(t, url, attemptID("attempt-2"), maxMessages(1))
	e.delete(t, url, first[0])
	retry := e.receive(t, url, attemptID("attempt-2"), maxMessages(1))
	equalSlices(t, "a fresh receive after the delete", []string{"2"}, bodies(retry))
}

func caseFIFOAttemptIDWindow(t caseT, e *env) {
	url := e.fifo(t, nil)
	e.sendFIFO(t, url, "g", "1")
	first := e.receive(t, url, attemptID("attempt-3"), visibility(600))
	e.advance(5*time.Minute + time.Second)
	retry := e.receive(t, url, attemptID("attempt-3"))
	equal(t, "past 5 minutes the id is a new receive; the message is still in flight", 0, len(retry))
	equal(t, "first", 1, len(first))
}

func caseFIFODeleteWithExpiredHandle(t caseT, e *env) {
	url := e.fifo(t, nil)
	e.sendFIFO(t, url, "g", "1")
	got := e.receive(t, url, visibility(1))
	e.advance(2 * time.Second)
	_, err := e.api.DeleteMessage(e.ctx(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: got[0].ReceiptHandle})
	e.wantCode(t, err, "InvalidParameterValue")
}

func caseFIFOHighThroughputNeedsGroupScope(t caseT, e *env) {
	out, err := e.api.CreateQueue(e.ctx(), &sqs.CreateQueueInput{QueueName: aws.String(e.queueName("ht.fifo")), Attributes: map[string]string{"FifoQueue": "true", "FifoThroughputLimit": "perMessageGroupId"}})
	if err == nil {
		_, _ = e.api.DeleteQueue(e.ctx(), &sqs.DeleteQueueInput{QueueUrl: out.QueueUrl})
		t.Fatal("expect perMessageGroupId without DeduplicationScope=messageGroup to be refused")
	}
}

func caseFIFOOrderKeptWhenAReceiveMovesMessagesToTheDLQ(t caseT, e *env) {
	// Many moves inside one receive once compacted sqsfake's store in
	// place, skipping a group's head and delivering its successor first.
	dlq := e.fifo(t, nil)
	src := e.fifo(t, map[string]string{"RedrivePolicy": redrivePolicy(t, e, dlq, 2)})
	e.sendFIFO(t, src, "p", "poison")
	e.sendFIFO(t, src, "g", "g1")
	e.sendFIFO(t, src, "g", "g2")
	const fillers = 63
	for i := range fillers {
		e.sendFIFO(t, src, "f"+strconv.Itoa(i), "filler"+strconv.Itoa(i))
	}
	held := map[string]types.Message{}
	for range 40 {
		if len(held) == fillers+3 {
			break
		}
		for _, m := range e.receive(t, src, visibility(600)) {
			held[aws.ToString(m.Body)] = m
		}
	}
	equal(t, "received once", fillers+3, len(held))
	for i := range fillers {
		e.delete(t, src, held["filler"+strconv.Itoa(i)])
	}
	if err := e.changeVisibility(src, held["poison"], 0); err != nil {
		t.Fatalf("release: %v", err)
	}
	again := e.receive(t, src, maxMessages(1), visibility(600))
	equalSlices(t, "poison, second receive", []string{"poison"}, bodies(again))
	for _, m := range []types.Message{again[0], held["g1"], held["g2"]} {
		if err := e.changeVisibility(src, m, 0); err != nil {
			t.Fatalf("release: %v", err)
		}
	}
	got := e.drainFIFO(t, src)
	equalSlices(t, "the group in order after the poison moved", []string{"g1", "g2"}, got)
}

func caseFIFOGroupsInterleaveInSendOrder(t caseT, e *env) {
	url := e.fifo(t, nil)
	for _, b := range []string{"a1", "b1", "a2", "c1", "b2"} {
		e.sendFIFO(t, url, b[:1], b)
	}
	equalSlices(t, "one receive", []string{"a1", "b1", "a2", "c1", "b2"}, bodies(e.receive(t, url)))
}

func caseFIFOContentDedupWithinOneBatch(t caseT, e *env) {
	url := e.fifo(t, map[string]string{"ContentBasedDeduplication": "true"})
	es := entries(2, func(int) string { return "same" })
	for i := range es {
		es[i].MessageGroupId = aws.String("g")
	}
	out, err := e.sendBatch(url, es)
	if err != nil || len(out.Successful) != 2 {
		t.Fatalf("send batch: %v", err)
	}
	equal(t, "delivered", 1, len(e.drainFIFO(t, url)))
}

func caseFIFORedeliveryCountsReceives(t caseT, e *env) {
	url := e.fifo(t, nil)
	e.sendFIFO(t, url, "g", "m")
	for want := 1; want <= 3; want++ {
		got := e.receive(t, url)
		equal(t, "received", 1, len(got))
		equal(t, "ApproximateReceiveCount", strconv.Itoa(want), got[0].Attributes["ApproximateReceiveCount"])
		if err := e.changeVisibility(url, got[0], 0); err != nil {
			t.Fatalf("release: %v", err)
		}
	}
}

func caseFIFOBatchSendKeepsOrder(t caseT, e *env) {
	url := e.fifo(t, nil)
	es := entries(10, func(i int) string { return "m" + strconv.Itoa(i) })
	for i := range es {
		es[i].MessageGroupId = aws.String("g")
		es[i].MessageDeduplicationId = es[i].Id
	}
	out, err := e.sendBatch(url, es)
	if err != nil || len(out.Successful) != 10 {
		t.Fatalf("send batch: %v, %d ok", err, len(out.Successful))
	}
	got := e.drainFIFO(t, url)
	for i, b := range got {
		equal(t, "position "+strconv.Itoa(i), "m"+strconv.Itoa(i), b)
	}
	equal(t, "delivered", 10, len(got))
}

func caseFIFODedupScopeQueueIsTheDefault(t caseT, e *env) {
	equal(t, "default DeduplicationScope", "queue", e.attrs(t, e.fifo(t, nil), "DeduplicationScope")["DeduplicationScope"])
	a := e.attrs(t, e.fifo(t, map[string]string{"DeduplicationScope": "queue", "FifoThroughputLimit": "perQueue"}))
	equal(t, "DeduplicationScope set to queue", "queue", a["DeduplicationScope"])
}

func caseFIFOBatchEntryWithoutGroupFailsTheRequest(t caseT, e *env) {
	url := e.fifo(t, nil)
	out, err := e.sendBatch(url, []types.SendMessageBatchRequestEntry{
		{Id: aws.String("a"), MessageBody: aws.String("a"), MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String("a")},
		{Id: aws.String("b"), MessageBody: aws.String("b"), MessageDeduplicationId: aws.String("b")},
	})
	if err == nil {
		t.Fatalf("expect the request refused, got Successful %d Failed %d", len(out.Successful), len(out.Failed))
	}
	e.wantCode(t, err, "MissingParameter")
	equal(t, "messages stored", 0, len(e.drainFIFO(t, url)))
}

func caseFIFOBatchEntryWithoutDedupIDFailsTheRequest(t caseT, e *env) {
	url := e.fifo(t, nil)
	out, err := e.sendBatch(url, []types.SendMessageBatchRequestEntry{
		{Id: aws.String("a"), MessageBody: aws.String("a"), MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String("a")},
		{Id: aws.String("b"), MessageBody: aws.String("b"), MessageGroupId: aws.String("g")},
	})
	if err == nil {
		t.Fatalf("expect the request refused, got Successful %d Failed %d", len(out.Successful), len(out.Failed))
	}
	e.wantCode(t, err, "InvalidParameterValue")
	equal(t, "messages stored", 0, len(e.drainFIFO(t, url)))
}
