package handler

import (
	"context"
	"errors"
	"testing"
)

type order struct {
	ID    string `json:"id"`
	Total int    `json:"total"`
}

// panicCodec is a user codec that panics.
type panicCodec struct{}

func (panicCodec) Decode([]byte, any) error { panic("codec bug") }

// upperCodec is a user codec: the body is the id.
type upperCodec struct{}

func (upperCodec) Decode(b []byte, v any) error {
	o, ok := v.(*order)
	if !ok {
		return errors.New("not an order")
	}
	o.ID = string(b)
	return nil
}

func TestTyped(t *testing.T) {
	cases := []struct {
		name    string
		codec   Codec
		body    string
		wantID  string
		wantErr error
	}{
		{"json by default", nil, `{"id":"o-1","total":3}`, "o-1", nil},
		{"unknown fields accepted", JSONCodec{}, `{"id":"o-1","extra":1}`, "o-1", nil},
		{"unknown fields refused", JSONCodec{DisallowUnknownFields: true}, `{"id":"o-1","extra":1}`, "", ErrDecode},
		{"trailing data refused", JSONCodec{DisallowUnknownFields: true}, `{"id":"o-1"} {}`, "", ErrDecode},
		{"not json", nil, `<order/>`, "", ErrDecode},
		{"wrong type", nil, `{"id":7}`, "", ErrDecode},
		{"user codec", upperCodec{}, `o-9`, "o-9", nil},
		{"codec panics", panicCodec{}, `{}`, "", ErrDecode},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got order
			h := Typed(c.codec, func(_ context.Context, o order, _ *Message) error {
				got = o
				return nil
			})
			err := h(context.Background(), &Message{ID: "m", Body: c.body})
			if !errors.Is(err, c.wantErr) {
				t.Fatalf("expect %v, got %v", c.wantErr, err)
			}
			if c.wantErr != nil {
				if esc := EscalationOf(err); esc == nil || esc.Reason != ReasonDecode {
					t.Errorf("expect Escalate(%q), got %v", ReasonDecode, err)
				}
				return
			}
			if got.ID != c.wantID {
				t.Errorf("expect id %q, got %q", c.wantID, got.ID)
			}
		})
	}
}

func TestTypedHandlerErrorIsNotPermanent(t *testing.T) {
	boom := errors.New("db down")
	h := Typed(nil, func(context.Context, order, *Message) error { return boom })
	err := h(context.Background(), &Message{Body: `{}`})
	if !errors.Is(err, boom) || EscalationOf(err) != nil {
		t.Errorf("expect the handler's own error, retried, got %v", err)
	}
}
