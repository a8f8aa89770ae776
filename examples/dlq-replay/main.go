// Command dlq-replay follows one poison message through sqskit's replay
// package: a consumer fails on it, SQS moves it to a dead-letter queue after
// two receives, the replayer sends it back three times with growing
// jittered delays, then escalates it to an operator queue with the reason
// and its history. It is the worked example of package replay's
// documentation, run.
//
// In memory (the default) it runs on simulated time: sqsfake's ManualClock
// moves on, a second at a time, whenever the consumer and the replayer both
// wait in their long polls with nothing in hand (see wait), so its ten
// minutes pass at once, with the default replay policy. With SQSKIT_ENDPOINT
// (an emulator) or SQSKIT_AWS=1 it runs in real time with delays of seconds,
// on queues of its own (sqskit-example-*) that it deletes at the end.
// Failures are logged on standard error.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/consumer"
	"github.com/sqskit/sqskit/examples/internal/backend"
	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/replay"
	"github.com/sqskit/sqskit/sqsfake"
)

func main() {
	if err := run(context.Background(), os.Stdout, os.Stderr); err != nil {
		log.Fatal(err)
	}
}

// clients are the example's SQS clients, on simulated time in memory.
type clients struct {
	api, replayer *sqs.Client
	clock         *sqsfake.ManualClock // nil: real time
	closeIdle     []func()
}

func open(ctx context.Context, endpoint string) (*clients, error) {
	if endpoint == "" {
		c := &clients{clock: sqsfake.NewManualClock(time.Date(2026, time.March, 2, 9, 0, 0, 0, time.UTC))}
		srv := sqsfake.New(func(o *sqsfake.Options) { o.Clock = c.clock })
		c.api, c.replayer = srv.Client(), srv.Client()
		return c, nil
	}
	c := &clients{}
	var err error
	var closeIdle func()
	for _, client := range []**sqs.Client{&c.api, &c.replayer} {
		if *client, closeIdle, err = backend.Client(ctx, endpoint); err != nil {
			return nil, err
		}
		c.closeIdle = append(c.closeIdle, closeIdle)
	}
	return c, nil
}

func (c *clients) now() time.Time {
	if c.clock != nil {
		return c.clock.Now()
	}
	return time.Now()
}

func run(ctx context.Context, out, errOut io.Writer) (err error) {
	endpoint := backend.Endpoint()
	c, err := open(ctx, endpoint)
	if err != nil {
		return err
	}
	defer func() {
		for _, closeIdle := range c.closeIdle {
			closeIdle()
		}
	}()
	logger := slog.New(slog.NewTextHandler(errOut, &slog.HandlerOptions{Level: slog.LevelError}))
	where := "in memory, on simulated time"
	if endpoint != "" {
		where = endpoint + ", in real time"
	}
	fmt.Fprintln(out, "backend:", where)

	// In memory: the worked example of package replay's doc, with its 30 s
	// visibility timeout and the default policy. On an endpoint: seconds.
	visibility, policy := "30", replay.Policy{}
	if endpoint != "" {
		visibility, policy = "1", replay.Policy{MaxAttempts: 3, Backoff: backoff.Exponential{Base: time.Second}}
	}
	queues := backend.NewQueues(c.api, endpoint, "sqskit-example")
	defer func() { err = errors.Join(err, queues.DeleteAll(ctx)) }()
	dlq, err := queues.Create(ctx, "dlq", nil)
	if err != nil {
		return err
	}
	dlqArn, err := queues.ARN(ctx, dlq)
	if err != nil {
		return err
	}
	main, err := queues.Create(ctx, "main", map[string]string{"RedrivePolicy": backend.RedrivePolicy(dlqArn, 2), "VisibilityTimeout": visibility})
	if err != nil {
		return err
	}
	operator, err := queues.Create(ctx, "operator", nil)
	if err != nil {
		return err
	}

	start := c.now()
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, "%6s  %s\n", c.now().Sub(start).Round(100*time.Millisecond), fmt.Sprintf(format, args...))
	}
	if _, err := c.api.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(main), MessageBody: aws.String(`{"order":42,"sku":"does-not-exist"}`),
		MessageAttributes: map[string]types.MessageAttributeValue{"tenant": {DataType: aws.String("String"), StringValue: aws.String("acme")}}}); err != nil {
		return err
	}
	say("sent order 42 to the main queue (maxReceiveCount 2, visibility timeout %ss)", visibility)

	// Hooks are told on a goroutine of their own, after the event: in
	// memory the clock waits until every event so far has been told (told
	// counts up to events) before it moves, so each line says when its
	// event happened.
	var events, told atomic.Int64
	handled := 0
	cons, err := consumer.New(c.api, main, func(_ context.Context, m *handler.Message) error {
		mu.Lock()
		handled++
		mu.Unlock()
		events.Add(1)
		return errors.New("unknown SKU") // a poison message: it always fails
	}, func(o *consumer.Options) {
		o.OnFailure = consumer.LeaveToTimeout // back when its visibility timeout ends, as with a plain SQS consumer
		o.Logger = logger
		o.Hooks.Failed = func(_ context.Context, m *handler.Message, err error) {
			say("handler failed (receive %d): %v", m.ReceiveCount(), err)
			told.Add(1)
		}
	})
	if err != nil {
		return err
	}
	escalated := make(chan struct{})
	r, err := replay.New(countingReceives{c.replayer, &events}, dlq, operator, func(o *replay.Options) {
		o.Target, o.Policy, o.Logger = main, policy, logger
		o.Concurrency = 1 // one long poll, as the clock's driver expects (see wait)
		o.Hooks.Replayed = func(_ context.Context, _ *types.Message, d replay.Decision, _ string) {
			say("dead-lettered by SQS; replay %d, back on the main queue in %v", d.Attempt, d.Delay.Round(100*time.Millisecond))
			told.Add(1)
		}
		o.Hooks.Escalated = func(_ context.Context, _ *types.Message, d replay.Decision) {
			say("dead-lettered by SQS; escalated: %s (%s)", d.Reason, d.Detail)
			told.Add(1)
			close(escalated)
		}
	})
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, worker := range []func(context.Context) error{cons.Run, r.Run} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := worker(runCtx); err != nil {
				logger.Error("stopped", "error", err)
			}
		}()
	}
	err = wait(ctx, c, []string{main, dlq}, func() bool { return cons.Stats().InFlight == 0 && told.Load() == events.Load() }, escalated)
	cancel()
	wg.Wait()
	if err != nil {
		return err
	}
	return readOperator(ctx, c.api, operator, out, handled)
}

