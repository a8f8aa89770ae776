package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/fifo"
	"github.com/sqskit/sqskit/internal/queueref"
	"github.com/sqskit/sqskit/internal/sqserr"
	"github.com/sqskit/sqskit/internal/wait"
)

// A queue may be given to New, NewBatch and NewParker by name ("orders") as
// well as by URL. A name is resolved with GetQueueUrl, which the client may
// offer beside the calls of API (as *sqs.Client does): a client without it
// keeps compiling, and a name then ends Run with ErrConfig saying so.

// resolveQueue turns the queue name given to New into its URL, at the start
// of Run, before any other call; a URL is kept as it is. Throttling and
// server errors are retried after ReceiveBackoff, as receives are. It
// returns false when Run must return at once: with the error (matching
// ErrConfig when the name cannot be resolved), or nil when ctx ended first.
func (c *Consumer) resolveQueue(ctx context.Context) (bool, error) {
	if queueref.IsURL(c.queueURL) {
		return true, nil
	}
	waits := backoff.NewIterator(c.opts.ReceiveBackoff)
	for {
		url, err := queueref.Resolve(ctx, c.client, c.queueURL)
		switch {
		case err == nil:
			c.opts.Logger.LogAttrs(ctx, slog.LevelInfo, "consumer: queue name resolved", slog.String("queue", c.queueURL), slog.String("url", url))
			c.queueURL = url // Run owns the Consumer: no other Run reads it now
			c.ctl.mu.Lock()
			c.ctl.queue = url // Status reads it from any goroutine
			c.ctl.mu.Unlock()
			return true, nil
		case errors.Is(err, queueref.ErrUnresolved):
			return false, configError("%w", err)
		case ctx.Err() != nil:
			return false, nil
		case !sqserr.Transient(err):
			return false, fmt.Errorf("consumer: %w", err)
		}
		c.opts.Logger.LogAttrs(ctx, slog.LevelWarn, "consumer: GetQueueUrl failed; retrying", slog.String("error", err.Error()))
		if !wait.Sleep(ctx, receiveWait(waits)) {
			return false, nil
		}
	}
}

// sourceURL is the Parker's source queue URL, resolved from its name the
// first time.
func (p *Parker) sourceURL(ctx context.Context) (string, error) {
	url, err := p.queue.Resolve(ctx, p.client)
	switch {
	case errors.Is(err, queueref.ErrUnresolved):
		return "", configError("%w", err)
	case err != nil:
		return "", err
	}
	return url, nil
}

// parkingConfig makes the parking queue's sender's ErrConfig (its name
// cannot be resolved) match ErrConfig too.
func parkingConfig(err error) error {
	if errors.Is(err, fifo.ErrConfig) && !errors.Is(err, ErrConfig) {
		return fmt.Errorf("%w: parking queue: %w", ErrConfig, err)
	}
	return err
}

// QueueResolver lets the parking queue's fifo.Sender resolve a name with the
// Parker's client, when that client can.
func (b batchOnly) QueueResolver() queueref.Resolver { return queueref.Of(b.ParkerAPI) }
