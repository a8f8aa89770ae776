package handler

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// snsFixture is an SNS notification as SNS delivers it to an SQS queue
// without raw message delivery, in the shape of
// https://docs.aws.amazon.com/sns/latest/dg/http-notification-json.html
// (the signature values are placeholders).
const snsFixture = `{
  "Type" : "Notification",
  "MessageId" : "22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324",
  "TopicArn" : "arn:aws:sns:us-west-2:123456789012:orders",
  "Subject" : "order.placed",
  "Message" : "{\"id\":\"o-1\",\"total\":3}",
  "Timestamp" : "2026-11-26T12:00:00.000Z",
  "SignatureVersion" : "1",
  "Signature" : "c2lnbmF0dXJl",
  "SigningCertURL" : "https://sns.us-west-2.amazonaws.com/SimpleNotificationService-0000.pem",
  "UnsubscribeURL" : "https://sns.us-west-2.amazonaws.com/?Action=Unsubscribe",
  "MessageAttributes" : {
    "type" : {"Type":"String","Value":"order.placed"},
    "n" : {"Type":"Number","Value":"42"},
    "b" : {"Type":"Binary","Value":"AAEC"},
    "tags" : {"Type":"String.Array","Value":"[\"a\",\"b\"]"}
  }
}`

// eventBridgeFixture is an EventBridge event as a rule delivers it to an
// SQS target, in the shape of
// https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-events-structure.html
const eventBridgeFixture = `{
  "version": "0",
  "id": "6a7e8feb-b491-4cf7-a9f1-bf3703467718",
  "detail-type": "order.cancelled",
  "source": "com.example.shop",
  "account": "111122223333",
  "time": "2026-11-26T12:00:00Z",
  "region": "us-west-1",
  "resources": ["arn:aws:ec2:us-west-1:123456789012:instance/i-1"],
  "detail": {"id": "o-2", "total": 5}
}`

func TestUnwrapEnvelope(t *testing.T) {
	t.Run("sns", func(t *testing.T) {
		m := &Message{Body: snsFixture, MessageAttributes: map[string]AttributeValue{"sqs": {DataType: "String", StringValue: "kept"}}}
		received := m.MessageAttributes
		env, err := UnwrapEnvelope(m)
		if err != nil {
			t.Fatal(err)
		}
		if env.Kind != EnvelopeSNS || env.TopicARN != "arn:aws:sns:us-west-2:123456789012:orders" || env.Subject != "order.placed" || env.ID != "22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324" {
			t.Errorf("expect the notification's fields, got %+v", env)
		}
		if m.Body != `{"id":"o-1","total":3}` {
			t.Errorf("expect the inner message, got %q", m.Body)
		}
		want := map[string]AttributeValue{
			"sqs":  {DataType: "String", StringValue: "kept"},
			"type": {DataType: "String", StringValue: "order.placed"},
			"n":    {DataType: "Number", StringValue: "42"},
			"tags": {DataType: "String.Array", StringValue: `["a","b"]`},
		}
		for k, v := range want {
			if got := m.MessageAttributes[k]; got.DataType != v.DataType || got.StringValue != v.StringValue {
				t.Errorf("attribute %s: expect %+v, got %+v", k, v, got)
			}
		}
		if b := m.MessageAttributes["b"].BinaryValue; string(b) != "\x00\x01\x02" {
			t.Errorf("expect the Binary attribute decoded, got %v", b)
		}
		if len(received) != 1 {
			t.Errorf("expect the received attribute map untouched (it is what a park sends), got %v", received)
		}
	})
	t.Run("eventbridge", func(t *testing.T) {
		m := &Message{Body: eventBridgeFixture}
		env, err := UnwrapEnvelope(m)
		if err != nil {
			t.Fatal(err)
		}
		if env.Kind != EnvelopeEventBridge || env.DetailType != "order.cancelled" || env.Source != "com.example.shop" || env.Account != "111122223333" || len(env.Resources) != 1 {
			t.Errorf("expect the event's fields, got %+v", env)
		}
		if m.Body != `{"id": "o-2", "total": 5}` {
			t.Errorf("expect the detail, got %q", m.Body)
		}
	})
	for _, body := range []string{`{"id":"o-3"}`, `plain text`, ``, `[1,2]`, `{"Type":"Notification"}`, `{"Message":"x"}`, `{not json`} {
		t.Run("plain "+body, func(t *testing.T) {
			m := &Message{Body: body}
			env, err := UnwrapEnvelope(m)
			if env != nil || err != nil || m.Body != body {
				t.Errorf("expect %q unchanged, got %+v, %v, %q", body, env, err, m.Body)
			}
		})
	}
}

