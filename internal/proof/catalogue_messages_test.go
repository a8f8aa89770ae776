package proof

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/consumer"
	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/replay"
)

// catMessages is the category of hostile typed messages, envelopes, types
// and idempotency stores.
const catMessages = "typed messages, envelopes, routing, idempotency"

type orderPayload struct {
	ID    string `json:"id"`
	Total int    `json:"total"`
}

// panickingCodec is a user codec with a bug.
type panickingCodec struct{}

func (panickingCodec) Decode([]byte, any) error { panic("codec bug") }

// storeFunc is a handler.Store whose Claim is fn and whose writes succeed.
type storeFunc func() (handler.Record, bool, error)

func (f storeFunc) Claim(context.Context, string, string, time.Time, time.Time) (handler.Record, bool, error) {
	return f()
}
func (storeFunc) Extend(context.Context, string, string, time.Time) error           { return nil }
func (storeFunc) Complete(context.Context, string, string, []byte, time.Time) error { return nil }
func (storeFunc) Release(context.Context, string, string) error                     { return nil }

func strAttr(v string) map[string]types.MessageAttributeValue {
	return map[string]types.MessageAttributeValue{"type": {DataType: aws.String("String"), StringValue: aws.String(v)}}
}

// typedRouter routes "order" to a typed handler, by the "type" attribute.
func typedRouter(codec handler.Codec) handler.Handler {
	h, err := handler.NewRouter(handler.TypeAttribute("type"), handler.OnCodec("order", codec, func(context.Context, orderPayload, *handler.Message) error { return nil }))
	if err != nil {
		panic(err)
	}
	return h
}

const snsHead = `{"Type":"Notification","TopicArn":"arn:aws:sns:us-east-1:123456789012:t"`

