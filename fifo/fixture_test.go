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
	clock  *sqsfake.ManualClock
	client *sqsfake.Client
	url    string
}

func newFixture(t *testing.T, name string, attrs map[string]string) *fixture {
	t.Helper()
	clock := sqsfake.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	srv := sqsfake.New(func(o *sqsfake.Options) { o.Clock = clock })
	f := &fixture{srv: srv, clock: clock, client: srv.Client()}
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
	srv.ResetCalls()
	return f
}

// sleepOnClock waits by advancing the fake clock: retries take no real time.
func (f *fixture) sleepOnClock(d time.Duration) (<-chan time.Time, func() bool) {
	f.clock.Advance(d)
	c := make(chan time.Time, 1)
	c <- f.clock.Now()
	return c, func() bool { return false }
}

func (f *fixture) sender(t *testing.T, fns ...func(*fifo.Options)) *fifo.Sender {
	t.Helper()
	base := func(o *fifo.Options) { o.Now = f.clock.Now; o.After = f.sleepOnClock }
	s, err := fifo.NewSender(f.client, f.url, append([]func(*fifo.Options){base}, fns...)...)
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
