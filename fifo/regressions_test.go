package fifo_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqskit/sqskit/fifo"
)

// Receive(ctx, nil) used to panic dereferencing the input. A nil input is
// the SDK's empty input, as for *sqs.Client: one receive from the
// Receiver's queue with SQS's defaults.
func TestReceiverNilInputIsAnEmptyReceive(t *testing.T) {
	f := newFixture(t, "q.fifo", map[string]string{"ContentBasedDeduplication": "true"})
	sendGroup(t, f, "1")
	r, err := fifo.NewReceiver(f.client, f.url)
	if err != nil {
		t.Fatal(err)
	}
	out, err := r.Receive(context.Background(), nil)
	if err != nil {
		t.Fatalf("expect a receive, got %v", err)
	}
	if len(out.Messages) != 1 || *out.Messages[0].Body != "1" {
		t.Fatalf("expect message 1, got %+v", out.Messages)
	}
	if calls := f.srv.Calls().Op["ReceiveMessage"]; calls != 1 {
		t.Fatalf("expect 1 ReceiveMessage call, got %d", calls)
	}
}

// NewSender and NewReceiver used to accept a typed-nil client, so the
// first send (on a Batcher's goroutine: a crash of the process) or receive
// panicked.
func TestTypedNilClientIsAConfigError(t *testing.T) {
	var client *sqs.Client
	if _, err := fifo.NewSender(client, "https://sqs.us-east-1.amazonaws.com/123456789012/q"); !errors.Is(err, fifo.ErrConfig) {
		t.Errorf("NewSender: expect ErrConfig, got %v", err)
	}
	if _, err := fifo.NewReceiver(client, "https://sqs.us-east-1.amazonaws.com/123456789012/q.fifo"); !errors.Is(err, fifo.ErrConfig) {
		t.Errorf("NewReceiver: expect ErrConfig, got %v", err)
	}
}