func messageRows() []row {
	var rows []row
	// Consumer: each bad message is parked after exactly one receive, with
	// its reason in replay's metadata; nothing is deleted unparked.
	for _, pc := range []struct {
		name, body string
		attrs      map[string]types.MessageAttributeValue
		codec      handler.Codec
		reason     string
	}{
		{"Consumer: a body that is not JSON", `<order/>`, strAttr("order"), nil, handler.ReasonDecode},
		{"Consumer: a JSON body of the wrong shape", `{"id":7}`, strAttr("order"), nil, handler.ReasonDecode},
		{"Consumer: a codec that panics", `{}`, strAttr("order"), panickingCodec{}, handler.ReasonDecode},
		{"Consumer: an unknown type", `{}`, strAttr("refund"), nil, handler.ReasonUnknownType},
		{"Consumer: no type attribute", `{}`, nil, nil, handler.ReasonUnknownType},
		{"Consumer: a Binary type attribute", `{}`, map[string]types.MessageAttributeValue{"type": {DataType: aws.String("Binary"), BinaryValue: []byte("order")}}, nil, handler.ReasonUnknownType},
		{"Consumer: an SNS notification without Message", snsHead + `}`, strAttr("order"), nil, handler.ReasonEnvelope},
		{"Consumer: an SNS Message that is not a string", snsHead + `,"Message":{"id":"a"}}`, strAttr("order"), nil, handler.ReasonEnvelope},
		{"Consumer: an SNS attribute of an unknown type", snsHead + `,"Message":"{}","MessageAttributes":{"type":{"Type":"Float","Value":"1"}}}`, nil, nil, handler.ReasonEnvelope},
		{"Consumer: an SNS Binary attribute not in base64", snsHead + `,"Message":"{}","MessageAttributes":{"b":{"Type":"Binary","Value":"!!"}}}`, strAttr("order"), nil, handler.ReasonEnvelope},
		{"Consumer: an SNS notification inside an SNS notification", snsHead + `,"Message":` + jsonString(snsHead+`,"Message":"{}"}`) + `}`, strAttr("order"), nil, handler.ReasonEnvelope},
		{"Consumer: an SNS Subject of 10,000 characters", snsHead + `,"Message":"{}","Subject":"` + strings.Repeat("s", 10000) + `"}`, strAttr("order"), nil, handler.ReasonEnvelope},
		{"Consumer: an EventBridge event without detail", `{"detail-type":"order","source":"shop"}`, strAttr("order"), nil, handler.ReasonEnvelope},
		{"Consumer: an SNS message of type SubscriptionConfirmation", `{"Type":"SubscriptionConfirmation","TopicArn":"t","Message":"{}"}`, strAttr("order"), nil, handler.ReasonEnvelope},
	} {
		rows = append(rows, row{cat: catMessages, name: pc.name, calls: true, run: func(t *testing.T, _ *catWorld) error {
			return runParked(t, pc.body, pc.attrs, typedRouter(pc.codec), pc.reason)
		}})
	}
	// Consumer: hostile idempotency stores and key functions fail their
	// message (released, not lost), never the consumer.
	for _, sc := range []struct {
		name  string
		store handler.Store
		key   func(context.Context, *handler.Message) string
		dup   func(context.Context, *handler.Message, []byte)
	}{
		{name: "Consumer: an idempotency Store that panics", store: storeFunc(func() (handler.Record, bool, error) { panic("store bug") })},
		{name: "Consumer: an idempotency Store that fails", store: storeFunc(func() (handler.Record, bool, error) { return handler.Record{}, false, errors.New("throttled") })},
		{name: "Consumer: an idempotency Store that returns a record of no known status", store: storeFunc(func() (handler.Record, bool, error) {
			return handler.Record{Status: "forged", Until: time.Now().Add(time.Hour)}, false, nil
		})},
		{name: "Consumer: an idempotency key function that panics", store: &handler.MemoryStore{}, key: func(context.Context, *handler.Message) string { panic("key bug") }},
		{name: "Consumer: an OnDuplicate that panics", store: storeFunc(func() (handler.Record, bool, error) {
			return handler.Record{Status: handler.StatusCompleted, Until: time.Now().Add(time.Hour)}, false, nil
		}), dup: func(context.Context, *handler.Message, []byte) { panic("hook bug") }},
	} {
		rows = append(rows, row{cat: catMessages, name: sc.name, calls: true, run: func(t *testing.T, _ *catWorld) error {
			return runIdempotentHostile(t, sc.store, sc.key, sc.dup)
		}})
	}
	// Constructors: invalid options are ErrConfig, before any call.
	noop := func(context.Context, *handler.Message) error { return nil }
	for name, mk := range map[string]func() error{
		"NewRouter: a nil TypeFunc": func() error { _, err := handler.NewRouter(nil, handler.OnHandler("a", noop)); return err },
		"NewRouter: an empty type": func() error {
			_, err := handler.NewRouter(handler.TypeAttribute("t"), handler.OnHandler("", noop))
			return err
		},
		"NewRouter: a type routed twice": func() error {
			_, err := handler.NewRouter(handler.TypeAttribute("t"), handler.OnHandler("a", noop), handler.OnHandler("a", noop))
			return err
		},
		"NewRouter: a nil typed handler": func() error {
			_, err := handler.NewRouter(handler.TypeAttribute("t"), handler.On[orderPayload]("a", nil))
			return err
		},
		"Idempotent: a nil Store": func() error { _, err := handler.Idempotent(nil); return err },
		"Idempotent: a negative TTL": func() error {
			_, err := handler.Idempotent(&handler.MemoryStore{}, func(o *handler.IdempotencyOptions) { o.TTL = -time.Hour })
			return err
		},
		"Idempotent: an InProgress of 1ms": func() error {
			_, err := handler.Idempotent(&handler.MemoryStore{}, func(o *handler.IdempotencyOptions) { o.InProgress = time.Millisecond })
			return err
		},
	} {
		rows = append(rows, row{cat: catMessages, name: name, run: func(*testing.T, *catWorld) error { return is(mk(), handler.ErrConfig) }})
	}
	// Lambda: without a Parker a permanent failure is reported failed (SQS
	// redrive takes it), never dropped.
	rows = append(rows, row{cat: catMessages, name: "Lambda: an undecodable body without a Parker", run: func(*testing.T, *catWorld) error {
		l, err := handler.NewLambda(typedRouter(nil))
		if err != nil {
			return err
		}
		ev := handler.Event{Records: []events.SQSMessage{{MessageId: "a", Body: "not json", EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:q",
			MessageAttributes: map[string]events.SQSMessageAttribute{"type": {DataType: "String", StringValue: aws.String("order")}}}}}
		resp, err := l.Handle(context.Background(), ev)
		if err != nil || len(resp.BatchItemFailures) != 1 {
			return fmt.Errorf("expect the message reported failed, got %+v, %v", resp, err)
		}
		return nil
	}})
	return rows
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// runParked runs a consumer with Envelopes and h over one message on a
// queue with a parking queue: the message must be parked after one
// receive with reason, its metadata readable, and never count a failure.
func runParked(t *testing.T, body string, attrs map[string]types.MessageAttributeValue, h handler.Handler, reason string) (err error) {
	synctest.Test(t, func(t *testing.T) {
		w := newCatWorld(t)
		w.send(t, w.std, body, attrs, "")
		c, e := consumer.New(w.api, w.std, h, func(o *consumer.Options) {
			o.Middleware = []handler.Middleware{handler.Envelopes()}
			o.ParkingQueue = w.operator
		})
		if e != nil {
			t.Fatal(e)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx) }()
		for i := 0; c.Stats().Parked == 0 && i < 600; i++ {
			time.Sleep(100 * time.Millisecond)
		}
		cancel()
		if e := <-done; e != nil {
			err = fmt.Errorf("expect Run to return nil when stopped, got %v", e)
			return
		}
		st := c.Stats()
		if st.Parked != 1 || st.Received != 1 || st.Failed != 0 || w.count(w.std) != 0 {
			err = fmt.Errorf("expect parked after one receive and no failure, got %+v (%d left)", st, w.count(w.std))
			return
		}
		out, e := w.api.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(w.operator), MessageAttributeNames: []string{"All"}})
		if e != nil || len(out.Messages) != 1 {
			err = fmt.Errorf("expect one parked message, got %v", e)
			return
		}
		var md replay.Metadata
		if a, ok := out.Messages[0].MessageAttributes[replay.MetadataAttribute]; ok {
			_ = json.Unmarshal([]byte(aws.ToString(a.StringValue)), &md)
		}
		if string(md.Reason) != reason || aws.ToString(out.Messages[0].Body) != body {
			err = fmt.Errorf("expect the message as sent, parked with reason %q, got %q", reason, md.Reason)
		}
	})
	return err
}