func TestUnwrapEnvelopeMalformed(t *testing.T) {
	sns := func(fields string) string {
		return `{"Type":"Notification","TopicArn":"arn:aws:sns:us-east-1:1:t"` + fields + `}`
	}
	cases := map[string]string{
		"no Message":              sns(``),
		"Message not a string":    sns(`,"Message":{"id":1}`),
		"Message null":            sns(`,"Message":null`),
		"Type not a string":       `{"Type":7,"TopicArn":"t","Message":"x"}`,
		"subscription confirm":    `{"Type":"SubscriptionConfirmation","TopicArn":"t","Message":"x"}`,
		"empty TopicArn":          `{"Type":"Notification","TopicArn":"","Message":"x"}`,
		"attribute bad type":      sns(`,"Message":"x","MessageAttributes":{"a":{"Type":"Float","Value":"1"}}`),
		"attribute bad base64":    sns(`,"Message":"x","MessageAttributes":{"a":{"Type":"Binary","Value":"%%%"}}`),
		"attributes not a map":    sns(`,"Message":"x","MessageAttributes":[1]`),
		"too many attributes":     sns(`,"Message":"x","MessageAttributes":{` + manyAttrs(11) + `}`),
		"subject too long":        sns(`,"Message":"x","Subject":"` + strings.Repeat("s", 101) + `"`),
		"sns in sns":              sns(`,"Message":` + quote(sns(`,"Message":"x"`))),
		"eventbridge in sns":      sns(`,"Message":` + quote(eventBridgeFixture)),
		"eventbridge no detail":   `{"detail-type":"x","source":"s"}`,
		"eventbridge null detail": `{"detail-type":"x","source":"s","detail":null}`,
		"eventbridge empty type":  `{"detail-type":"","source":"s","detail":{}}`,
		"eventbridge bad types":   `{"detail-type":1,"source":"s","detail":{}}`,
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			m := &Message{Body: body}
			_, err := UnwrapEnvelope(m)
			if !errors.Is(err, ErrEnvelope) {
				t.Fatalf("expect ErrEnvelope, got %v", err)
			}
			if esc := EscalationOf(err); esc == nil || esc.Reason != ReasonEnvelope {
				t.Errorf("expect Escalate(%q), got %v", ReasonEnvelope, err)
			}
			if m.Body != body {
				t.Errorf("expect the body untouched on failure")
			}
		})
	}
}

func manyAttrs(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"a` + string(rune('a'+i)) + `":{"Type":"String","Value":"v"}`)
	}
	return b.String()
}

func quote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

func TestEnvelopesMiddleware(t *testing.T) {
	var got *Envelope
	var body string
	h := Chain(Typed(nil, func(ctx context.Context, o order, m *Message) error {
		got, body = EnvelopeFrom(ctx), o.ID
		return nil
	}), Envelopes())
	if err := h(context.Background(), &Message{Body: snsFixture}); err != nil {
		t.Fatal(err)
	}
	if got == nil || got.Subject != "order.placed" || body != "o-1" {
		t.Errorf("expect the SNS envelope and the inner order, got %+v, %q", got, body)
	}
	if err := h(context.Background(), &Message{Body: `{"id":"o-4"}`}); err != nil {
		t.Fatal(err)
	}
	if got != nil || body != "o-4" {
		t.Errorf("expect a plain body with no envelope, got %+v, %q", got, body)
	}
	err := h(context.Background(), &Message{Body: `{"Type":"Notification","TopicArn":"t"}`})
	if !errors.Is(err, ErrEnvelope) {
		t.Errorf("expect ErrEnvelope, got %v", err)
	}
}
