package consumer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/internal/parking"
	"github.com/sqskit/sqskit/sqsfake"
)

// parkWorld is a source queue and a parking queue on one sqsfake server.
type parkWorld struct {
	srv     *sqsfake.Server
	client  *sqs.Client
	queue   string
	parking string
}

func newParkWorld(t *testing.T, queue, parkingQueue string) *parkWorld {
	t.Helper()
	w := &parkWorld{srv: sqsfake.New()}
	w.client = w.srv.Client()
	create := func(name string) string {
		attrs := map[string]string{}
		if strings.HasSuffix(name, ".fifo") {
			attrs["FifoQueue"] = "true"
		}
		out, err := w.client.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.QueueUrl)
	}
	w.queue, w.parking = create(queue), create(parkingQueue)
	return w
}

func (w *parkWorld) parker(t *testing.T, fns ...func(*ParkerOptions)) *Parker {
	t.Helper()
	p, err := NewParker(w.client, w.queue, w.parking, fns...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// parked receives everything on the parking queue.
func (w *parkWorld) parked(t *testing.T) []types.Message {
	t.Helper()
	var all []types.Message
	for {
		out, err := w.client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(w.parking), MaxNumberOfMessages: 10,
			VisibilityTimeout: 300, MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []types.MessageSystemAttributeName{"All"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			return all
		}
		all = append(all, out.Messages...)
	}
}

func metadataOf(t *testing.T, m types.Message) parking.Metadata {
	t.Helper()
	v, ok := m.MessageAttributes[parking.MetadataAttribute]
	if !ok {
		t.Fatalf("expect the metadata attribute, got %v", m.MessageAttributes)
	}
	var md parking.Metadata
	if err := json.Unmarshal([]byte(aws.ToString(v.StringValue)), &md); err != nil {
		t.Fatal(err)
	}
	return md
}

func str(v string) handler.AttributeValue {
	return handler.AttributeValue{DataType: "String", StringValue: v}
}

func TestParkCarriesReasonAndProvenance(t *testing.T) {
	w := newParkWorld(t, "dlq", "operator")
	p := w.parker(t)
	m := &handler.Message{ID: "m-1", Body: "order 7", Attributes: map[string]string{"DeadLetterQueueSourceArn": "arn:aws:sqs:us-east-1:000000000000:orders"},
		MessageAttributes: map[string]handler.AttributeValue{"tenant": str("acme")}}
	if err := p.Park(context.Background(), m, "invalid-order", errors.New("no line items")); err != nil {
		t.Fatal(err)
	}
	got := w.parked(t)
	if len(got) != 1 || aws.ToString(got[0].Body) != "order 7" || aws.ToString(got[0].MessageAttributes["tenant"].StringValue) != "acme" {
		t.Fatalf("expect the message parked whole, got %v", got)
	}
	md := metadataOf(t, got[0])
	if md.Reason != "invalid-order" || md.Detail != "no line items" || md.OriginalID != "m-1" || md.FirstFailure.IsZero() ||
		md.SourceArn != "arn:aws:sqs:us-east-1:000000000000:orders" || md.From != w.queue {
		t.Fatalf("expect reason, detail and provenance, got %+v", md)
	}
}

// A message the replayer handled before keeps its history: the original
// MessageId, first failure and counter of its metadata, and a forged source
// is replaced by what SQS says (here: nothing).
func TestParkCarriesExistingReplayMetadata(t *testing.T) {
	w := newParkWorld(t, "orders", "operator")
	first := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	raw, err := json.Marshal(parking.Metadata{OriginalID: "orig", FirstFailure: first, SourceArn: "forged", LastDelay: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	m := &handler.Message{ID: "m-2", Body: "b", MessageAttributes: map[string]handler.AttributeValue{
		parking.MetadataAttribute:       str(string(raw)),
		parking.DefaultCounterAttribute: {DataType: "Number", StringValue: "3"},
	}}
	if err := w.parker(t).Park(context.Background(), m, "", nil); err != nil {
		t.Fatal(err)
	}
	got := w.parked(t)
	if len(got) != 1 {
		t.Fatalf("expect one parked, got %d", len(got))
	}
	md := metadataOf(t, got[0])
	if md.OriginalID != "orig" || !md.FirstFailure.Equal(first) || md.SourceArn != "" || md.Reason != "permanent-failure" || md.LastDelay != time.Minute {
		t.Fatalf("expect the history carried and the source dropped, got %+v", md)
	}
	if v := got[0].MessageAttributes[parking.DefaultCounterAttribute]; aws.ToString(v.StringValue) != "3" {
		t.Fatalf("expect the counter kept, got %+v", v)
	}
}

// Metadata the replayer did not write is not read: it travels aside, with
// the counter, for the human who reads the parked message.
func TestParkKeepsForeignMetadataAside(t *testing.T) {
	w := newParkWorld(t, "orders", "operator")
	m := &handler.Message{ID: "m-3", Body: "b", MessageAttributes: map[string]handler.AttributeValue{
		parking.MetadataAttribute:       str(`{"id":`),
		parking.DefaultCounterAttribute: {DataType: "Number", StringValue: "1"},
	}}
	if err := w.parker(t).Park(context.Background(), m, "x", nil); err != nil {
		t.Fatal(err)
	}
	got := w.parked(t)
	md := metadataOf(t, got[0])
	back := parking.Restore(got[0].MessageAttributes, "")
	if md.OriginalID != "m-3" || aws.ToString(back[parking.MetadataAttribute].StringValue) != `{"id":` || aws.ToString(back[parking.DefaultCounterAttribute].StringValue) != "1" {
		t.Fatalf("expect the originals kept aside, got %+v, %v", md, back)
	}
}

func TestParkMessageWithTenAttributes(t *testing.T) {
	w := newParkWorld(t, "orders", "operator")
	attrs := map[string]handler.AttributeValue{}
	for i := range 10 {
		attrs[fmt.Sprintf("a%d", i)] = str(fmt.Sprint(i))
	}
	if err := w.parker(t).Park(context.Background(), &handler.Message{ID: "m-4", Body: "b", MessageAttributes: attrs}, "x", nil); err != nil {
		t.Fatal(err)
	}
	got := w.parked(t)
	if len(got) != 1 || len(got[0].MessageAttributes) != 10 {
		t.Fatalf("expect ten attributes, the metadata one of them, got %v", got)
	}
	back := parking.Restore(got[0].MessageAttributes, "")
	if len(back) != 10 || aws.ToString(back["a9"].StringValue) != "9" {
		t.Fatalf("expect the ten attributes back, got %v", back)
	}
}

// On a FIFO parking queue a parked message keeps its group, or joins the
// escalations' group, and its deduplication id comes from its MessageId:
// parked twice (a crash before the delete), it is there once.
func TestParkOnFIFOParkingQueue(t *testing.T) {
	w := newParkWorld(t, "orders.fifo", "operator.fifo")
	p := w.parker(t)
	grouped := &handler.Message{ID: "m-5", Body: "same", Attributes: map[string]string{"MessageGroupId": "customer-1"}}
	loose := &handler.Message{ID: "m-6", Body: "same"}
	for _, m := range []*handler.Message{grouped, grouped, loose} {
		if err := p.Park(context.Background(), m, "x", nil); err != nil {
			t.Fatal(err)
		}
	}
	got := w.parked(t)
	groups := map[string]int{}
	for _, m := range got {
		groups[m.Attributes["MessageGroupId"]]++
	}
	if len(got) != 2 || groups["customer-1"] != 1 || groups[parking.EscalationGroup] != 1 {
		t.Fatalf("expect one message per group, the repeat deduplicated, got %v", groups)
	}
}

// An attribute SQS refuses sends the message again with its attributes
// moved into the metadata; Restore gives them back.
func TestParkFallsBackWhenSQSRefusesAnAttribute(t *testing.T) {
	w := newParkWorld(t, "orders", "operator")
	w.srv.Inject(sqsfake.Fault{Op: "SendMessageBatch", Times: 1, Entries: &sqsfake.EntryFault{Code: "InvalidParameterValue", SenderFault: true}})
	m := &handler.Message{ID: "m-7", Body: "b", MessageAttributes: map[string]handler.AttributeValue{"tenant": str("acme")}}
	if err := w.parker(t).Park(context.Background(), m, "x", nil); err != nil {
		t.Fatal(err)
	}
	got := w.parked(t)
	if len(got) != 1 {
		t.Fatalf("expect one parked, got %d", len(got))
	}
	if _, inPlace := got[0].MessageAttributes["tenant"]; inPlace {
		t.Fatal("expect the attribute moved aside")
	}
	if back := parking.Restore(got[0].MessageAttributes, ""); aws.ToString(back["tenant"].StringValue) != "acme" {
		t.Fatalf("expect the attribute back, got %v", back)
	}
}

func TestParkRejectedInEveryForm(t *testing.T) {
	t.Run("refused before any call", func(t *testing.T) {
		w := newParkWorld(t, "orders", "operator")
		err := w.parker(t).Park(context.Background(), &handler.Message{ID: "m-8", Body: "bad\x00body"}, "x", nil)
		if !errors.Is(err, ErrParkRejected) {
			t.Fatalf("expect ErrParkRejected, got %v", err)
		}
		if n := w.srv.Calls().Op["SendMessageBatch"]; n != 0 {
			t.Fatalf("expect no send, got %d", n)
		}
	})
	t.Run("refused by SQS in every form", func(t *testing.T) {
		w := newParkWorld(t, "orders", "operator")
		w.srv.Inject(sqsfake.Fault{Op: "SendMessageBatch", Entries: &sqsfake.EntryFault{Code: "InvalidParameterValue", SenderFault: true}})
		err := w.parker(t).Park(context.Background(), &handler.Message{ID: "m-9", Body: "b", MessageAttributes: map[string]handler.AttributeValue{"a": str("v")}}, "x", nil)
		if !errors.Is(err, ErrParkRejected) {
			t.Fatalf("expect ErrParkRejected, got %v", err)
		}
		if n := w.srv.Calls().Op["SendMessageBatch"]; n != 4 {
			t.Fatalf("expect one send per form, 4, got %d", n)
		}
		w.srv.ClearFaults()
		if got := w.parked(t); len(got) != 0 {
			t.Fatalf("expect nothing parked, got %d", len(got))
		}
	})
}

// A failure no form cures (the parking queue is gone) is an error, not a
// rejection: the caller keeps the message and tries again.
func TestParkFailureIsNotARejection(t *testing.T) {
	w := newParkWorld(t, "orders", "operator")
	if _, err := w.client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(w.parking)}); err != nil {
		t.Fatal(err)
	}
	err := w.parker(t).Park(context.Background(), &handler.Message{ID: "m-10", Body: "b"}, "x", nil)
	var missing *types.QueueDoesNotExist
	if err == nil || errors.Is(err, ErrParkRejected) || !errors.As(err, &missing) {
		t.Fatalf("expect QueueDoesNotExist, not a rejection, got %v", err)
	}
}

func TestParkBoundsTheDetail(t *testing.T) {
	w := newParkWorld(t, "orders", "operator")
	long := strings.Repeat("é", maxParkDetail)
	if err := w.parker(t).Park(context.Background(), &handler.Message{ID: "m-11", Body: "b"}, strings.Repeat("r", 500), errors.New(long)); err != nil {
		t.Fatal(err)
	}
	md := metadataOf(t, w.parked(t)[0])
	if len(md.Detail) > maxParkDetail || !strings.HasPrefix(long, md.Detail) || len(md.Reason) > maxParkReason {
		t.Fatalf("expect detail and reason cut on a rune boundary, got %d and %d bytes", len(md.Detail), len(md.Reason))
	}
}

// Hold keeps the message invisible for d rounded up to whole seconds,
// clamped to 0 to 12 h.
func TestHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newParkWorld(t, "orders", "operator")
		p := w.parker(t)
		if _, err := w.client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(w.queue), MessageBody: aws.String("b")}); err != nil {
			t.Fatal(err)
		}
		receive := func() *handler.Message {
			out, err := w.client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(w.queue), VisibilityTimeout: 30})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Messages) == 0 {
				return nil
			}
			return &handler.Message{ID: aws.ToString(out.Messages[0].MessageId), ReceiptHandle: aws.ToString(out.Messages[0].ReceiptHandle)}
		}
		m := receive()
		if err := p.Hold(context.Background(), m, 90*time.Second+time.Millisecond); err != nil {
			t.Fatal(err)
		}
		time.Sleep(90 * time.Second)
		if receive() != nil {
			t.Fatal("expect the message held past 90 s: a part of a second rounds up")
		}
		time.Sleep(time.Second)
		if m = receive(); m == nil {
			t.Fatal("expect the message back after 91 s")
		}
		if err := p.Hold(context.Background(), m, -time.Hour); err != nil {
			t.Fatal(err)
		}
		if m = receive(); m == nil {
			t.Fatal("expect a negative hold to make the message visible now")
		}
		if err := p.Hold(context.Background(), m, 13*time.Hour); err != nil {
			t.Fatalf("expect a hold past 12 h clamped to 12 h, got %v", err)
		}
		time.Sleep(12*time.Hour - time.Second)
		if receive() != nil {
			t.Fatal("expect the message held for 12 h")
		}
	})
}

