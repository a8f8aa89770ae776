package sqstest

import (
	"bytes"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/internal/sqsrule"
)

func str(dt, v string) types.MessageAttributeValue {
	return types.MessageAttributeValue{DataType: aws.String(dt), StringValue: aws.String(v)}
}

func bin(dt string, v []byte) types.MessageAttributeValue {
	return types.MessageAttributeValue{DataType: aws.String(dt), BinaryValue: v}
}

func withAttrs(a map[string]types.MessageAttributeValue) func(*sqs.SendMessageInput) {
	return func(in *sqs.SendMessageInput) { in.MessageAttributes = a }
}

func caseMessageSendReceiveDelete(t caseT, e *env) {
	url := e.queue(t, nil)
	body := "hello, sqs ✓ \t\n"
	sent := e.send(t, url, body)
	equal(t, "MD5OfMessageBody", sqsrule.MD5OfBody(body), aws.ToString(sent.MD5OfMessageBody))
	got := e.receive(t, url)
	equal(t, "received", 1, len(got))
	equal(t, "body", body, aws.ToString(got[0].Body))
	equal(t, "message id", aws.ToString(sent.MessageId), aws.ToString(got[0].MessageId))
	equal(t, "MD5OfBody", sqsrule.MD5OfBody(body), aws.ToString(got[0].MD5OfBody))
	e.delete(t, url, got[0])
	v, f, _ := e.counts(t, url)
	equal(t, "left", 0, v+f)
}

func caseMessageEmptyReceiveReturnsAtOnce(t caseT, e *env) {
	equal(t, "received", 0, len(e.receive(t, e.queue(t, nil))))
}

func caseMessageIDsAreUnique(t caseT, e *env) {
	url := e.queue(t, nil)
	seen := map[string]bool{}
	for i := range 20 {
		id := aws.ToString(e.send(t, url, "m"+strconv.Itoa(i)).MessageId)
		if id == "" || seen[id] {
			t.Fatalf("expect a new message id, got %q", id)
		}
		seen[id] = true
	}
}

func caseMessageAttributesRoundTrip(t caseT, e *env) {
	url := e.queue(t, nil)
	attrs := map[string]types.MessageAttributeValue{
		"s":          str("String", "text ✓"),
		"n":          str("Number", "-12.5e3"),
		"b":          bin("Binary", []byte{0, 1, 2, 0xff, 0xfe}),
		"custom-num": str("Number.int", "42"),
		"custom.str": str("String.json", `{"a":1}`),
		"custom_bin": bin("Binary.gzip", []byte{0x1f, 0x8b, 0}),
	}
	sent := e.send(t, url, "body", withAttrs(attrs))
	equal(t, "MD5OfMessageAttributes on send", sqsrule.MD5OfAttributes(attrs), aws.ToString(sent.MD5OfMessageAttributes))
	got := e.receive(t, url)
	equal(t, "received", 1, len(got))
	equal(t, "MD5OfMessageAttributes on receive", sqsrule.MD5OfAttributes(attrs), aws.ToString(got[0].MD5OfMessageAttributes))
	equal(t, "attribute count", len(attrs), len(got[0].MessageAttributes))
	for name, want := range attrs {
		v := got[0].MessageAttributes[name]
		equal(t, name+" type", aws.ToString(want.DataType), aws.ToString(v.DataType))
		equal(t, name+" string", aws.ToString(want.StringValue), aws.ToString(v.StringValue))
		if !bytes.Equal(want.BinaryValue, v.BinaryValue) {
			t.Fatalf("%s binary: expect %x, got %x", name, want.BinaryValue, v.BinaryValue)
		}
	}
}

func caseMessageAttributeSelection(t caseT, e *env) {
	url := e.queue(t, nil)
	e.send(t, url, "body", withAttrs(map[string]types.MessageAttributeValue{
		"trace.id": str("String", "1"), "trace.span": str("String", "2"), "other": str("String", "3"),
	}))
	got := e.receive(t, url, func(in *sqs.ReceiveMessageInput) { in.MessageAttributeNames = []string{"trace.*"} })
	equal(t, "received", 1, len(got))
	equal(t, "selected by prefix", 2, len(got[0].MessageAttributes))
	if _, ok := got[0].MessageAttributes["other"]; ok {
		t.Fatal("expect attribute other not to be returned")
	}
}