// runIdempotentHostile runs a consumer with Idempotent over a hostile
// store, key or hook: the message fails (or is held), is not deleted, and
// Run stops cleanly.
func runIdempotentHostile(t *testing.T, store handler.Store, key func(context.Context, *handler.Message) string, dup func(context.Context, *handler.Message, []byte)) (err error) {
	synctest.Test(t, func(t *testing.T) {
		w := newCatWorld(t)
		w.send(t, w.std, "m", nil, "")
		mw, e := handler.Idempotent(store, func(o *handler.IdempotencyOptions) { o.Key, o.OnDuplicate = key, dup })
		if e != nil {
			t.Fatal(e)
		}
		var fails failureLog
		c, e := consumer.New(w.api, w.std, func(context.Context, *handler.Message) error { return nil }, func(o *consumer.Options) {
			o.Middleware = []handler.Middleware{mw}
			o.Hooks = fails.hooks()
			o.Hooks.Held = func(context.Context, *handler.Message, time.Duration) {
				fails.failed(context.Background(), nil, errors.New("held"))
			}
		})
		if e != nil {
			t.Fatal(e)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx) }()
		for i := 0; c.Stats().Failed+c.Stats().Held == 0 && i < 600; i++ {
			time.Sleep(100 * time.Millisecond)
		}
		cancel()
		if e := <-done; e != nil {
			err = fmt.Errorf("expect Run to return nil when stopped, got %v", e)
			return
		}
		if st := c.Stats(); st.Deleted != 0 || st.Failed+st.Held == 0 || w.count(w.std) != 1 {
			err = fmt.Errorf("expect the message failed or held, not deleted, got %+v (%d on the queue)", st, w.count(w.std))
		}
	})
	return err
}
