package handler

import (
	"context"
	"errors"
	"testing"
)

type cancellation struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

func TestRouter(t *testing.T) {
	var placed, cancelled []string
	h, err := NewRouter(FirstType(TypeAttribute("type"), TypeSubject(), TypeDetailType()),
		On("order.placed", func(_ context.Context, o order, _ *Message) error {
			placed = append(placed, o.ID)
			return nil
		}),
		On("order.cancelled", func(_ context.Context, c cancellation, _ *Message) error {
			cancelled = append(cancelled, c.ID)
			return nil
		}),
	)
	if err != nil {
		t.Fatal(err)
	}
	h = Chain(h, Envelopes())
	ok := []*Message{
		{Body: `{"id":"a"}`, MessageAttributes: map[string]AttributeValue{"type": {DataType: "String", StringValue: "order.placed"}}},
		{Body: snsFixture},         // SNS attribute "type"
		{Body: eventBridgeFixture}, // detail-type
		{Body: `{"id":"d"}`, MessageAttributes: map[string]AttributeValue{"type": {DataType: "String.custom", StringValue: "order.cancelled"}}},
	}
	for _, m := range ok {
		if err := h(context.Background(), m); err != nil {
			t.Fatalf("expect %q routed, got %v", m.Body, err)
		}
	}
	if len(placed) != 2 || placed[0] != "a" || placed[1] != "o-1" || len(cancelled) != 2 || cancelled[0] != "o-2" || cancelled[1] != "d" {
		t.Errorf("expect placed [a o-1] and cancelled [o-2 d], got %v and %v", placed, cancelled)
	}

	bad := map[string]*Message{
		"unknown type":   {Body: `{}`, MessageAttributes: map[string]AttributeValue{"type": {DataType: "String", StringValue: "order.lost"}}},
		"no type":        {Body: `{}`},
		"number type":    {Body: `{}`, MessageAttributes: map[string]AttributeValue{"type": {DataType: "Number", StringValue: "1"}}},
		"binary type":    {Body: `{}`, MessageAttributes: map[string]AttributeValue{"type": {DataType: "Binary", BinaryValue: []byte("order.placed")}}},
		"subject no sns": {Body: `{"Subject":"order.placed"}`},
	}
	for name, m := range bad {
		t.Run(name, func(t *testing.T) {
			err := h(context.Background(), m)
			if !errors.Is(err, ErrUnknownType) {
				t.Fatalf("expect ErrUnknownType, got %v", err)
			}
			if esc := EscalationOf(err); esc == nil || esc.Reason != ReasonUnknownType {
				t.Errorf("expect Escalate(%q), got %v", ReasonUnknownType, err)
			}
		})
	}
	t.Run("undecodable for its route", func(t *testing.T) {
		err := h(context.Background(), &Message{Body: `{"id":1}`, MessageAttributes: map[string]AttributeValue{"type": {DataType: "String", StringValue: "order.placed"}}})
		if !errors.Is(err, ErrDecode) {
			t.Errorf("expect ErrDecode, got %v", err)
		}
	})
}

func TestNewRouterConfig(t *testing.T) {
	noop := func(context.Context, *Message) error { return nil }
	cases := map[string]func() (Handler, error){
		"nil TypeFunc":   func() (Handler, error) { return NewRouter(nil, OnHandler("a", noop)) },
		"empty type":     func() (Handler, error) { return NewRouter(TypeAttribute("t"), OnHandler("", noop)) },
		"nil handler":    func() (Handler, error) { return NewRouter(TypeAttribute("t"), OnHandler("a", nil)) },
		"nil typed func": func() (Handler, error) { return NewRouter(TypeAttribute("t"), On[order]("a", nil)) },
		"routed twice": func() (Handler, error) {
			return NewRouter(TypeAttribute("t"), OnHandler("a", noop), OnHandler("a", noop))
		},
	}
	for name, mk := range cases {
		t.Run(name, func(t *testing.T) {
			if h, err := mk(); !errors.Is(err, ErrConfig) || h != nil {
				t.Errorf("expect ErrConfig and no handler, got %v", err)
			}
		})
	}
}
