package handler_test

import (
	"context"
	"net/url"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/internal/fauxqs"
)

// TestSNSFanOutOnTheEmulator publishes orders to an SNS topic on the
// fauxqs emulator, subscribed by two queues, one with raw message delivery
// and one without, and handles what each queue receives with one chain
// (Envelopes, then a Router on the "type" attribute): both decode to the
// same order, and the wrapped one keeps its topic and subject.
func TestSNSFanOutOnTheEmulator(t *testing.T) {
	emu := fauxqs.StartT(t)
	ctx := context.Background()
	api := emu.Client()
	topic := emu.SNS(t, url.Values{"Action": {"CreateTopic"}, "Name": {"orders"}}, "TopicArn")

	queue := func(name string, raw bool) string {
		out, err := api.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
		if err != nil {
			t.Fatal(err)
		}
		attrs, err := api.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: out.QueueUrl, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
		if err != nil {
			t.Fatal(err)
		}
		form := url.Values{"Action": {"Subscribe"}, "TopicArn": {topic}, "Protocol": {"sqs"}, "Endpoint": {attrs.Attributes["QueueArn"]}}
		if raw {
			form.Set("Attributes.entry.1.key", "RawMessageDelivery")
			form.Set("Attributes.entry.1.value", "true")
		}
		emu.SNS(t, form, "SubscriptionArn")
		return *out.QueueUrl
	}
	wrapped, raw := queue("orders-wrapped", false), queue("orders-raw", true)

	emu.SNS(t, url.Values{
		"Action": {"Publish"}, "TopicArn": {topic}, "Subject": {"new order"}, "Message": {`{"id":"o-1","total":3}`},
		"MessageAttributes.entry.1.Name": {"type"}, "MessageAttributes.entry.1.Value.DataType": {"String"}, "MessageAttributes.entry.1.Value.StringValue": {"order.placed"},
	}, "MessageId")

	type order struct {
		ID    string `json:"id"`
		Total int    `json:"total"`
	}
	var got []order
	var envs []*handler.Envelope
	router, err := handler.NewRouter(handler.TypeAttribute("type"),
		handler.On("order.placed", func(ctx context.Context, o order, _ *handler.Message) error {
			got, envs = append(got, o), append(envs, handler.EnvelopeFrom(ctx))
			return nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	h := handler.Chain(router, handler.Envelopes())

	for _, q := range []string{wrapped, raw} {
		out, err := api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(q), MaxNumberOfMessages: 10, WaitTimeSeconds: 1, MessageAttributeNames: []string{"All"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) != 1 {
			t.Fatalf("%s: expect one message, got %d", q, len(out.Messages))
		}
		sm := out.Messages[0]
		m := &handler.Message{ID: aws.ToString(sm.MessageId), Body: aws.ToString(sm.Body), MessageAttributes: map[string]handler.AttributeValue{}}
		for k, v := range sm.MessageAttributes {
			m.MessageAttributes[k] = handler.AttributeValue{DataType: aws.ToString(v.DataType), StringValue: aws.ToString(v.StringValue), BinaryValue: v.BinaryValue}
		}
		if err := h(ctx, m); err != nil {
			t.Fatalf("%s: expect the order handled, got %v (body %s)", q, err, aws.ToString(sm.Body))
		}
	}
	if len(got) != 2 || got[0] != (order{"o-1", 3}) || got[1] != got[0] {
		t.Fatalf("expect the same order from both queues, got %+v", got)
	}
	if e := envs[0]; e == nil || e.Kind != handler.EnvelopeSNS || e.TopicARN != topic || e.Subject != "new order" || e.ID == "" {
		t.Errorf("expect the wrapped delivery's SNS envelope, got %+v", e)
	}
	if envs[1] != nil {
		t.Errorf("expect the raw delivery to have no envelope, got %+v", envs[1])
	}
}
