package handler

import (
	"context"
	"testing"
)

// FuzzUnwrapEnvelope: whatever the body, unwrapping never panics; it
// passes a body through unchanged, unwraps it into one that is no
// envelope, or fails with ErrEnvelope leaving the body as received.
func FuzzUnwrapEnvelope(f *testing.F) {
	for _, s := range []string{snsFixture, eventBridgeFixture, `{"id":1}`, `{"Type":"Notification","TopicArn":"t","Message":"{\"Type\":\"Notification\",\"TopicArn\":\"t\",\"Message\":\"x\"}"}`,
		`{"detail-type":"a","source":"b","detail":[]}`, `{"Type":"Notification","TopicArn":"t","Message":"x","MessageAttributes":{"a":{"Type":"Binary","Value":"AA=="}}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		m := &Message{Body: body}
		env, err := UnwrapEnvelope(m)
		switch {
		case err != nil:
			if !is(err, ErrEnvelope) && EscalationOf(err) == nil {
				t.Fatalf("expect ErrEnvelope, got %v", err)
			}
			if m.Body != body {
				t.Fatalf("expect the body untouched on failure")
			}
		case env == nil:
			if m.Body != body {
				t.Fatalf("expect a plain body unchanged")
			}
		default:
			if inner, _, _, _ := unwrap(m.Body); inner != nil {
				t.Fatalf("expect no envelope left inside, got %+v", inner)
			}
		}
	})
}

// FuzzTypedJSON: the JSON codec, strict or not, never panics and either
// decodes or fails with the permanent ErrDecode.
func FuzzTypedJSON(f *testing.F) {
	for _, s := range []string{`{"id":"a","total":1}`, `{"id":1}`, `null`, `{"id":"a"} x`, `[`} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, body string, strict bool) {
		h := Typed(JSONCodec{DisallowUnknownFields: strict}, func(context.Context, order, *Message) error { return nil })
		if err := h(context.Background(), &Message{Body: body}); err != nil && !is(EscalationOf(err).Err, ErrDecode) {
			t.Fatalf("expect nil or ErrDecode, got %v", err)
		}
	})
}
