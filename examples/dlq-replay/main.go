// Command dlq-replay shows the whole flow of sqskit's replay package: a
// consumer fails on a poison message, SQS moves it to a dead-letter queue,
// the replayer sends it back with growing delays, and after three replays
// escalates it to an operator queue, with the reason and its history.
//
// In memory (the default) the delays are seconds long so the demo ends
// quickly. With SQSKIT_ENDPOINT (an emulator) or SQSKIT_AWS=1 it creates
// sqskit-example-* queues and runs the same flow.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"os"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/consumer"
	"github.com/sqskit/sqskit/examples/internal/backend"
	"github.com/sqskit/sqskit/replay"
	"github.com/sqskit/sqskit/sqsfake"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, out io.Writer) error {
	api, where, err := backend.Open(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "backend:", where)
	dlq, err := backend.Queue(ctx, api, "sqskit-example-dlq", nil)
	if err != nil {
		return err
	}
	dlqArn, err := arnOf(ctx, api, dlq)
	if err != nil {
		return err
	}
	main, err := backend.Queue(ctx, api, "sqskit-example-main", map[string]string{
		"RedrivePolicy":     fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":2}`, dlqArn),
		"VisibilityTimeout": "1",
	})
	if err != nil {
		return err
	}
	operator, err := backend.Queue(ctx, api, "sqskit-example-operator", nil)
	if err != nil {
		return err
	}
	if _, err := api.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(main), MessageBody: aws.String(`{"order":42,"sku":"does-not-exist"}`),
		MessageAttributes: map[string]types.MessageAttributeValue{"tenant": {DataType: aws.String("String"), StringValue: aws.String("acme")}}}); err != nil {
		return err
	}

	var mu sync.Mutex
	handled := 0
	c, err := consumer.New(api, main, func(context.Context, *consumer.Message) error {
		mu.Lock()
		handled++
		mu.Unlock()
		return fmt.Errorf("unknown SKU") // a poison message: it always fails
	}, func(o *consumer.Options) {
		o.VisibilityTimeout, o.WaitTime, o.OnFailure = time.Second, time.Second, consumer.LeaveToTimeout
	})
	if err != nil {
		return err
	}
	r, err := replay.New(api, dlq, operator, func(o *replay.Options) {
		o.Target, o.WaitTime = main, time.Second
		o.Policy = replay.Policy{MaxAttempts: 3, Backoff: backoff.Exponential{Base: 2 * time.Second}}
		o.Hooks.Replayed = func(_ context.Context, _ *types.Message, d replay.Decision, _ string) {
			fmt.Fprintf(out, "replay %d after %v\n", d.Attempt, d.Delay)
		}
		o.Hooks.Escalated = func(_ context.Context, _ *types.Message, d replay.Decision) {
			fmt.Fprintf(out, "escalated: %s (%s)\n", d.Reason, d.Detail)
		}
	})
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = c.Run(runCtx) }()
	go func() { defer wg.Done(); _ = r.Run(runCtx) }()

	var escalated []types.Message
	for deadline := time.Now().Add(2 * time.Minute); len(escalated) == 0 && time.Now().Before(deadline); {
		res, err := api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(operator), WaitTimeSeconds: 1, MessageAttributeNames: []string{"All"}})
		if err != nil {
			cancel()
			wg.Wait()
			return err
		}
		escalated = res.Messages
	}
	cancel()
	wg.Wait()
	if len(escalated) == 0 {
		return fmt.Errorf("nothing reached the operator queue")
	}
	m := escalated[0]
	var md replay.Metadata
	if err := json.Unmarshal([]byte(aws.ToString(m.MessageAttributes[replay.MetadataAttribute].StringValue)), &md); err != nil {
		return err
	}
	mu.Lock()
	fmt.Fprintf(out, "handled %d times in all\n", handled)
	mu.Unlock()
	fmt.Fprintf(out, "operator queue: body %s, tenant %s, reason %s\n", aws.ToString(m.Body), aws.ToString(m.MessageAttributes["tenant"].StringValue), md.Reason)
	return nil
}

func arnOf(ctx context.Context, api sqsfake.API, url string) (string, error) {
	out, err := api.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err != nil {
		return "", err
	}
	return out.Attributes["QueueArn"], nil
}
