package handler

import (
	"context"
	"encoding/json"
	"testing"
)

// The cost of the typed path over decoding by hand, per message, on a
// small order body: Typed, a Router of two types on an attribute, and
// Envelopes unwrapping an SNS notification before the Router.
//
//	go test -run '^$' -bench 'Decode' -benchmem ./handler/
func BenchmarkDecode(b *testing.B) {
	const body = `{"id":"o-1","total":3}`
	ctx := context.Background()
	var sink order
	consume := func(_ context.Context, o order, _ *Message) error { sink = o; return nil }
	typedAttr := map[string]AttributeValue{"type": {DataType: "String", StringValue: "order.placed"}}
	router, err := NewRouter(TypeAttribute("type"),
		On("order.placed", consume),
		On("order.cancelled", func(context.Context, cancellation, *Message) error { return nil }))
	if err != nil {
		b.Fatal(err)
	}
	cases := []struct {
		name string
		h    Handler
		msg  Message
	}{
		{"hand-written", func(ctx context.Context, m *Message) error {
			var o order
			if err := json.Unmarshal([]byte(m.Body), &o); err != nil {
				return err
			}
			return consume(ctx, o, m)
		}, Message{Body: body}},
		{"hand-written (SNS)", func(ctx context.Context, m *Message) error {
			var n struct {
				Type, TopicArn, Subject, Message string
				MessageAttributes                map[string]struct{ Type, Value string }
			}
			if err := json.Unmarshal([]byte(m.Body), &n); err != nil {
				return err
			}
			if n.MessageAttributes["type"].Value != "order.placed" {
				return ErrUnknownType
			}
			var o order
			if err := json.Unmarshal([]byte(n.Message), &o); err != nil {
				return err
			}
			return consume(ctx, o, m)
		}, Message{Body: snsFixture}},
		{"Typed", Typed(nil, consume), Message{Body: body}},
		{"Router", router, Message{Body: body, MessageAttributes: typedAttr}},
		{"Envelopes+Router (plain)", Chain(router, Envelopes()), Message{Body: body, MessageAttributes: typedAttr}},
		{"Envelopes+Router (SNS)", Chain(router, Envelopes()), Message{Body: snsFixture}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				m := c.msg
				if err := c.h(ctx, &m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	_ = sink
}