func caseMessageNoAttributesUnlessAsked(t caseT, e *env) {
	url := e.queue(t, nil)
	e.send(t, url, "body", withAttrs(map[string]types.MessageAttributeValue{"a": str("String", "1")}))
	got := e.receive(t, url, func(in *sqs.ReceiveMessageInput) {
		in.MessageAttributeNames = nil
		in.MessageSystemAttributeNames = nil
	})
	equal(t, "received", 1, len(got))
	equal(t, "message attributes", 0, len(got[0].MessageAttributes))
	if _, ok := got[0].Attributes["SentTimestamp"]; ok {
		t.Fatal("expect no system attributes when none were asked for")
	}
}

func caseMessageSystemAttributes(t caseT, e *env) {
	url := e.queue(t, nil)
	e.send(t, url, "body")
	got := e.receive(t, url)
	equal(t, "received", 1, len(got))
	a := got[0].Attributes
	equal(t, "ApproximateReceiveCount", "1", a["ApproximateReceiveCount"])
	for _, k := range []string{"SentTimestamp", "ApproximateFirstReceiveTimestamp"} {
		ms, err := strconv.ParseInt(a[k], 10, 64)
		if err != nil || ms <= 0 {
			t.Fatalf("expect %s in epoch milliseconds, got %q", k, a[k])
		}
	}
	only := e.receive(t, url, func(in *sqs.ReceiveMessageInput) {
		in.MessageSystemAttributeNames = []types.MessageSystemAttributeName{types.MessageSystemAttributeNameApproximateReceiveCount}
	})
	equal(t, "received while in flight", 0, len(only))
}

func caseMessageReceiveCountAndHandleChangeOnRedelivery(t caseT, e *env) {
	url := e.queue(t, nil)
	e.send(t, url, "body")
	first := e.receive(t, url, visibility(1))
	equal(t, "first receive", 1, len(first))
	e.advance(seconds(1.5))
	second := e.receive(t, url, visibility(1))
	equal(t, "second receive", 1, len(second))
	equal(t, "ApproximateReceiveCount", "2", second[0].Attributes["ApproximateReceiveCount"])
	equal(t, "first receive timestamp kept", first[0].Attributes["ApproximateFirstReceiveTimestamp"], second[0].Attributes["ApproximateFirstReceiveTimestamp"])
	if aws.ToString(first[0].ReceiptHandle) == aws.ToString(second[0].ReceiptHandle) {
		t.Fatal("expect a new receipt handle on every receive")
	}
}

func caseMessageRetentionExpiry(t caseT, e *env) {
	url := e.queue(t, map[string]string{"MessageRetentionPeriod": "60"})
	e.send(t, url, "old")
	e.advance(59 * time.Second)
	e.send(t, url, "new")
	e.advance(2 * time.Second)
	equalSlices(t, "bodies", []string{"new"}, bodies(e.receive(t, url)))
}

func caseMessageTraceHeaderSystemAttribute(t caseT, e *env) {
	url := e.queue(t, nil)
	const header = "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1"
	e.send(t, url, "body", func(in *sqs.SendMessageInput) {
		in.MessageSystemAttributes = map[string]types.MessageSystemAttributeValue{"AWSTraceHeader": {DataType: aws.String("String"), StringValue: aws.String(header)}}
	})
	got := e.receive(t, url)
	equal(t, "received", 1, len(got))
	equal(t, "AWSTraceHeader", header, got[0].Attributes["AWSTraceHeader"])
}

func caseMessageMD5OfSystemAttributes(t caseT, e *env) {
	url := e.queue(t, nil)
	system := map[string]types.MessageSystemAttributeValue{"AWSTraceHeader": {DataType: aws.String("String"), StringValue: aws.String("Root=1-5759e988-bd862e3fe1be46a994272793")}}
	sent := e.send(t, url, "body", func(in *sqs.SendMessageInput) { in.MessageSystemAttributes = system })
	equal(t, "MD5OfMessageSystemAttributes", sqsrule.MD5OfSystemAttributes(system), aws.ToString(sent.MD5OfMessageSystemAttributes))
	plain := e.send(t, url, "body")
	equal(t, "MD5OfMessageSystemAttributes without any", "", aws.ToString(plain.MD5OfMessageSystemAttributes))
}

