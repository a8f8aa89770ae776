package consumer

// Regression tests for the defects of issue 10, one section per defect.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/sqsfake"
)

// Defect 5: options that were accepted and then misbehaved.
func TestDefectOptionsRefusedBeforeRun(t *testing.T) {
	f := newQueue(t, "jobs", nil)
	h := func(context.Context, *handler.Message) error { return nil }
	cases := map[string]func(*Options){
		"MaxInFlight 1<<50 (makechan panic)":         func(o *Options) { o.MaxInFlight = 1 << 50 },
		"Concurrency 1<<40":                          func(o *Options) { o.Concurrency = 1 << 40 },
		"FromBackOff(nil) (nil func call)":           func(o *Options) { o.RedeliveryBackoff = backoff.FromBackOff(nil) },
		"typed nil strategy":                         func(o *Options) { o.RedeliveryBackoff = (*backoff.Capped)(nil) },
		"FullJitter{} receive backoff (never waits)": func(o *Options) { o.ReceiveBackoff = backoff.FullJitter{} },
		"HeartbeatInterval 1ns (burns a core)":       func(o *Options) { o.HeartbeatInterval = time.Nanosecond },
		"WaitTime 1500ms (silently truncated)":       func(o *Options) { o.WaitTime = 1500 * time.Millisecond },
		"MaxReceiveConcurrency above its bound":      func(o *Options) { o.MaxReceiveConcurrency = 1 << 20 },
		"ReceiveConcurrency above MaxReceive":        func(o *Options) { o.ReceiveConcurrency, o.MaxReceiveConcurrency = 5, 4 },
		"HandlerTimeout below 1s":                    func(o *Options) { o.HandlerTimeout = time.Millisecond },
		"DeleteLinger above 1s":                      func(o *Options) { o.DeleteLinger = time.Minute },
	}
	for name, fn := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := New(f.client, f.url, h, fn); !errors.Is(err, ErrConfig) {
				t.Fatalf("expect ErrConfig, got %v", err)
			}
		})
	}
	t.Run("typed nil client (panicked in Run)", func(t *testing.T) {
		if _, err := New((*sqs.Client)(nil), f.url, h); !errors.Is(err, ErrConfig) {
			t.Fatalf("expect ErrConfig, got %v", err)
		}
	})
	t.Run("HeartbeatInterval too long for the queue's visibility", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := newQueue(t, "short", map[string]string{"VisibilityTimeout": "20"})
			q.send(t, "", "m")
			var handled atomic.Int64
			c, err := New(q.client, q.url, func(context.Context, *handler.Message) error { handled.Add(1); return nil }, func(o *Options) {
				o.HeartbeatInterval = 25 * time.Second
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Run(context.Background()); !errors.Is(err, ErrConfig) {
				t.Fatalf("expect Run to refuse it with ErrConfig, got %v", err)
			}
			if v, _ := q.counts(t); v != 1 || handled.Load() != 0 {
				t.Fatalf("expect the message left unhandled and visible, got %d visible, %d handled", v, handled.Load())
			}
		})
	})
}

// Defect 6: on FIFO queues every failure of a group's head released the
// messages received with it, costing each a receive; behind a poison
// message they reached maxReceiveCount unhandled and were dead-lettered
// with it.
func TestDefectFIFOGroupMatesSurvivePoisonHead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sqsfake.New()
		client := srv.Client()
		ctx := context.Background()
		dlq, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("jobs-dlq.fifo"), Attributes: map[string]string{"FifoQueue": "true"}})
		if err != nil {
			t.Fatal(err)
		}
		arn, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: dlq.QueueUrl, AttributeNames: []types.QueueAttributeName{"QueueArn"}})
		if err != nil {
			t.Fatal(err)
		}
		q, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("jobs.fifo"), Attributes: map[string]string{
			"FifoQueue": "true", "ContentBasedDeduplication": "true",
			"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":3}`, arn.Attributes["QueueArn"]),
		}})
		if err != nil {
			t.Fatal(err)
		}
		f := &qfix{srv: srv, client: client, url: *q.QueueUrl}
		f.send(t, "g", "poison", "m1", "m2", "m3", "m4", "m5")
		f.send(t, "h", "h1", "h2")
		var mu sync.Mutex
		var handled []string
		c := newConsumer(t, f, func(_ context.Context, m *handler.Message) error {
			if m.Body == "poison" {
				return errors.New("cannot handle")
			}
			mu.Lock()
			handled = append(handled, m.Body)
			mu.Unlock()
			return nil
		})
		stop := started(t, c)
		until(t, "every good message handled", func() bool { mu.Lock(); defer mu.Unlock(); return len(handled) == 7 })
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: dlq.QueueUrl, MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		var dead []string
		for _, m := range out.Messages {
			dead = append(dead, aws.ToString(m.Body))
		}
		if !slices.Equal(dead, []string{"poison"}) {
			t.Fatalf("expect only the poison message dead-lettered, got %v", dead)
		}
		var g []string
		for _, b := range handled {
			if b[0] == 'm' {
				g = append(g, b)
			}
		}
		if !slices.Equal(g, []string{"m1", "m2", "m3", "m4", "m5"}) {
			t.Fatalf("expect the group's messages handled once each, in order, got %v", g)
		}
	})
}
