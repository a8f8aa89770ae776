package replay

import (
	"encoding/json"
	"math/big"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/internal/sqsrule"
)

// The oracles restate the counter's contract apart from the code: a String
// or Number attribute (custom suffix allowed) whose value, spaces trimmed,
// is a whole decimal number from 0 to 1,000,000. SQS holds a data type to
// the message body's characters, so a custom label may hold any of them,
// newlines included ("Number.\n" is a Number): hence (?s).
var (
	counterType  = regexp.MustCompile(`(?s)^(Number|String)(\..+)?$`)
	wholeDecimal = regexp.MustCompile(`^[+-]?[0-9]+$`)
)

func counterOracle(dataType, value string) (n int, ok bool) {
	v := strings.TrimSpace(value)
	if !counterType.MatchString(dataType) || !wholeDecimal.MatchString(v) {
		return 0, false
	}
	b, _ := new(big.Int).SetString(strings.TrimPrefix(v, "+"), 10)
	if b.Sign() < 0 || b.Cmp(big.NewInt(counterSanityLimit)) > 0 {
		return 0, false
	}
	return int(b.Int64()), true
}

var reasons = []Reason{AttemptsExhausted, InvalidCounter, InvalidMetadata, AttributeBudget, TooLarge, NotRoutable, Unsendable}

// FuzzDecide: whatever a DLQ message carries, Decide does not panic, is
// deterministic, replays only within MaxAttempts and MaxBackoff, escalates
// only with a known reason and never quotes the counter's value, and reads
// the counter exactly as the oracle does.
func FuzzDecide(f *testing.F) {
	f.Add("Number", "2", true, "", false, "id-1", uint32(3))
	f.Add("String", " 1 ", true, `{"id":"x","first":"2026-01-01T00:00:00Z","prev":60000000000}`, true, "id-2", uint32(5))
	f.Add("Number.int", "+0007", true, "", false, "id-3", uint32(10))
	f.Add("String", "ZQX many", true, "", false, "", uint32(0))
	f.Add("Binary", "1", true, "", false, "id-4", uint32(3))
	f.Add("", "", false, `{"n":4,"moved":{"a":{"t":"String","s":"v"}}}`, true, "id-5", uint32(3))
	f.Add("Number", "1", true, `{"n":1}`, true, "id-6", uint32(3))
	f.Add("", "", false, `{"sd":900000000000,"prev":-1}`, true, "id-7", uint32(3))
	f.Fuzz(func(t *testing.T, dataType, value string, hasCounter bool, meta string, hasMeta bool, id string, maxAttempts uint32) {
		p := Policy{MaxAttempts: int(maxAttempts % 2000)}
		attrs := map[string]types.MessageAttributeValue{}
		if hasCounter {
			attrs[DefaultCounterAttribute] = types.MessageAttributeValue{DataType: aws.String(dataType), StringValue: aws.String(value)}
		}
		if hasMeta {
			attrs[MetadataAttribute] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(meta)}
		}
		m := &types.Message{MessageId: aws.String(id), Body: aws.String("body"), MessageAttributes: attrs}
		now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		d := p.Decide(m, now)
		if again := p.Decide(m, now); !reflect.DeepEqual(d, again) {
			t.Fatalf("two decisions on one message differ:\n%+v\n%+v", d, again)
		}
		max := p.resolved().MaxAttempts
		switch d.Action {
		case Replay:
			if d.Reason != "" || d.Attempt < 1 || d.Attempt > max || d.Delay < 0 || d.Delay > sqsrule.MaxVisibility {
				t.Fatalf("a replay out of bounds: %+v", d)
			}
		case Escalate:
			if !slices.Contains(reasons, d.Reason) {
				t.Fatalf("an escalation with an unknown reason %q", d.Reason)
			}
		default:
			t.Fatalf("unknown action %v", d.Action)
		}
		if strings.Contains(value, "ZQX") && strings.Contains(d.Detail, "ZQX") {
			t.Fatalf("the detail quotes the counter's value: %q", d.Detail)
		}
		if !hasCounter || hasMeta {
			return
		}
		switch n, ok := counterOracle(dataType, value); {
		case !ok:
			if d.Reason != InvalidCounter {
				t.Fatalf("counter %q %q: expect InvalidCounter, got %v %q", dataType, value, d.Action, d.Reason)
			}
		case n+1 > max:
			if d.Reason != AttemptsExhausted {
				t.Fatalf("counter %d of %d: expect AttemptsExhausted, got %v %q", n, max, d.Action, d.Reason)
			}
		default:
			if d.Action != Replay || d.Attempt != n+1 {
				t.Fatalf("counter %d: expect replay %d, got %v %d %q", n, n+1, d.Action, d.Attempt, d.Reason)
			}
		}
	})
}

