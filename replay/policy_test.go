package replay

import (
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/backoff"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func dlqMessage(id string, attrs map[string]types.MessageAttributeValue) *types.Message {
	return &types.Message{MessageId: aws.String(id), Body: aws.String("payload"), MessageAttributes: attrs,
		Attributes: map[string]string{"SentTimestamp": "1772366400000"}}
}

func counter(v string) map[string]types.MessageAttributeValue {
	return map[string]types.MessageAttributeValue{DefaultCounterAttribute: {DataType: aws.String("Number"), StringValue: aws.String(v)}}
}

func TestDecideCountsAndEscalates(t *testing.T) {
	p := Policy{MaxAttempts: 3, Backoff: backoff.Exponential{Base: time.Second}}
	cases := []struct {
		counter string
		action  Action
		attempt int
		reason  Reason
	}{
		{"", Replay, 1, ""},
		{"0", Replay, 1, ""},
		{"2", Replay, 3, ""},
		{" 1 ", Replay, 2, ""},
		{"3", Escalate, 4, AttemptsExhausted},
		{"7", Escalate, 8, AttemptsExhausted},
		{"abc", Escalate, 0, InvalidCounter},
		{"-1", Escalate, 0, InvalidCounter},
		{"1.5", Escalate, 0, InvalidCounter},
		{"1e3", Escalate, 0, InvalidCounter},
		{"99999999999", Escalate, 0, InvalidCounter},
		{"9223372036854775808", Escalate, 0, InvalidCounter},
	}
	for _, c := range cases {
		var attrs map[string]types.MessageAttributeValue
		if c.counter != "" {
			attrs = counter(c.counter)
		}
		d := p.Decide(dlqMessage("m-1", attrs), now)
		if d.Action != c.action || d.Reason != c.reason || (c.attempt != 0 && d.Attempt != c.attempt) {
			t.Errorf("counter %q: expect %v attempt %d %q, got %v attempt %d %q (%s)", c.counter, c.action, c.attempt, c.reason, d.Action, d.Attempt, d.Reason, d.Detail)
		}
	}
}

// Decide(nil, now) decides a nil message as an empty one: no counter, so
// the first replay, with the empty message's delay and first-failure time.
// Decide takes whatever a caller's own receive or event handed it, and a
// nil there must get an answer, not a panic on the missing message id.
func TestDecideNilMessageIsAnEmptyMessage(t *testing.T) {
	p := Policy{MaxAttempts: 2}
	got := p.Decide(nil, now)
	want := p.Decide(&types.Message{}, now)
	if got.Action != Replay || got.Attempt != 1 {
		t.Fatalf("expect the first replay, got %+v", got)
	}
	if got.Delay != want.Delay || got.Metadata.FirstFailure != want.Metadata.FirstFailure || got.Delay < 0 || got.Delay > time.Minute {
		t.Fatalf("expect the empty message's decision %+v, got %+v", want, got)
	}
}

// Delays grow with the attempt, and the same message and attempt always get
// the same jittered delay: any replayer instance agrees when a held message
// is due.
func TestDecideDelaysGrowAndRepeat(t *testing.T) {
	p := Policy{MaxAttempts: 10, Backoff: backoff.Exponential{Base: time.Second}}
	var last time.Duration
	for n := range 5 {
		d := p.Decide(dlqMessage("m-1", counter(string(rune('0'+n)))), now)
		if d.Delay <= last {
			t.Fatalf("attempt %d: expect a longer delay than %v, got %v", d.Attempt, last, d.Delay)
		}
		last = d.Delay
	}
	jitter := Policy{MaxAttempts: 10}
	a := jitter.Decide(dlqMessage("m-1", counter("2")), now).Delay
	b := jitter.Decide(dlqMessage("m-1", counter("2")), now.Add(time.Hour)).Delay
	c := jitter.Decide(dlqMessage("m-2", counter("2")), now).Delay
	if a != b {
		t.Fatalf("expect the same delay for the same message and attempt, got %v and %v", a, b)
	}
	if a == c {
		t.Errorf("expect other messages to draw other delays, both got %v", a)
	}
	if cap := (Policy{}).resolved().MaxBackoff; a > cap {
		t.Errorf("expect at most %v, got %v", cap, a)
	}
}

