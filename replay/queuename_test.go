package replay_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/replay"
	"github.com/sqskit/sqskit/sqsfake"
)

// apiOnly is a user's small wrapper: the calls of replay.API, no
// GetQueueUrl and no GetQueueAttributes.
type apiOnly struct{ c *sqs.Client }

func (a apiOnly) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	return a.c.ReceiveMessage(ctx, in, optFns...)
}

func (a apiOnly) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	return a.c.SendMessageBatch(ctx, in, optFns...)
}

func (a apiOnly) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	return a.c.DeleteMessageBatch(ctx, in, optFns...)
}

func (a apiOnly) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	return a.c.ChangeMessageVisibilityBatch(ctx, in, optFns...)
}

// namedQueues creates orders, orders-dlq and ops on one sqsfake server and
// returns their URLs by name.
func namedQueues(t *testing.T) (*sqsfake.Server, *sqs.Client, map[string]string) {
	t.Helper()
	srv := sqsfake.New()
	client := srv.Client()
	urls := map[string]string{}
	for _, name := range []string{"orders", "orders-dlq", "ops"} {
		out, err := client.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name)})
		if err != nil {
			t.Fatal(err)
		}
		urls[name] = aws.ToString(out.QueueUrl)
	}
	return srv, client, urls
}

func TestDrainTakesQueueNames(t *testing.T) {
	srv, client, urls := namedQueues(t)
	ctx := context.Background()
	for _, body := range []string{"a", "b"} {
		if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(urls["orders-dlq"]), MessageBody: aws.String(body)}); err != nil {
			t.Fatal(err)
		}
	}
	srv.ResetCalls()
	r, err := replay.New(client, "orders-dlq", "ops", func(o *replay.Options) { o.Target = "orders" })
	if err != nil {
		t.Fatal(err)
	}
	rep, err := r.Drain(ctx)
	if err != nil {
		t.Fatalf("expect a drain by names, got %v", err)
	}
	if rep.Replayed+rep.Held != 2 || rep.Failed != 0 {
		t.Errorf("expect both messages replayed or held, got %+v", rep)
	}
	first := srv.Calls().Op["GetQueueUrl"]
	if first == 0 {
		t.Error("expect GetQueueUrl calls")
	}
	srv.ResetCalls()
	if _, err := r.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	// The Replayer keeps its URLs; the pass's consumer and Parker get them
	// resolved.
	if got := srv.Calls().Op["GetQueueUrl"]; got != 0 {
		t.Errorf("expect no GetQueueUrl on a second pass, got %d (first pass %d)", got, first)
	}
}

func TestNewComparesNamesAndURLs(t *testing.T) {
	_, client, urls := namedQueues(t)
	cases := []struct {
		name, dlq, operator, target string
	}{
		{"operator queue is the DLQ by name and URL", "orders-dlq", urls["orders-dlq"], "orders"},
		{"target is the DLQ by URL and name", urls["orders-dlq"], "ops", "orders-dlq"},
		{"target is the operator queue by name and URL", "orders-dlq", "ops", urls["ops"]},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := replay.New(client, c.dlq, c.operator, func(o *replay.Options) { o.Target = c.target })
			if !errors.Is(err, replay.ErrConfig) {
				t.Errorf("expect ErrConfig, got %v", err)
			}
		})
	}
}

func TestRunRefusesNamesItCannotResolve(t *testing.T) {
	srv, client, urls := namedQueues(t)
	cases := []struct {
		name   string
		api    replay.API
		dlq    string
		target string
		want   string
	}{
		{"client without GetQueueUrl", apiOnly{client}, "orders-dlq", urls["orders"], `queue name "orders-dlq" needs a client with GetQueueUrl`},
		{"missing target", client, urls["orders-dlq"], "nope", `queue name "nope": GetQueueUrl`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv.ResetCalls()
			r, err := replay.New(c.api, c.dlq, urls["ops"], func(o *replay.Options) { o.Target = c.target })
			if err != nil {
				t.Fatalf("expect New to accept names, got %v", err)
			}
			err = r.Run(context.Background())
			if !errors.Is(err, replay.ErrConfig) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("expect ErrConfig saying %q, got %v", c.want, err)
			}
			if got := srv.Calls().Op["ReceiveMessage"]; got != 0 {
				t.Errorf("expect no receive, got %d", got)
			}
		})
	}
}

func TestHandleLambdaTakesQueueNames(t *testing.T) {
	srv, client, urls := namedQueues(t)
	ctx := context.Background()
	if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(urls["orders-dlq"]), MessageBody: aws.String("a")}); err != nil {
		t.Fatal(err)
	}
	out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(urls["orders-dlq"]), VisibilityTimeout: 60,
		MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []types.MessageSystemAttributeName{"All"}})
	if err != nil || len(out.Messages) != 1 {
		t.Fatalf("expect the message, got %v, %v", out, err)
	}
	event := handler.Event(lambdaEvent(out.Messages))

	noResolver, err := replay.New(apiOnly{client}, "orders-dlq", "ops", func(o *replay.Options) { o.Target = "orders" })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := noResolver.HandleLambda(ctx, event); !errors.Is(err, replay.ErrConfig) {
		t.Errorf("expect ErrConfig without GetQueueUrl, got %v", err)
	}

	r, err := replay.New(client, "orders-dlq", "ops", func(o *replay.Options) {
		o.Target = "orders"
		o.Policy.Backoff = backoff.Constant{} // replay at once
	})
	if err != nil {
		t.Fatal(err)
	}
	srv.ResetCalls()
	resp, err := r.HandleLambda(ctx, event)
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("expect the message replayed, got %+v, %v", resp, err)
	}
	if got := srv.Calls().Queue["orders"]["SendMessageBatch"]; got != 1 {
		t.Errorf("expect one send to the target, got %d", got)
	}
}