// FuzzReadMetadata: any sqskit-replay value either escalates with
// InvalidMetadata or InvalidCounter, or reads as metadata within the
// bounds the replayer trusts (count 0 to 1,000,000, sent delay 0 to 900 s,
// previous delay not negative, moved attributes with valid names and
// types), which survives being written and read again.
func FuzzReadMetadata(f *testing.F) {
	for _, s := range []string{
		`{"id":"a","first":"2026-01-01T00:00:00Z","src":"arn:aws:sqs:us-east-1:123456789012:q","n":2,"prev":1000,"sd":5000000000,"reason":"attempts-exhausted","detail":"d","moved":{"x":{"t":"Binary","b":"AAE="},"y":{"t":"Number.int","s":"5"}}}`,
		`{}`, `null`, `[]`, `{"n":-1}`, `{"sd":1e12}`, `{"moved":{"a..b":{"t":"String","s":"v"}}}`, `{"first":"2026-01-01T00:00:00+05:30"}`, `{"n":1,"n":2}`,
	} {
		f.Add(s, "")
	}
	f.Add(`{"moved":{"x":{"t":"String","s":"v"}}}`, "x")
	f.Fuzz(func(t *testing.T, raw, carried string) {
		attrs := map[string]types.MessageAttributeValue{MetadataAttribute: {DataType: aws.String("String"), StringValue: aws.String(raw)}}
		if carried != "" {
			attrs[carried] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("v")}
		}
		md, bad := readMetadata(attrs, DefaultCounterAttribute)
		if bad != nil {
			if bad.reason != InvalidMetadata && bad.reason != InvalidCounter {
				t.Fatalf("unreadable metadata escalates as %q", bad.reason)
			}
			return
		}
		if md.Attempt < 0 || md.Attempt > counterSanityLimit || md.SentDelay < 0 || md.SentDelay > sqsrule.MaxDelaySeconds*time.Second || md.LastDelay < 0 {
			t.Fatalf("metadata out of bounds: %+v", md)
		}
		for name, a := range md.Moved {
			if sqsrule.CheckAttributeName(name) != nil || sqsrule.BaseDataType(a.DataType) == "" {
				t.Fatalf("moved attribute %q (%q) is not one", name, a.DataType)
			}
			if _, clash := attrs[name]; clash && name != MetadataAttribute && name != DefaultCounterAttribute {
				t.Fatalf("moved attribute %q clashes with one the message carries", name)
			}
		}
		if !utf8.ValidString(raw) {
			return // JSON writes what it read with U+FFFD: not the same bytes
		}
		b, err := json.Marshal(md)
		if err != nil {
			t.Fatalf("metadata that was read cannot be written: %v", err)
		}
		again, bad := readMetadata(map[string]types.MessageAttributeValue{MetadataAttribute: {DataType: aws.String("String"), StringValue: aws.String(string(b))}}, DefaultCounterAttribute)
		if bad != nil {
			t.Fatalf("metadata written by the replayer is refused: %s: %s", b, bad.detail)
		}
		if !again.FirstFailure.Equal(md.FirstFailure) {
			t.Fatalf("first failure changed: %v, then %v", md.FirstFailure, again.FirstFailure)
		}
		again.FirstFailure, md.FirstFailure = time.Time{}, time.Time{}
		if !reflect.DeepEqual(normalMoved(again), normalMoved(md)) {
			t.Fatalf("metadata changed when written and read:\n%+v\n%+v", md, again)
		}
	})
}