func TestDecorrelatedJitterGrowsFromTheLastDelay(t *testing.T) {
	p := Policy{MaxAttempts: 10, Backoff: backoff.DecorrelatedJitter{Base: time.Second, Cap: time.Hour}}
	md, _ := json.Marshal(Metadata{OriginalID: "m-1", LastDelay: 10 * time.Minute})
	attrs := counter("3")
	attrs[MetadataAttribute] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(string(md))}
	for range 20 {
		d := p.Decide(dlqMessage("new-id", attrs), now)
		if d.Delay < time.Second || d.Delay > 30*time.Minute {
			t.Fatalf("expect U(1s, 3·10m), got %v", d.Delay)
		}
		if d.Metadata.OriginalID != "m-1" || d.Metadata.LastDelay != d.Delay {
			t.Fatalf("expect provenance kept and the new delay recorded, got %+v", d.Metadata)
		}
	}
}

func TestDecideTooLarge(t *testing.T) {
	p := Policy{MaxMessageBytes: 4096}
	m := dlqMessage("m-1", nil)
	m.Body = aws.String(strings.Repeat("x", 3000))
	if d := p.Decide(m, now); d.Action != Escalate || d.Reason != TooLarge {
		t.Fatalf("expect TooLarge, got %+v", d)
	}
}

// tableDelays is a user's table-driven strategy with a bug: it indexes
// past its table from the third replay on. It passes New's checks.
type tableDelays []time.Duration

func (t tableDelays) Delay(attempt int, _ time.Duration) time.Duration { return t[attempt] }

// Decide never panics: a Backoff strategy that panics escalates the message
// (BackoffFailed, its detail naming the replay) instead of crashing the
// Run or Drain worker that called it, which took the process down.
func TestDecideEscalatesWhenTheBackoffPanics(t *testing.T) {
	p := Policy{MaxAttempts: 5, Backoff: tableDelays{time.Second, time.Minute}}
	if d := p.Decide(dlqMessage("m-1", counter("1")), now); d.Action != Replay || d.Delay != time.Minute {
		t.Fatalf("expect replay 2 after a minute, got %+v", d)
	}
	d := p.Decide(dlqMessage("m-1", counter("2")), now)
	if d.Action != Escalate || d.Reason != BackoffFailed || d.Metadata.Reason != BackoffFailed || !strings.Contains(d.Detail, "replay 3") {
		t.Fatalf("expect BackoffFailed on replay 3, got %+v", d)
	}
}

func tenAttributes() map[string]types.MessageAttributeValue {
	attrs := map[string]types.MessageAttributeValue{}
	for _, n := range strings.Split("a b c d e f g h i", " ") {
		attrs[n] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("v-" + n)}
	}
	attrs["z-bin"] = types.MessageAttributeValue{DataType: aws.String("Binary.gz"), BinaryValue: []byte{0, 1, 0xff}}
	return attrs
}

