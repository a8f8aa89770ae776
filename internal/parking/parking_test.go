package parking

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/sqskit/sqskit/handler"
)

func message(id, body string, system map[string]string, attrs map[string]types.MessageAttributeValue) *types.Message {
	return &types.Message{MessageId: aws.String(id), Body: aws.String(body), Attributes: system, MessageAttributes: attrs}
}

func TestBuildForms(t *testing.T) {
	attrs := map[string]types.MessageAttributeValue{"tenant": {DataType: aws.String("String"), StringValue: aws.String("acme")}}
	o := Outgoing{Message: message("m-1", "b", map[string]string{"AWSTraceHeader": "Root=1-abc"}, attrs), Target: "https://q/operator",
		Escalation: true, CounterAttribute: DefaultCounterAttribute, Count: 2, Metadata: Metadata{OriginalID: "m-1", Reason: "x"},
		MaxMessageBytes: 1 << 20}
	for _, tc := range []struct {
		form        Form
		inPlace     bool
		metadata    bool
		traceHeader bool
	}{
		{FormWhole, true, true, true},
		{FormAttributesAside, false, true, true},
		{FormAttributesLeftOut, false, true, false},
		{FormBodyOnly, false, false, false},
	} {
		m, _, err := o.Build(tc.form)
		if err != nil {
			t.Fatal(err)
		}
		_, inPlace := m.Attributes["tenant"]
		_, md := m.Attributes[MetadataAttribute]
		if inPlace != tc.inPlace || md != tc.metadata || (m.TraceHeader != "") != tc.traceHeader || m.Body != "b" {
			t.Errorf("form %d: expect attribute %v, metadata %v, trace %v, got %+v", tc.form, tc.inPlace, tc.metadata, tc.traceHeader, m)
		}
		if tc.form == FormAttributesLeftOut && !strings.Contains(aws.ToString(m.Attributes[MetadataAttribute].StringValue), "attributes left out: tenant") {
			t.Errorf("expect the detail to name what is left out, got %v", m.Attributes)
		}
	}
}

func TestBuildOnFIFO(t *testing.T) {
	o := Outgoing{Message: message("m-1", "b", nil, nil), Target: "https://q/operator.fifo", Escalation: true, MaxMessageBytes: 1 << 20}
	m, _, err := o.Build(FormWhole)
	if err != nil {
		t.Fatal(err)
	}
	again, _, _ := o.Build(FormBodyOnly)
	if m.GroupID != EscalationGroup || m.DeduplicationID == "" || m.DeduplicationID != again.DeduplicationID {
		t.Fatalf("expect the escalations' group and one dedup id per message, got %+v and %+v", m, again)
	}
	o.Message = message("m-2", "b", map[string]string{"MessageGroupId": "g"}, nil)
	other, _, _ := o.Build(FormWhole)
	if other.GroupID != "g" || other.DeduplicationID == m.DeduplicationID {
		t.Fatalf("expect the message's group and its own dedup id, got %+v", other)
	}
	o.Escalation = false
	if replay, _, _ := o.Build(FormWhole); replay.DeduplicationID == other.DeduplicationID {
		t.Fatal("expect a replay and an escalation of one message to have different dedup ids")
	}
}

func TestBuildRefusesWhatSQSWould(t *testing.T) {
	o := Outgoing{Message: message("m-1", "bad\x00", nil, nil), Target: "q", MaxMessageBytes: 1 << 20}
	if _, reason, err := o.Build(FormBodyOnly); err == nil || reason != Unsendable {
		t.Fatalf("expect Unsendable, got %q, %v", reason, err)
	}
	o = Outgoing{Message: message("m-1", strings.Repeat("x", 2000), nil, nil), Target: "q", MaxMessageBytes: 2000}
	if _, reason, err := o.Build(FormWhole); err == nil || reason != TooLarge {
		t.Fatalf("expect TooLarge, got %q, %v", reason, err)
	}
}

func TestHoldSeconds(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want int32
	}{
		{-time.Second, 0}, {0, 0}, {time.Millisecond, 1}, {time.Second, 1}, {1500 * time.Millisecond, 2}, {13 * time.Hour, 43200},
	} {
		if got := HoldSeconds(tc.d); got != tc.want {
			t.Errorf("%v: expect %d, got %d", tc.d, tc.want, got)
		}
	}
}

func TestCounter(t *testing.T) {
	num := func(v string) map[string]types.MessageAttributeValue {
		return map[string]types.MessageAttributeValue{DefaultCounterAttribute: {DataType: aws.String("Number"), StringValue: aws.String(v)}}
	}
	if n, ok, err := Counter(num(" 3 "), DefaultCounterAttribute); n != 3 || !ok || err != nil {
		t.Fatalf("expect 3, got %d %v %v", n, ok, err)
	}
	if _, ok, err := Counter(nil, DefaultCounterAttribute); ok || err != nil {
		t.Fatalf("expect none, got %v %v", ok, err)
	}
	for _, bad := range []string{"x", "-1", "1.5", "1000001"} {
		if _, _, err := Counter(num(bad), DefaultCounterAttribute); err == nil {
			t.Errorf("%s: expect an error", bad)
		}
	}
}

// Messages parked by earlier releases carry moved attributes under short
// keys (t, s, b); they read the same, and are written the same way, now
// that a moved attribute is a handler.AttributeValue.
func TestMovedAttributesKeepTheirWireFormat(t *testing.T) {
	const wire = `{"id":"m-1","first":"2026-01-02T03:04:05Z","moved":{"bin":{"t":"Binary","b":"AQI="},"num":{"t":"Number.int","s":"7"}}}`
	want := map[string]handler.AttributeValue{
		"bin": {DataType: "Binary", BinaryValue: []byte{1, 2}},
		"num": {DataType: "Number.int", StringValue: "7"},
	}
	attrs := map[string]types.MessageAttributeValue{MetadataAttribute: {DataType: aws.String("String"), StringValue: aws.String(wire)}}
	md, bad := Read(attrs, DefaultCounterAttribute)
	if bad != nil || md.OriginalID != "m-1" || !reflect.DeepEqual(md.Moved, want) {
		t.Fatalf("Read: expect the moved attributes, got %+v, %v", md, bad)
	}
	var viaJSON Metadata
	if err := json.Unmarshal([]byte(wire), &viaJSON); err != nil || !reflect.DeepEqual(viaJSON, md) {
		t.Fatalf("json.Unmarshal: expect what Read gives, got %+v, %v", viaJSON, err)
	}
	out, err := json.Marshal(md)
	if err != nil || string(out) != wire {
		t.Fatalf("json.Marshal: expect\n%s, got\n%s, %v", wire, out, err)
	}
	restored := Restore(attrs, "")
	if v := restored["bin"]; aws.ToString(v.DataType) != "Binary" || !reflect.DeepEqual(v.BinaryValue, []byte{1, 2}) {
		t.Errorf("Restore: expect the binary attribute back, got %+v", v)
	}
	if v := restored["num"]; aws.ToString(v.DataType) != "Number.int" || aws.ToString(v.StringValue) != "7" {
		t.Errorf("Restore: expect the number attribute back, got %+v", v)
	}
}
