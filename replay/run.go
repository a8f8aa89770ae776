package replay

import (
	"context"
	"errors"
	"fmt"

	"github.com/sqskit/sqskit/consumer"
	"github.com/sqskit/sqskit/internal/ctxkey"
	"github.com/sqskit/sqskit/internal/queueref"
)

// Run replays continuously until ctx is done, or a call fails for good (a
// queue does not exist, access is denied to a receive, a send, a delete or
// a hold), whose error it returns once the batches under way are done. It
// is consumer.Consumer.Run with the policy as its batch handler: up to
// Concurrency batches at once, receives that grow with the backlog, holds,
// deletes and parking on the operator queue batched and in flight together,
// and the consumer's shutdown (ShutdownTimeout) when ctx ends.
func (r *Replayer) Run(ctx context.Context) error {
	_, err := r.pass(ctx, false)
	return err
}

// Drain makes one pass over what is in the DLQ now, for a CLI or a cron
// job, and returns what it did (consumer.Consumer.Drain): it stops at the
// first receive that brings nothing after a 1 s poll, and returns once every
// message received is settled. Messages it has seen before in the pass
// (failed ones coming back) are left as they are, with the rest of their
// FIFO group. A receive that fails in a retryable way is retried after
// ReceiveBackoff, five times in a row at most; after that, or on a call's
// final error (as Run's), Drain returns the error with what it did so far.
func (r *Replayer) Drain(ctx context.Context) (Report, error) {
	return r.pass(ctx, true)
}

// drainReceiveAttempts bounds the receives in a row that may fail in a
// retryable way before Drain gives up.
const drainReceiveAttempts = 5

// pass is Run, or Drain.
func (r *Replayer) pass(ctx context.Context, drain bool) (Report, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	s := r.newSession(cancel)
	client := r.client
	if drain {
		s.seen = map[string]bool{}
		client.onReceive = s.receiveDone
	}
	if err := r.resolveQueues(ctx); err != nil {
		return Report{}, err
	}
	if err := r.checkDLQ(ctx, r.resolved(r.dlq)); err != nil {
		return Report{}, err
	}
	c, err := consumer.NewBatch(client, r.resolved(r.dlq), s.handle, r.consumerOptions(s.hooks(), drain))
	if err != nil {
		return Report{}, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	// The Report is counted, and Hooks called, from the consumer's hooks:
	// none of their signals may be dropped.
	ctx = context.WithValue(ctx, ctxkey.LosslessHooks{}, true)
	if drain {
		err = c.Drain(ctx)
	} else {
		err = c.Run(ctx)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fatal != nil {
		return s.report, s.fatal
	}
	return s.report, err
}

// resolveQueues resolves the queues given by name before a pass receives
// anything, so a wrong name stops the pass instead of failing each message;
// each is resolved once per Replayer, and a failure is tried again on the
// next pass. The consumer, the senders and the Parker resolve the same names
// again on their own first use.
func (r *Replayer) resolveQueues(ctx context.Context) error {
	for _, q := range r.queues {
		_, err := q.Resolve(ctx, r.client)
		switch {
		case errors.Is(err, queueref.ErrUnresolved):
			return fmt.Errorf("%w: %w", ErrConfig, err)
		case err != nil:
			return fmt.Errorf("replay: %w", err)
		}
	}
	return nil
}

// resolved is the URL of a queue given to New, once resolved; until then,
// what was given.
func (r *Replayer) resolved(given string) string {
	for _, q := range r.queues {
		if q.Given() == given {
			if url := q.URL(); url != "" {
				return url
			}
		}
	}
	return given
}
