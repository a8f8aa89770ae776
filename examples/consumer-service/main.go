// Command consumer-service is a queue worker built on sqskit's consumer: a
// JSON handler for order messages, a failure retried with growing delays
// until SQS moves it to the dead-letter queue, and a clean shutdown on
// SIGINT or SIGTERM (it stops receiving, lets running handlers finish, and
// flushes deletes).
//
// It makes queues of its own (jobs, and jobs-dlq after 3 receives), sends
// 20 orders, one of which is not JSON, and runs until every order is
// handled and the bad one is in the dead-letter queue, or until a signal;
// then it deletes the queues. In memory (the default) it runs on simulated
// time: the queues' clock jumps ahead whenever the consumer waits, so the
// retries' delays pass at once. With SQSKIT_ENDPOINT (an emulator) or
// SQSKIT_AWS=1 (real AWS) it runs in real time, on queues named
// sqskit-example-*, retrying after a second. Failures are logged on
// standard error.
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
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/consumer"
	"github.com/sqskit/sqskit/examples/internal/backend"
	"github.com/sqskit/sqskit/examples/internal/sim"
	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/sqsfake"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Stdout, os.Stderr); err != nil {
		log.Fatal(err)
	}
}

// The story: orders 0 to 19, each worth 10 × its number, and order 13 is
// not JSON, so it fails on every receive.
const (
	orders      = 20
	badOrder    = 13
	maxReceives = 3 // the jobs queue's redrive policy
)

type order struct {
	ID     int `json:"id"`
	Amount int `json:"amount"`
}

// worker is the service: its SQS client, and the queues' clock in memory.
type worker struct {
	api       *sqs.Client
	clock     *sim.Clock // nil: real time
	probe     *sim.Probe
	closeIdle func()
	out       io.Writer
	start     time.Time
	mu        sync.Mutex // serialises out

	// received counts the messages that receives from the jobs queue
	// returned, as the SDK hands them over; settled counts those the
	// consumer deleted or released, once their hook has run. Until they
	// match, a message is on its way through the consumer and the
	// simulated clock must not move.
	jobs              string
	received, settled atomic.Int64
}

func open(ctx context.Context, endpoint string, out io.Writer) (*worker, error) {
	w := &worker{out: out, closeIdle: func() {}}
	if endpoint == "" {
		w.clock = sim.NewClock(time.Date(2026, time.March, 2, 9, 0, 0, 0, time.UTC))
		w.probe = sim.NewProbe(w.clock)
		w.api = sqsfake.New(func(o *sqsfake.Options) { o.Clock = w.clock }).Client(w.probe.Instrument, w.countReceived)
		fmt.Fprintln(out, "backend: in memory, on simulated time")
	} else {
		var err error
		if w.api, w.closeIdle, err = backend.Client(ctx, endpoint); err != nil {
			return nil, err
		}
		fmt.Fprintln(out, "backend:", endpoint+", in real time")
	}
	w.start = w.now()
	return w, nil
}

func (w *worker) now() time.Time {
	if w.clock != nil {
		return w.clock.Now()
	}
	return time.Now()
}

// say prints a line of the timeline, stamped with the queues' time since
// the start.
func (w *worker) say(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	fmt.Fprintf(w.out, "%6s  %s\n", w.now().Sub(w.start).Round(100*time.Millisecond), fmt.Sprintf(format, args...))
}

