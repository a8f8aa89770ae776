package consumer

import (
	"context"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/fifo"
	"github.com/sqskit/sqskit/internal/sqserr"
)

// poll receives for free places until ctx is done. On FIFO queues it goes
// through a fifo.Receiver, so a receive retried after a failure in transit
// reuses its ReceiveRequestAttemptId.
func (r *run) poll(ctx context.Context) {
	o := &r.c.opts
	recv, err := fifo.NewReceiver(r.c.client, r.c.queueURL)
	if err != nil {
		r.stop(err)
		return
	}
	errBackoff := backoff.NewIterator(o.ReceiveBackoff)
	for {
		n := r.acquire(ctx)
		if n == 0 {
			return
		}
		out, err := recv.Receive(ctx, &sqs.ReceiveMessageInput{
			MaxNumberOfMessages:         int32(n),
			WaitTimeSeconds:             int32(o.WaitTime / time.Second),
			VisibilityTimeout:           int32(o.VisibilityTimeout / time.Second),
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
			MessageAttributeNames:       []string{"All"},
		})
		now := time.Now()
		if err != nil {
			r.giveBack(n)
			if ctx.Err() != nil {
				return
			}
			if sqserr.Final(err) {
				r.log.LogAttrs(ctx, slog.LevelError, "consumer: receive failed for good", slog.String("error", err.Error()))
				r.stop(err)
				return
			}
			d := errBackoff.NextBackOff()
			if d == backoff.Stop {
				errBackoff.Reset()
				d = errBackoff.NextBackOff()
			}
			r.log.LogAttrs(ctx, slog.LevelWarn, "consumer: receive failed; retrying", slog.String("error", err.Error()), slog.Duration("delay", d))
			if !backoff.Sleep(ctx, d) {
				return
			}
			continue
		}
		errBackoff.Reset()
		r.giveBack(n - len(out.Messages))
		msgs := make([]*Message, len(out.Messages))
		for i, m := range out.Messages {
			msgs[i] = fromSDK(m)
		}
		r.accept(msgs, now)
	}
}

// acquire takes places to receive into: it waits for one, then takes up to
// ten. While the workers have a full backlog it waits for all ten, so
// receives come back full under load; otherwise it takes what is free now,
// so idle workers are fed at once. It returns 0 when ctx ends before the
// first place.
func (r *run) acquire(ctx context.Context) int {
	select {
	case r.slots <- struct{}{}:
	case <-ctx.Done():
		return 0
	}
	n := 1
	for n < 10 {
		select {
		case r.slots <- struct{}{}:
			n++
			continue
		default:
		}
		if len(r.ready) < r.c.opts.Concurrency {
			return n
		}
		select {
		case r.slots <- struct{}{}:
			n++
		case <-ctx.Done():
			return n
		}
	}
	return n
}

func (r *run) giveBack(n int) {
	for range n {
		<-r.slots
	}
}
