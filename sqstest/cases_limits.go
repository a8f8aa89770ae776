package sqstest

import (
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

func (e *env) sendErr(url, body string, attrs map[string]types.MessageAttributeValue) error {
	_, err := e.api.SendMessage(e.ctx(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body), MessageAttributes: attrs})
	return err
}

func caseLimitsBodyCharacters(t caseT, e *env) {
	url := e.queue(t, nil)
	for _, body := range []string{"nul\x00", "bell\x07", "\uFFFE"} {
		wantType[types.InvalidMessageContents](t, e.sendErr(url, body, nil))
	}
	if err := e.sendErr(url, "tab\tnewline\ncr\r \uE000 \uD7FF", nil); err != nil {
		t.Fatalf("expect allowed characters to pass: %v", err)
	}
}

func caseLimitsSupplementaryCharacters(t caseT, e *env) {
	url := e.queue(t, nil)
	body := "emoji \U0001F600 and \U0010FFFD"
	if err := e.sendErr(url, body, nil); err != nil {
		t.Fatalf("expect characters #x10000-#x10FFFF to pass: %v", err)
	}
	equalSlices(t, "body", []string{body}, bodies(e.receive(t, url)))
}

func caseLimitsEmptyBody(t caseT, e *env) {
	if err := e.sendErr(e.queue(t, nil), "", nil); err == nil {
		t.Fatal("expect an empty body to be refused")
	}
}

func caseLimitsMessageSize(t caseT, e *env) {
	url := e.queue(t, nil)
	size, _ := strconv.Atoi(e.attrs(t, url)["MaximumMessageSize"])
	e.wantCode(t, e.sendErr(url, strings.Repeat("x", size+1), nil), "InvalidParameterValue")
	if err := e.sendErr(url, strings.Repeat("x", size), nil); err != nil {
		t.Fatalf("expect a body of exactly %d bytes to pass: %v", size, err)
	}
}

func caseLimitsSizeCountsAttributes(t caseT, e *env) {
	url := e.queue(t, map[string]string{"MaximumMessageSize": "1024"})
	attrs := map[string]types.MessageAttributeValue{"name": str("String", "value")} // 4 + 6 + 5 bytes
	e.wantCode(t, e.sendErr(url, strings.Repeat("x", 1024-14), attrs), "InvalidParameterValue")
	if err := e.sendErr(url, strings.Repeat("x", 1024-15), attrs); err != nil {
		t.Fatalf("expect exactly 1024 bytes with attributes to pass: %v", err)
	}
}

func caseLimitsQueueMaximumMessageSize(t caseT, e *env) {
	url := e.queue(t, map[string]string{"MaximumMessageSize": "1024"})
	e.wantCode(t, e.sendErr(url, strings.Repeat("x", 1025), nil), "InvalidParameterValue")
}

func caseLimitsTenAttributes(t caseT, e *env) {
	url := e.queue(t, nil)
	attrs := map[string]types.MessageAttributeValue{}
	for i := range 10 {
		attrs["a"+strconv.Itoa(i)] = str("String", "v")
	}
	if err := e.sendErr(url, "ten", attrs); err != nil {
		t.Fatalf("expect ten attributes to pass: %v", err)
	}
	attrs["eleventh"] = str("String", "v")
	e.wantCode(t, e.sendErr(url, "eleven", attrs), "InvalidParameterValue")
}

func caseLimitsAttributeNames(t caseT, e *env) {
	url := e.queue(t, nil)
	for _, name := range []string{"AWS.reserved", "amazon.reserved", ".lead", "trail.", "two..dots", "bad name", strings.Repeat("n", 257)} {
		if err := e.sendErr(url, "x", map[string]types.MessageAttributeValue{name: str("String", "v")}); err == nil {
			t.Fatalf("expect attribute name %q to be refused", name)
		}
	}
	if err := e.sendErr(url, "x", map[string]types.MessageAttributeValue{"Ok_name-1.2": str("String", "v")}); err != nil {
		t.Fatalf("expect a valid name to pass: %v", err)
	}
}

func caseLimitsNumberRange(t caseT, e *env) {
	url := e.queue(t, nil)
	for _, n := range []string{"1E+200", "1.5E+126", "1E-129", "-1E+127"} {
		e.wantCode(t, e.sendErr(url, "x", map[string]types.MessageAttributeValue{"n": str("Number", n)}), "InvalidParameterValue")
	}
	for _, n := range []string{"1E+126", "-1E+126", "1E-128", "0", "0E+300"} {
		if err := e.sendErr(url, "x", map[string]types.MessageAttributeValue{"n": str("Number", n)}); err != nil {
			t.Fatalf("expect Number %s to pass: %v", n, err)
		}
	}
}

func caseLimitsNumberPrecision(t caseT, e *env) {
	url := e.queue(t, nil)
	if err := e.sendErr(url, "x", map[string]types.MessageAttributeValue{"n": str("Number", strings.Repeat("9", 38))}); err != nil {
		t.Fatalf("expect 38 digits to pass: %v", err)
	}
	e.wantCode(t, e.sendErr(url, "x", map[string]types.MessageAttributeValue{"n": str("Number", strings.Repeat("9", 39))}), "InvalidParameterValue")
}

func caseLimitsBatchEntryIDLength(t caseT, e *env) {
	url := e.queue(t, nil)
	es := entries(1, func(int) string { return "m" })
	es[0].Id = aws.String(strings.Repeat("i", 80))
	if _, err := e.sendBatch(url, es); err != nil {
		t.Fatalf("expect an 80-character id to pass: %v", err)
	}
	es[0].Id = aws.String(strings.Repeat("i", 81))
	_, err := e.sendBatch(url, es)
	wantType[types.InvalidBatchEntryId](t, err)
}

func caseLimitsDataTypeSuffix(t caseT, e *env) {
	url := e.queue(t, nil)
	if err := e.sendErr(url, "x", map[string]types.MessageAttributeValue{"n": str("String.", "v")}); err == nil {
		t.Fatal("expect a data type with an empty suffix to be refused")
	}
	if err := e.sendErr(url, "x", map[string]types.MessageAttributeValue{"n": str("String.custom-1", "v")}); err != nil {
		t.Fatalf("expect a custom suffix to pass: %v", err)
	}
}

func caseLimitsAttributeValues(t caseT, e *env) {
	url := e.queue(t, nil)
	bad := map[string]types.MessageAttributeValue{
		"empty-string":  str("String", ""),
		"not-a-number":  str("Number", "twelve"),
		"no-type":       {StringValue: aws.String("v")},
		"unknown-type":  str("Text", "v"),
		"empty-binary":  bin("Binary", []byte{}),
		"string-list":   {DataType: aws.String("String"), StringValue: aws.String("v"), StringListValues: []string{"a"}},
		"binary-string": {DataType: aws.String("Binary"), StringValue: aws.String("v")},
	}
	for name, v := range bad {
		if err := e.sendErr(url, "x", map[string]types.MessageAttributeValue{name: v}); err == nil {
			t.Fatalf("expect attribute %s to be refused", name)
		}
	}
}