func TestNewParkerRefusesBadOptions(t *testing.T) {
	w := newParkWorld(t, "orders", "operator")
	for name, build := range map[string]func() (*Parker, error){
		"nil client":       func() (*Parker, error) { return NewParker(nil, w.queue, w.parking) },
		"typed nil client": func() (*Parker, error) { return NewParker((*sqs.Client)(nil), w.queue, w.parking) },
		"no parking queue": func() (*Parker, error) { return NewParker(w.client, w.queue, "") },
		"parks on itself":  func() (*Parker, error) { return NewParker(w.client, w.queue, w.queue) },
		"parks on itself, spelled with a trailing slash": func() (*Parker, error) {
			return NewParker(w.client, w.queue, w.queue+"/")
		},
		"counter reserved": func() (*Parker, error) {
			return NewParker(w.client, w.queue, w.parking, func(o *ParkerOptions) { o.CounterAttribute = parking.MetadataAttribute })
		},
		"counter invalid": func() (*Parker, error) {
			return NewParker(w.client, w.queue, w.parking, func(o *ParkerOptions) { o.CounterAttribute = "AWS.x" })
		},
		"size out of range": func() (*Parker, error) {
			return NewParker(w.client, w.queue, w.parking, func(o *ParkerOptions) { o.MaxMessageBytes = 2 << 20 })
		},
	} {
		if _, err := build(); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: expect ErrConfig, got %v", name, err)
		}
	}
}
