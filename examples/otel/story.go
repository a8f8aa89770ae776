package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/metrics"
	"github.com/aws/smithy-go/tracing"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/consumer"
	"github.com/sqskit/sqskit/fifo"
	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/replay"
	"github.com/sqskit/sqskit/sqsfake"
)

// Telemetry is what every sqskit package takes: smithy-go's providers and
// a trace-context propagator.
type Telemetry struct {
	Tracer     tracing.TracerProvider
	Meter      metrics.MeterProvider
	Propagator handler.Propagator
}

// Story sends one order to a queue whose consumer fails it until it has
// been replayed: SQS moves it to the dead-letter queue after two receives,
// the replayer sends it back, and the consumer handles it. It returns the
// order's message id. Nothing waits: the consumer releases failures at
// once and the replay policy has no delay, so it runs in milliseconds on
// sqsfake.
func Story(ctx context.Context, t Telemetry) (string, error) {
	// The SDK client traces its own calls too: they nest under sqskit's
	// spans, whose ctx every call is made with.
	client := sqsfake.New().Client(func(o *sqs.Options) { o.TracerProvider, o.MeterProvider = t.Tracer, t.Meter })
	dlq, err := createQueue(ctx, client, "orders-dlq", nil)
	if err != nil {
		return "", err
	}
	dlqARN, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(dlq), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err != nil {
		return "", err
	}
	orders, err := createQueue(ctx, client, "orders", map[string]string{
		"RedrivePolicy": `{"deadLetterTargetArn":"` + dlqARN.Attributes["QueueArn"] + `","maxReceiveCount":2}`,
	})
	if err != nil {
		return "", err
	}
	operator, err := createQueue(ctx, client, "orders-operator", nil)
	if err != nil {
		return "", err
	}

	sender, err := fifo.NewSender(client, orders, func(o *fifo.SenderOptions) {
		o.TracerProvider, o.MeterProvider, o.Propagator = t.Tracer, t.Meter, t.Propagator
	})
	if err != nil {
		return "", err
	}
	sent, err := sender.Send(ctx, fifo.Message{Body: `{"order":42}`})
	if err != nil {
		return "", err
	}

	handled := make(chan struct{})
	c, err := consumer.New(client, orders, func(_ context.Context, m *handler.Message) error {
		if _, replayed := m.MessageAttributes[replay.MetadataAttribute]; !replayed {
			return errors.New("payment service unavailable")
		}
		return nil
	}, func(o *consumer.Options) {
		o.TracerProvider, o.MeterProvider, o.Propagator = t.Tracer, t.Meter, t.Propagator
		o.OnFailure = consumer.ReleaseNow
		o.VisibilityTimeout = 30 * time.Second
		o.Hooks.Deleted = func(context.Context, *handler.Message) { close(handled) }
	})
	if err != nil {
		return "", err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- c.Run(runCtx) }()

	// SQS moves the order to the DLQ on the receive after its second
	// failure.
	if err := waitFor(ctx, func() (bool, error) { return depth(ctx, client, dlq) }); err != nil {
		return "", err
	}
	r, err := replay.New(client, dlq, operator, func(o *replay.Options) {
		o.TracerProvider, o.MeterProvider, o.Propagator = t.Tracer, t.Meter, t.Propagator
		o.Target = orders
		o.Policy = replay.Policy{Backoff: backoff.Constant{}}
	})
	if err != nil {
		return "", err
	}
	if rep, err := r.Drain(ctx); err != nil || rep.Replayed != 1 {
		return "", fmt.Errorf("replay: %+v, %v", rep, err)
	}
	select {
	case <-handled:
	case err := <-done:
		return "", fmt.Errorf("consumer stopped early: %v", err)
	case <-ctx.Done():
		return "", ctx.Err()
	}
	stop()
	return sent.MessageID, <-done
}

func createQueue(ctx context.Context, client *sqs.Client, name string, attrs map[string]string) (string, error) {
	out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		return "", err
	}
	return *out.QueueUrl, nil
}

// depth reports whether the queue holds a visible message.
func depth(ctx context.Context, client *sqs.Client, url string) (bool, error) {
	out, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages}})
	if err != nil {
		return false, err
	}
	n, _ := strconv.Atoi(out.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessages)])
	return n > 0, nil
}

// waitFor polls cond every 5 ms for up to a minute.
func waitFor(ctx context.Context, cond func() (bool, error)) error {
	deadline := time.Now().Add(time.Minute)
	for {
		ok, err := cond()
		if err != nil || ok {
			return err
		}
		if time.Now().After(deadline) {
			return errors.New("timed out")
		}
		select {
		case <-time.After(5 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