// wait returns once the message is escalated: on an endpoint, within ten
// minutes; in memory, driving sqsfake's clock. Whenever the consumer and
// the replayer wait in their long polls, parked on the clock, with nothing
// in hand (quiet), nothing told late and nothing visible on their queues
// (a poll that has just been woken is about to take it), nothing can happen
// until the clock moves: wait moves it one second (SQS counts its delays
// and timeouts in seconds) and looks again.
func wait(ctx context.Context, c *clients, queues []string, quiet func() bool, escalated <-chan struct{}) error {
	if c.clock == nil {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
		defer cancel()
		select {
		case <-escalated:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("nothing reached the operator queue: %w", ctx.Err())
		}
	}
	const polls = 2 // the consumer's and the replayer's
	for {
		for c.clock.Timers() < polls || !quiet() || visible(ctx, c.api, queues) {
			select {
			case <-escalated:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(50 * time.Microsecond):
			}
		}
		select {
		case <-escalated:
			return nil
		default:
		}
		// One second, then look again: a poll the second woke may be back
		// in its long poll before this goroutine runs, with work in hand.
		c.clock.Advance(time.Second)
	}
}

// visible reports whether a message waits visible on one of the queues.
func visible(ctx context.Context, api *sqs.Client, queues []string) bool {
	for _, q := range queues {
		out, err := api.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(q),
			AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages}})
		if err != nil || out.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessages)] != "0" {
			return true
		}
	}
	return false
}

// readOperator reads the escalation as the human on duty would: the body,
// the attributes the message came with, and the reason.
func readOperator(ctx context.Context, api *sqs.Client, operator string, out io.Writer, handled int) error {
	res, err := api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(operator), MaxNumberOfMessages: 1, MessageAttributeNames: []string{"All"}})
	if err != nil {
		return err
	}
	if len(res.Messages) == 0 {
		return errors.New("nothing in the operator queue")
	}
	m := res.Messages[0]
	var md replay.Metadata
	if err := json.Unmarshal([]byte(aws.ToString(m.MessageAttributes[replay.MetadataAttribute].StringValue)), &md); err != nil {
		return fmt.Errorf("read the replay metadata: %w", err)
	}
	fmt.Fprintf(out, "handled %d times in all\n", handled)
	fmt.Fprintf(out, "operator queue: body %s, tenant %s, reason %s, replays %s\n", aws.ToString(m.Body),
		aws.ToString(m.MessageAttributes["tenant"].StringValue), md.Reason, aws.ToString(m.MessageAttributes[replay.DefaultCounterAttribute].StringValue))
	return nil
}

// countingReceives counts the messages the replayer's receives bring: each
// is an event whose hook the simulation waits for.
type countingReceives struct {
	*sqs.Client
	events *atomic.Int64
}

func (c countingReceives) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	out, err := c.Client.ReceiveMessage(ctx, in, optFns...)
	if err == nil {
		c.events.Add(int64(len(out.Messages)))
	}
	return out, err
}
