// Command consumer-service is a queue worker with sqskit's consumer: it
// handles order messages until SIGINT or SIGTERM, then shuts down cleanly
// (stops receiving, finishes running handlers, flushes deletes).
//
// In memory (the default) it seeds a queue, handles what is there, and
// stops by itself. With SQSKIT_ENDPOINT or SQSKIT_AWS=1 it consumes
// sqskit-example-jobs until interrupted.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqskit/sqskit/consumer"
	"github.com/sqskit/sqskit/examples/internal/backend"
	"github.com/sqskit/sqskit/handler"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

type order struct {
	ID     int `json:"id"`
	Amount int `json:"amount"`
}

func run(ctx context.Context, out io.Writer) error {
	api, where, err := backend.Open(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "backend:", where)
	url, err := backend.Queue(ctx, api, "sqskit-example-jobs", nil)
	if err != nil {
		return err
	}
	inMemory := where == "in-memory"
	const seeded = 20
	if inMemory {
		for i := range seeded {
			body := fmt.Sprintf(`{"id":%d,"amount":%d}`, i, 10*i)
			if i == 13 {
				body = "not json" // fails, and is retried with backoff
			}
			if _, err := api.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)}); err != nil {
				return err
			}
		}
	}

	var total atomic.Int64
	handle := consumer.JSON(func(ctx context.Context, o order, m *consumer.Message) error {
		total.Add(int64(o.Amount))
		return nil
	})
	logger := slog.New(slog.NewTextHandler(io.Discard, nil)) // os.Stderr in a real service
	c, err := consumer.New(api, url, handle, func(o *consumer.Options) {
		o.Concurrency = 4
		o.HandlerTimeout = 30 * time.Second // the hard bound: a hung handler fails its message after 30 s
		o.Logger = logger
		// Middleware, outermost first: a line per message (id, group,
		// receive count, duration; never the body), and a 10 s deadline on
		// the handler's ctx, inside the hard bound.
		o.Middleware = []consumer.Middleware{handler.Logging(logger), handler.Timeout(10 * time.Second)}
		// TracerProvider, MeterProvider and Propagator plug OpenTelemetry
		// in through smithy-go's adapters: see examples/otel.
	})
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if inMemory {
		go func() { // a real service waits for a signal; the demo stops when the queue is done
			for c.Stats().Deleted < seeded-1 {
				time.Sleep(10 * time.Millisecond)
			}
			cancel()
		}()
	}
	if err := c.Run(runCtx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	s := c.Stats()
	fmt.Fprintf(out, "handled %d orders worth %s, %d failed and left to retry\n", s.Deleted, strconv.FormatInt(total.Load(), 10), s.Failed)
	return nil
}
