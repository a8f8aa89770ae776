package replay

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/consumer"
	"github.com/sqskit/sqskit/internal/sqserr"
)

// Run replays continuously until ctx is done, or a receive fails for good
// (the DLQ does not exist, access is denied), whose error it returns. A
// batch in progress when ctx ends is finished first: its sends and deletes
// use a context that outlives ctx by up to a minute, so nothing sent is
// left undeleted for want of a context.
func (r *Replayer) Run(ctx context.Context) error {
	errBackoff := backoff.NewIterator(r.opts.ErrorBackoff)
	for {
		msgs, err := r.receive(ctx, r.opts.WaitTime)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if sqserr.Final(err) {
				return err
			}
			d := errBackoff.NextBackOff()
			r.opts.Logger.LogAttrs(ctx, slog.LevelWarn, "replay: receive failed; retrying", slog.String("error", err.Error()), slog.Duration("delay", d))
			if !backoff.Sleep(ctx, d) {
				return nil
			}
			continue
		}
		errBackoff.Reset()
		if len(msgs) > 0 {
			work, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			r.process(work, msgs, false)
			cancel()
		}
	}
}

// Drain makes one pass over what is in the DLQ now, for a CLI or a cron job,
// and returns what it did. It stops at the first empty receive, or when a
// receive brings only messages it has already seen (held, skipped or failed
// ones coming back).
func (r *Replayer) Drain(ctx context.Context) (Report, error) {
	var report Report
	seen := map[string]bool{}
	for {
		msgs, err := r.receive(ctx, time.Second)
		if err != nil {
			return report, err
		}
		fresh := msgs[:0]
		for _, m := range msgs {
			if !seen[aws.ToString(m.MessageId)] {
				seen[aws.ToString(m.MessageId)] = true
				fresh = append(fresh, m)
			}
		}
		if len(fresh) == 0 {
			return report, nil
		}
		report.add(r.process(ctx, fresh, false))
	}
}

// HandleLambda handles a Lambda invocation from the DLQ as event source
// (with ReportBatchItemFailures). Replayed and escalated messages are
// reported as successes, and Lambda deletes them; held, skipped and failed
// ones are reported as failures, so they stay in the DLQ (a held message is
// invisible until due). The DLQ must not have a redrive policy of its own:
// escalation is explicit.
func (r *Replayer) HandleLambda(ctx context.Context, event events.SQSEvent) (events.SQSEventResponse, error) {
	l, err := consumer.NewBatchLambda(func(ctx context.Context, batch []*consumer.Message) []error {
		msgs := make([]types.Message, len(batch))
		for i, m := range batch {
			msgs[i] = types.Message{MessageId: aws.String(m.ID), ReceiptHandle: aws.String(m.ReceiptHandle), Body: aws.String(m.Body),
				Attributes: m.Attributes, MessageAttributes: m.MessageAttributes}
		}
		items := r.processItems(ctx, msgs, true)
		errs := make([]error, len(items))
		for i, it := range items {
			switch it.state {
			case replayed, escalated:
			case held:
				errs[i] = errHeld
			case skipped:
				errs[i] = errSkipped
			default:
				errs[i] = errors.Join(errNotMoved, it.err)
			}
		}
		return errs
	})
	if err != nil {
		return events.SQSEventResponse{}, err
	}
	return l.Handle(ctx, consumer.Event(event))
}

var (
	errHeld     = errors.New("replay: held in the DLQ until due")
	errSkipped  = errors.New("replay: not picked by the filter")
	errNotMoved = errors.New("replay: not moved")
)

func (r *Replayer) receive(ctx context.Context, wait time.Duration) ([]types.Message, error) {
	out, err := r.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(r.dlq), MaxNumberOfMessages: 10,
		WaitTimeSeconds:             int32(wait / time.Second),
		VisibilityTimeout:           int32(r.opts.VisibilityTimeout / time.Second),
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		MessageAttributeNames:       []string{"All"},
	})
	if err != nil {
		return nil, err
	}
	return out.Messages, nil
}

// waitForRate spaces batches so no more than RateLimit messages per second
// leave the DLQ.
func (r *Replayer) waitForRate(ctx context.Context, n int) {
	if r.opts.RateLimit <= 0 || n == 0 {
		return
	}
	r.rateMu.Lock()
	now := time.Now()
	start := r.rateNext
	if start.Before(now) {
		start = now
	}
	r.rateNext = start.Add(time.Duration(float64(n) / r.opts.RateLimit * float64(time.Second)))
	r.rateMu.Unlock()
	backoff.Sleep(ctx, start.Sub(now))
}