// normalMoved drops the difference JSON makes between an empty and a nil
// binary value or moved map.
func normalMoved(md Metadata) Metadata {
	if len(md.Moved) == 0 {
		md.Moved = nil
		return md
	}
	moved := map[string]handler.AttributeValue{}
	for k, v := range md.Moved {
		if len(v.BinaryValue) == 0 {
			v.BinaryValue = nil
		}
		moved[k] = v
	}
	md.Moved = moved
	return md
}

// FuzzPackRestore: pack fits a message's attributes, the counter and the
// metadata within SQS's ten whatever the attributes; Restore gives the
// producer's attributes back exactly; and the counter packed is the counter
// Decide reads back.
func FuzzPackRestore(f *testing.F) {
	f.Add("a,b,c", "v", []byte{1, 2}, uint32(1), int64(0))
	f.Add("a0,a1,a2,a3,a4,a5,a6,a7,a8", "x", []byte{0}, uint32(3), int64(1e9))
	f.Add("z,y,x,w,v,u,t,s,r,traceparent", "00-abc-def-01", []byte{9, 9, 9}, uint32(1000000), int64(-5))
	f.Add("", "", []byte{}, uint32(0), int64(0))
	f.Fuzz(func(t *testing.T, names, value string, binary []byte, attempt uint32, prev int64) {
		value = strings.ToValidUTF8(value, "?")
		if value == "" {
			value = "v"
		}
		if len(binary) == 0 {
			binary = []byte{0}
		}
		user := map[string]types.MessageAttributeValue{}
		for i, name := range strings.Split(names, ",") {
			if len(user) == sqsrule.MaxAttributes || sqsrule.CheckAttributeName(name) != nil || name == DefaultCounterAttribute || name == MetadataAttribute {
				continue
			}
			switch i % 3 {
			case 0:
				user[name] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(value)}
			case 1:
				user[name] = types.MessageAttributeValue{DataType: aws.String("Number.n"), StringValue: aws.String("42")}
			default:
				user[name] = types.MessageAttributeValue{DataType: aws.String("Binary"), BinaryValue: binary}
			}
		}
		n := int(attempt % (counterSanityLimit + 1))
		md := Metadata{OriginalID: "id", FirstFailure: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), LastDelay: time.Duration(max(prev, 0))}
		out, err := pack(user, DefaultCounterAttribute, n, md)
		if err != nil {
			t.Fatalf("pack: %v", err)
		}
		if len(out) > sqsrule.MaxAttributes {
			t.Fatalf("pack made %d attributes", len(out))
		}
		if got := Restore(out, ""); !reflect.DeepEqual(got, user) {
			t.Fatalf("Restore changed the attributes:\n got  %v\n want %v", got, user)
		}
		d := Policy{MaxAttempts: counterSanityLimit}.Decide(&types.Message{MessageId: aws.String("m"), Body: aws.String("b"), MessageAttributes: out}, md.FirstFailure)
		switch {
		case n == counterSanityLimit:
			if d.Reason != AttemptsExhausted {
				t.Fatalf("counter %d: expect AttemptsExhausted, got %v %q", n, d.Action, d.Reason)
			}
		case d.Action != Replay || d.Attempt != n+1:
			t.Fatalf("packed counter %d: expect replay %d, got %v %d %q (%s)", n, n+1, d.Action, d.Attempt, d.Reason, d.Detail)
		}
	})
}
