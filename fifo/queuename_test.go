package fifo_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqskit/sqskit/fifo"
	"github.com/sqskit/sqskit/sqsfake"
)

// sendOnly is a user's small wrapper: the two calls of fifo.API, no
// GetQueueUrl.
type sendOnly struct{ c *sqs.Client }

func (s sendOnly) SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	return s.c.SendMessage(ctx, in, optFns...)
}

func (s sendOnly) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	return s.c.SendMessageBatch(ctx, in, optFns...)
}

func TestSenderTakesAQueueName(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"orders", "orders.fifo"} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, name, nil)
			s, err := fifo.NewSender(f.client, name)
			if err != nil {
				t.Fatal(err)
			}
			if calls := f.srv.Calls().Op["GetQueueUrl"]; calls != 0 {
				t.Errorf("expect no call before the first send, got %d", calls)
			}
			var wg sync.WaitGroup
			for i := range 4 {
				wg.Go(func() {
					if _, err := s.Send(ctx, fifo.Message{Body: "one", GroupID: "g"}); err != nil {
						t.Errorf("send %d: %v", i, err)
					}
					for _, r := range s.SendBatch(ctx, []fifo.Message{{Body: "a", GroupID: "g"}, {Body: "b", GroupID: "g"}}) {
						if r.Err != nil {
							t.Errorf("send batch %d: %v", i, r.Err)
						}
					}
				})
			}
			wg.Wait()
			calls := f.srv.Calls()
			if got := calls.Op["GetQueueUrl"]; got != 1 {
				t.Errorf("expect GetQueueUrl once, got %d", got)
			}
			// Standard: 4 + 8 messages; FIFO: the dedup ids are random, all kept.
			if got := calls.Op["SendMessage"] + calls.Op["SendMessageBatch"]; got < 5 {
				t.Errorf("expect the sends on the resolved URL, got %d calls", got)
			}
		})
	}
}

func TestSenderRefusesANameItCannotResolve(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, "orders", nil)
	s, err := fifo.NewSender(sendOnly{f.client}, "orders")
	if err != nil {
		t.Fatalf("expect a wrapper without GetQueueUrl to be accepted by NewSender, got %v", err)
	}
	_, err = s.Send(ctx, fifo.Message{Body: "x"})
	if !errors.Is(err, fifo.ErrConfig) || !strings.Contains(err.Error(), `queue name "orders" needs a client with GetQueueUrl`) {
		t.Errorf("expect ErrConfig naming the queue and GetQueueUrl, got %v", err)
	}
	for _, r := range s.SendBatch(ctx, []fifo.Message{{Body: "x"}, {Body: "y"}}) {
		if !errors.Is(r.Err, fifo.ErrConfig) {
			t.Errorf("expect ErrConfig for each message of the batch, got %v", r.Err)
		}
	}
	b, err := s.NewBatcher()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = b.Close(ctx) }()
	if _, err := b.Send(ctx, fifo.Message{Body: "x"}); !errors.Is(err, fifo.ErrConfig) {
		t.Errorf("expect ErrConfig from the Batcher, got %v", err)
	}

	missing, err := fifo.NewSender(f.client, "nope")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := missing.Send(ctx, fifo.Message{Body: "x"}); !errors.Is(err, fifo.ErrConfig) || !strings.Contains(err.Error(), "GetQueueUrl") {
		t.Errorf("expect ErrConfig naming GetQueueUrl for a missing queue, got %v", err)
	}
	if got := f.srv.Calls().Op["SendMessage"]; got != 0 {
		t.Errorf("expect no send with an unresolved name, got %d", got)
	}
}

func TestSenderRetriesAFailedResolution(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, "orders", nil)
	fault := f.srv.Inject(sqsfake.Fault{Op: "GetQueueUrl"}) // an internal error, until removed
	s, err := fifo.NewSender(f.client, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(ctx, fifo.Message{Body: "x"}); err == nil || errors.Is(err, fifo.ErrConfig) {
		t.Fatalf("expect a transient failure, not ErrConfig, got %v", err)
	}
	fault.Remove()
	if _, err := s.Send(ctx, fifo.Message{Body: "x"}); err != nil {
		t.Fatalf("expect the next send to resolve again, got %v", err)
	}
	if got := f.srv.Calls().Op["SendMessage"]; got != 1 {
		t.Errorf("expect one send, got %d", got)
	}
}