func caseMessageBatchMD5OfSystemAttributes(t caseT, e *env) {
	url := e.queue(t, nil)
	system := map[string]types.MessageSystemAttributeValue{"AWSTraceHeader": {DataType: aws.String("String"), StringValue: aws.String("Root=1-abc;Sampled=0")}}
	es := entries(2, func(i int) string { return "m" + strconv.Itoa(i) })
	es[0].MessageSystemAttributes = system
	out, err := e.sendBatch(url, es)
	if err != nil || len(out.Successful) != 2 {
		t.Fatalf("send batch: %v", err)
	}
	for _, ok := range out.Successful {
		want := ""
		if aws.ToString(ok.Id) == "e0" {
			want = sqsrule.MD5OfSystemAttributes(system)
		}
		equal(t, "MD5OfMessageSystemAttributes of "+aws.ToString(ok.Id), want, aws.ToString(ok.MD5OfMessageSystemAttributes))
	}
}

func caseMessageOnlyTraceHeaderMayBeSent(t caseT, e *env) {
	_, err := e.api.SendMessage(e.ctx(), &sqs.SendMessageInput{QueueUrl: aws.String(e.queue(t, nil)), MessageBody: aws.String("x"),
		MessageSystemAttributes: map[string]types.MessageSystemAttributeValue{"SenderId": {DataType: aws.String("String"), StringValue: aws.String("me")}}})
	if err == nil {
		t.Fatal("expect a system attribute other than AWSTraceHeader to be refused")
	}
}

func caseMessageBinaryAttributeEveryByte(t caseT, e *env) {
	url := e.queue(t, nil)
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	e.send(t, url, "body", withAttrs(map[string]types.MessageAttributeValue{"bytes": bin("Binary", all)}))
	got := e.receive(t, url)
	equal(t, "received", 1, len(got))
	if !bytes.Equal(all, got[0].MessageAttributes["bytes"].BinaryValue) {
		t.Fatalf("expect every byte value back, got %x", got[0].MessageAttributes["bytes"].BinaryValue)
	}
}

func caseMessageMD5CoversTheReturnedAttributes(t caseT, e *env) {
	url := e.queue(t, nil)
	e.send(t, url, "body", withAttrs(map[string]types.MessageAttributeValue{"keep": str("String", "1"), "drop": str("String", "2")}))
	got := e.receive(t, url, func(in *sqs.ReceiveMessageInput) { in.MessageAttributeNames = []string{"keep"} })
	equal(t, "received", 1, len(got))
	want := sqsrule.MD5OfAttributes(map[string]types.MessageAttributeValue{"keep": str("String", "1")})
	equal(t, "MD5OfMessageAttributes", want, aws.ToString(got[0].MD5OfMessageAttributes))
}

func caseMessageEveryBodyCharacterRoundTrips(t caseT, e *env) {
	url := e.queue(t, nil)
	body := "quote \" backslash \\ slash / tab \t cr \r lf \n <html>&amp; \u2028 \u00e9 \U0001F600 \uE000 \uFFFD"
	e.send(t, url, body)
	got := e.receive(t, url)
	equal(t, "received", 1, len(got))
	equal(t, "body", body, aws.ToString(got[0].Body))
	equal(t, "MD5OfBody", sqsrule.MD5OfBody(body), aws.ToString(got[0].MD5OfBody))
}

func caseMessageStandardAcceptsGroupIDAsFairQueueTenant(t caseT, e *env) {
	url := e.queue(t, nil)
	e.send(t, url, "body", group("tenant-1"))
	got := e.receive(t, url)
	equal(t, "received", 1, len(got))
}

func caseMessageStandardRefusesDedupID(t caseT, e *env) {
	_, err := e.api.SendMessage(e.ctx(), &sqs.SendMessageInput{QueueUrl: aws.String(e.queue(t, nil)), MessageBody: aws.String("x"), MessageDeduplicationId: aws.String("d")})
	e.wantCode(t, err, "InvalidParameterValue")
}
