package fifo_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"go.uber.org/goleak"

	"github.com/sqskit/sqskit/fifo"
	"github.com/sqskit/sqskit/sqsfake"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type fixture struct {
	srv    *sqsfake.Server
	clock  *sqsfake.ManualClock // nil in a synctest bubble
	client *sqs.Client
	url    string
}

// newFixture is a queue on sqsfake with a manual clock.
func newFixture(t *testing.T, name string, attrs map[string]string) *fixture {
	t.Helper()
	clock := sqsfake.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	srv := sqsfake.New(func(o *sqsfake.Options) { o.Clock = clock })
	return createQueue(t, &fixture{srv: srv, clock: clock, client: srv.Client()}, name, attrs)
}

// newBubbleFixture is a queue on sqsfake for a test inside synctest.Test:
// sqsfake, the Sender's retries and the Batcher's linger all run on the
// bubble's fake time.
func newBubbleFixture(t *testing.T, name string, attrs map[string]string) *fixture {
	t.Helper()
	srv := sqsfake.New()
	return createQueue(t, &fixture{srv: srv, client: srv.Client()}, name, attrs)
}

func createQueue(t *testing.T, f *fixture, name string, attrs map[string]string) *fixture {
	t.Helper()
	if attrs == nil {
		attrs = map[string]string{}
	}
	if len(name) > 5 && name[len(name)-5:] == ".fifo" {
		attrs["FifoQueue"] = "true"
	}
	out, err := f.client.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		t.Fatal(err)
	}
	f.url = *out.QueueUrl
	f.srv.ResetCalls()
	return f
}

func (f *fixture) sender(t *testing.T, fns ...func(*fifo.SenderOptions)) *fifo.Sender {
	t.Helper()
	s, err := fifo.NewSender(f.client, f.url, fns...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// drain receives and deletes everything, returning bodies per group in
// delivery order.
func (f *fixture) drain(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	ctx := context.Background()
	for range 1000 {
		got, err := f.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(f.url), MaxNumberOfMessages: 10,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{"MessageGroupId"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Messages) == 0 {
			return out
		}
		for _, m := range got.Messages {
			g := m.Attributes["MessageGroupId"]
			out[g] = append(out[g], *m.Body)
			if _, err := f.client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(f.url), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Fatal("queue did not drain")
	return nil
}

// messages makes n messages spread over groups, bodies "g<k>-<i>".
func messages(n, groups int) []fifo.Message {
	out := make([]fifo.Message, n)
	for i := range out {
		g := fmt.Sprintf("g%d", i%groups)
		out[i] = fifo.Message{Body: fmt.Sprintf("%s-%02d", g, i), GroupID: g}
	}
	return out
}

func wantOrder(t *testing.T, got map[string][]string, msgs []fifo.Message) {
	t.Helper()
	want := map[string][]string{}
	for _, m := range msgs {
		want[m.GroupID] = append(want[m.GroupID], m.Body)
	}
	for g, bodies := range want {
		if fmt.Sprint(got[g]) != fmt.Sprint(bodies) {
			t.Errorf("group %s: expect %v, got %v", g, bodies, got[g])
		}
	}
}
