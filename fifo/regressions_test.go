package fifo_test

import (
	"context"
	"testing"

	"github.com/sqskit/sqskit/fifo"
)

// Receive(ctx, nil) used to panic dereferencing the input. A nil input is
// the SDK's empty input, as for *sqs.Client: one receive from the
// Receiver's queue with SQS's defaults.
func TestReceiverNilInputIsAnEmptyReceive(t *testing.T) {
	f := newFixture(t, "q.fifo", map[string]string{"ContentBasedDeduplication": "true"})
	sendGroup(t, f, "1")
	r, err := fifo.NewReceiver(f.client, f.url, func(o *fifo.ReceiverOptions) { o.Now = f.clock.Now })
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