func run(ctx context.Context, out, errOut io.Writer) (err error) {
	endpoint := backend.Endpoint()
	w, err := open(ctx, endpoint, out)
	if err != nil {
		return err
	}
	defer w.closeIdle()
	queues := backend.NewQueues(w.api, endpoint, "sqskit-example")
	defer func() { err = errors.Join(err, queues.DeleteAll(ctx)) }()
	jobs, dlq, err := createQueues(ctx, queues)
	if err != nil {
		return err
	}
	w.jobs = jobs
	numbers, err := w.send(ctx, jobs)
	if err != nil {
		return err
	}

	var total atomic.Int64
	handle := handler.JSON(func(ctx context.Context, o order, m *handler.Message) error {
		total.Add(int64(o.Amount))
		return nil
	})
	redelivery := backoff.Strategy(backoff.Constant{D: time.Second})
	if w.clock != nil {
		// The default (EqualJitter from 1 s), seeded so the timeline repeats.
		redelivery = backoff.EqualJitter{Base: time.Second, Cap: 5 * time.Minute, Rand: backoff.NewRandom(1)}
	}
	logger := slog.New(slog.NewTextHandler(errOut, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var deleted atomic.Int64
	handled := make(chan struct{}) // closed once every good order is deleted
	c, err := consumer.New(w.api, jobs, handle, func(o *consumer.Options) {
		o.Concurrency = 4
		o.HandlerTimeout = 30 * time.Second // the hard bound: a hung handler fails its message after 30 s
		o.RedeliveryBackoff = redelivery
		o.Logger = logger // failures, with the error; never bodies
		// Middleware, outermost first: a 10 s deadline on the handler's
		// ctx, inside the hard bound. handler.Logging(logger) would add a
		// Debug line per message handled. TracerProvider, MeterProvider and
		// Propagator plug OpenTelemetry in: see examples/otel.
		o.Middleware = []handler.Middleware{handler.Timeout(10 * time.Second)}
		o.Hooks.Released = func(_ context.Context, m *handler.Message, visibleIn time.Duration) {
			w.say("order %d failed (receive %d); back on the queue in %v", numbers[m.ID], m.ReceiveCount(), visibleIn.Round(100*time.Millisecond))
			w.settled.Add(1)
		}
		o.Hooks.Deleted = func(context.Context, *handler.Message) {
			if deleted.Add(1) == orders-1 {
				close(handled)
			}
			w.settled.Add(1)
		}
	})
	if err != nil {
		return err
	}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- c.Run(runCtx) }()
	dead, err := w.waitForDLQ(ctx, c, dlq, handled)
	cancel() // a real service cancels on SIGTERM: Run shuts down cleanly
	if runErr := <-stopped; runErr != nil && !errors.Is(runErr, context.Canceled) {
		return errors.Join(err, runErr)
	}
	s := c.Stats()
	if err != nil {
		if ctx.Err() != nil { // a signal: the shutdown is the story's end
			fmt.Fprintf(out, "stopped by a signal: %d orders handled, %d failures\n", s.Deleted, s.Failed)
			return nil
		}
		return err
	}
	w.say("SQS moved order %d to the dead-letter queue", numbers[aws.ToString(dead.MessageId)])
	fmt.Fprintf(out, "handled %d orders worth %d; %d failures; in the dead-letter queue: %s\n",
		s.Deleted, total.Load(), s.Failed, aws.ToString(dead.Body))
	return nil
}

// createQueues makes the jobs queue and its dead-letter queue.
func createQueues(ctx context.Context, queues *backend.Queues) (jobs, dlq string, err error) {
	if dlq, err = queues.Create(ctx, "jobs-dlq", nil); err != nil {
		return "", "", err
	}
	arn, err := queues.ARN(ctx, dlq)
	if err != nil {
		return "", "", err
	}
	jobs, err = queues.Create(ctx, "jobs", map[string]string{"RedrivePolicy": backend.RedrivePolicy(arn, maxReceives)})
	return jobs, dlq, err
}

// send sends the orders in batches of ten and returns each message's order
// number by message id (a DLQ message keeps its id).
func (w *worker) send(ctx context.Context, url string) (map[string]int, error) {
	numbers := make(map[string]int, orders)
	for first := 0; first < orders; first += 10 {
		var entries []types.SendMessageBatchRequestEntry
		for i := first; i < min(first+10, orders); i++ {
			body := fmt.Sprintf(`{"id":%d,"amount":%d}`, i, 10*i)
			if i == badOrder {
				body = "not json"
			}
			entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(body)})
		}
		res, err := w.api.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
		if err != nil {
			return nil, fmt.Errorf("send orders: %w", err)
		}
		if len(res.Failed) > 0 {
			f := res.Failed[0]
			return nil, fmt.Errorf("send order %s: %s: %s", aws.ToString(f.Id), aws.ToString(f.Code), aws.ToString(f.Message))
		}
		for _, ok := range res.Successful {
			n, _ := strconv.Atoi(aws.ToString(ok.Id))
			numbers[aws.ToString(ok.MessageId)] = n
		}
	}
	w.say("sent %d orders to jobs (dead-letter queue after %d receives); order %d is not JSON", orders, maxReceives, badOrder)
	return numbers, nil
}

// waitForDLQ returns the bad order once SQS has moved it to the dead-letter
// queue and every good order is deleted: in memory, driving the simulated
// clock; on an endpoint, long-polling the dead-letter queue, for up to
// two minutes.
func (w *worker) waitForDLQ(ctx context.Context, c *consumer.Consumer, dlq string, handled <-chan struct{}) (*types.Message, error) {
	if w.clock == nil {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		select {
		case <-handled:
		case <-ctx.Done():
			return nil, fmt.Errorf("orders not handled: %w", ctx.Err())
		}
		for {
			m, err := w.receiveOne(ctx, dlq, 20)
			if m != nil || err != nil {
				return m, err
			}
		}
	}
	var dead *types.Message
	var err error
	d := sim.Driver{Clock: w.clock, Probe: w.probe, Pollers: 1, Quiet: func() bool {
		return w.received.Load() == w.settled.Load() && c.Stats().InFlight == 0
	}}
	runErr := d.Run(ctx, func() bool {
		select {
		case <-handled:
		default:
			return false
		}
		dead, err = w.receiveOne(ctx, dlq, 0) // a look, with no wait on the simulated clock
		return dead != nil || err != nil
	})
	return dead, errors.Join(runErr, err)
}

// receiveOne receives a message from url, waiting up to wait seconds, or
// returns nil.
func (w *worker) receiveOne(ctx context.Context, url string, wait int32) (*types.Message, error) {
	res, err := w.api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 1, WaitTimeSeconds: wait})
	if err != nil {
		return nil, fmt.Errorf("receive from the dead-letter queue: %w", err)
	}
	if len(res.Messages) == 0 {
		return nil, nil
	}
	return &res.Messages[0], nil
}

// countReceived adds to received the messages each receive from the jobs
// queue returns, inside the probe's watch of the call, so that no moment
// passes between the call's end and the count.
func (w *worker) countReceived(o *sqs.Options) {
	o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
		return s.Initialize.Add(middleware.InitializeMiddlewareFunc("example.received", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleInitialize(ctx, in)
			if r, ok := in.Parameters.(*sqs.ReceiveMessageInput); ok && err == nil && aws.ToString(r.QueueUrl) == w.jobs {
				if res, ok := out.Result.(*sqs.ReceiveMessageOutput); ok {
					w.received.Add(int64(len(res.Messages)))
				}
			}
			return out, md, err
		}), middleware.After)
	})
}
