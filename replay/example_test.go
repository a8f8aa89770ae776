package replay_test

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/replay"
	"github.com/sqskit/sqskit/sqsfake"
)

// A pass over a dead-letter queue, on sqsfake: a message with replays left
// goes back to its queue, one that had its three goes to the operator queue.
func ExampleReplayer_Drain() {
	api := sqsfake.New().Client()
	ctx := context.Background()
	queue := func(name string) string {
		out, err := api.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
		if err != nil {
			panic(err)
		}
		return *out.QueueUrl
	}
	dlq, orders, operator := queue("orders-dlq"), queue("orders"), queue("orders-operator")
	for body, replays := range map[string]string{"order 1": "0", "order 2": "3"} {
		_, err := api.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(dlq), MessageBody: aws.String(body),
			MessageAttributes: map[string]types.MessageAttributeValue{replay.DefaultCounterAttribute: {DataType: aws.String("Number"), StringValue: aws.String(replays)}}})
		if err != nil {
			panic(err)
		}
	}
	r, err := replay.New(api, dlq, operator, func(o *replay.Options) {
		o.Target = orders
		o.Hooks.Escalated = func(_ context.Context, m *types.Message, d replay.Decision) {
			fmt.Println("escalated:", *m.Body, d.Reason)
		}
	})
	if err != nil {
		panic(err)
	}
	rep, err := r.Drain(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Printf("replayed %d, escalated %d\n", rep.Replayed, rep.Escalated)
	// Output:
	// escalated: order 2 attempts-exhausted
	// replayed 1, escalated 1
}

// The policy alone: the counter decides the attempt, the strategy the delay
// (replay n waits Delay(n-1)), and a forged counter is escalated.
func ExamplePolicy_Decide() {
	p := replay.Policy{MaxAttempts: 3, Backoff: backoff.Exponential{Base: time.Minute}}
	for _, counter := range []string{"0", "2", "3", "many"} {
		m := &types.Message{MessageId: aws.String("m-1"), Body: aws.String("order"),
			MessageAttributes: map[string]types.MessageAttributeValue{replay.DefaultCounterAttribute: {DataType: aws.String("String"), StringValue: aws.String(counter)}}}
		switch d := p.Decide(m, time.Now()); d.Action {
		case replay.Replay:
			fmt.Printf("counter %s: replay %d after %v\n", counter, d.Attempt, d.Delay)
		case replay.Escalate:
			fmt.Printf("counter %s: escalate, %s\n", counter, d.Reason)
		}
	}
	// Output:
	// counter 0: replay 1 after 1m0s
	// counter 2: replay 3 after 4m0s
	// counter 3: escalate, attempts-exhausted
	// counter many: escalate, invalid-counter
}