// A message already carrying ten attributes is replayed: one attribute is
// moved into the metadata and Restore gives it back byte for byte.
func TestPackMakesRoomAndRestoreGivesItBack(t *testing.T) {
	user := tenAttributes()
	out, err := pack(user, DefaultCounterAttribute, 2, Metadata{OriginalID: "m-1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 10 {
		t.Fatalf("expect ten attributes, got %d", len(out))
	}
	if _, ok := out["z-bin"]; ok {
		t.Fatal("expect the last attribute by name moved aside")
	}
	md, _ := readMetadata(out, DefaultCounterAttribute)
	if md.Attempt != 2 {
		t.Fatalf("expect the counter kept in the metadata, got %+v", md)
	}
	back := Restore(out, "")
	if len(back) != 10 || string(back["z-bin"].BinaryValue) != "\x00\x01\xff" || aws.ToString(back["z-bin"].DataType) != "Binary.gz" {
		t.Fatalf("expect the ten user attributes back, got %v", back)
	}
	p := Policy{KeepAttributesInPlace: true}
	if d := p.Decide(dlqMessage("m-1", user), now); d.Reason != AttributeBudget {
		t.Fatalf("expect AttributeBudget when attributes stay in place, got %+v", d)
	}
}

// The SQS Extended Client's payload size attribute stays in place when a
// message with ten attributes makes room for the metadata, even when its
// name sorts last: a consumer without Restore (a Java consumer) would
// otherwise hand the S3 pointer to its handler as the body.
func TestPackKeepsThePayloadSizeAttributeInPlace(t *testing.T) {
	for _, size := range []string{"ExtendedPayloadSize", "SQSLargePayloadSize"} {
		user := map[string]types.MessageAttributeValue{
			size: {DataType: aws.String("Number"), StringValue: aws.String("5242880")},
		}
		for _, n := range strings.Split("A1 A2 A3 A4 A5 A6 A7 A8 A9", " ") { // they sort before the size attribute
			user[n] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("v-" + n)}
		}
		out, err := pack(user, DefaultCounterAttribute, 1, Metadata{OriginalID: "m-1"})
		if err != nil {
			t.Fatal(err)
		}
		if aws.ToString(out[size].StringValue) != "5242880" {
			t.Errorf("%s: expect it in place, got attributes %v", size, slices.Sorted(maps.Keys(out)))
		}
		if back := Restore(out, ""); len(back) != 10 {
			t.Errorf("%s: expect the ten user attributes back, got %d", size, len(back))
		}
	}
}

// Compatible with the AWS sample: its counter attribute, Number type, read
// and written.
func TestSampleCounterInterop(t *testing.T) {
	d := Policy{MaxAttempts: 5}.Decide(dlqMessage("m-1", counter("2")), now)
	if d.Action != Replay || d.Attempt != 3 {
		t.Fatalf("expect the sample's counter 2 to make this attempt 3, got %+v", d)
	}
	out, err := pack(userAttributes(counter("2"), DefaultCounterAttribute), DefaultCounterAttribute, d.Attempt, d.Metadata)
	if err != nil {
		t.Fatal(err)
	}
	v := out[DefaultCounterAttribute]
	if aws.ToString(v.DataType) != "Number" || aws.ToString(v.StringValue) != "3" {
		t.Fatalf("expect %s=3 as a Number, got %+v", DefaultCounterAttribute, v)
	}
}

func TestUserAttributesClearsListFields(t *testing.T) {
	in := map[string]types.MessageAttributeValue{"a": {DataType: aws.String("String"), StringValue: aws.String("v"), StringListValues: []string{}, BinaryListValues: [][]byte{}}}
	out := userAttributes(in, DefaultCounterAttribute)
	if out["a"].StringListValues != nil || out["a"].BinaryListValues != nil {
		t.Fatal("expect list fields cleared")
	}
}

func TestPolicyValidate(t *testing.T) {
	for _, p := range []Policy{{MaxAttempts: -2}, {MaxBackoff: -1}, {MaxMessageBytes: 2 << 20}, {CounterAttribute: "AWS.bad"}, {Backoff: backoff.Constant{D: -1}}} {
		if err := p.Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: expect ErrConfig, got %v", p, err)
		}
	}
}

// Metadata the replayer did not write is escalated as InvalidMetadata, and
// the originals travel with the escalation for the human who reads it.
func TestInvalidMetadataKeepsTheOriginals(t *testing.T) {
	attrs := counter("1")
	attrs[MetadataAttribute] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(`{"id":`)}
	attrs["tenant"] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("acme")}
	d := Policy{}.Decide(dlqMessage("m-1", attrs), now)
	if d.Action != Escalate || d.Reason != InvalidMetadata {
		t.Fatalf("expect InvalidMetadata, got %v %q", d.Action, d.Reason)
	}
	out, err := pack(userAttributes(attrs, DefaultCounterAttribute), DefaultCounterAttribute, 0, d.Metadata)
	if err != nil {
		t.Fatal(err)
	}
	back := Restore(out, "")
	if aws.ToString(back[MetadataAttribute].StringValue) != `{"id":` || aws.ToString(back[DefaultCounterAttribute].StringValue) != "1" || aws.ToString(back["tenant"].StringValue) != "acme" {
		t.Fatalf("expect the original metadata, counter and tenant back, got %v", back)
	}
	for _, bad := range []string{`{"sd":-1}`, `{"sd":901000000000}`, `{"prev":-5}`, `{"first":"yesterday"}`, `{"moved":{"tenant":{"t":"String","s":"x"}}}`, `{"moved":{"..":{"t":"String"}}}`, `[]`} {
		attrs[MetadataAttribute] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(bad)}
		delete(attrs, DefaultCounterAttribute)
		if d := (Policy{}).Decide(dlqMessage("m-1", attrs), now); d.Reason != InvalidMetadata {
			t.Errorf("%s: expect InvalidMetadata, got %v %q", bad, d.Action, d.Reason)
		}
	}
}

// A sqskit-replay attribute holding JSON null is invalid metadata, not
// empty metadata: the replayer always writes an object, so null is metadata
// it did not write (forged, or another tool's), and like any such metadata
// Decide escalates it as InvalidMetadata for a human to read. Restore keeps
// the attribute as the producer's own.
func TestNullMetadataIsInvalid(t *testing.T) {
	d := Policy{}.Decide(dlqMessage("m1", map[string]types.MessageAttributeValue{MetadataAttribute: {DataType: aws.String("String"), StringValue: aws.String("null")}}), now)
	if d.Action != Escalate || d.Reason != InvalidMetadata {
		t.Fatalf("expect an InvalidMetadata escalation, got %v %q", d.Action, d.Reason)
	}
	if got := Restore(map[string]types.MessageAttributeValue{MetadataAttribute: {DataType: aws.String("String"), StringValue: aws.String("null")}}, ""); got[MetadataAttribute].StringValue == nil {
		t.Fatalf("expect Restore to keep the producer's own attribute, got %v", got)
	}
}

// With several unreadable fields in the metadata, Decide reports the same
// one every time, and so the same reason (InvalidCounter or
// InvalidMetadata) and detail: two receives of one message must escalate
// the same way, whatever Go's map iteration order.
func TestDecideIsDeterministicWithSeveralBadFields(t *testing.T) {
	m := dlqMessage("m1", map[string]types.MessageAttributeValue{MetadataAttribute: {DataType: aws.String("String"),
		StringValue: aws.String(`{"sd":900000000050,"prev":-1,"n":-4,"first":"then","moved":"x"}`)}})
	first := Policy{}.Decide(m, now)
	for range 50 {
		if d := (Policy{}).Decide(m, now); d.Reason != first.Reason || d.Detail != first.Detail {
			t.Fatalf("expect the same decision every time, got %q (%s), then %q (%s)", first.Reason, first.Detail, d.Reason, d.Detail)
		}
	}
}

// NoReplays is one setting for "escalate without replaying": the first
// receive escalates as AttemptsExhausted, whatever the counter says, and
// the Backoff is never asked.
func TestNoReplaysEscalatesAtOnce(t *testing.T) {
	p := Policy{MaxAttempts: NoReplays, Backoff: backoff.Constant{D: time.Hour}}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, counter := range []string{"", "0", "5"} {
		m := &types.Message{MessageId: aws.String("m-1"), Body: aws.String("x")}
		if counter != "" {
			m.MessageAttributes = map[string]types.MessageAttributeValue{DefaultCounterAttribute: {DataType: aws.String("Number"), StringValue: aws.String(counter)}}
		}
		if d := p.Decide(m, time.Now()); d.Action != Escalate || d.Reason != AttemptsExhausted || d.Delay != 0 {
			t.Errorf("counter %q: expect an escalation as AttemptsExhausted, got %v %q (%s)", counter, d.Action, d.Reason, d.Detail)
		}
	}
}
