// Command consumer-service is a queue worker built on sqskit's consumer, to
// copy into a service of your own: a JSON handler for order messages,
// failures retried with growing delays until SQS moves a message to the
// dead-letter queue, and a clean shutdown on SIGINT or SIGTERM (it stops
// receiving, lets running handlers finish, and flushes deletes). Failures
// are logged on standard error, never with the message body.
//
//	go run ./examples/consumer-service                                   # a sample run, in memory
//	go run ./examples/consumer-service -endpoint http://127.0.0.1:9324   # the sample run against an emulator
//	go run ./examples/consumer-service -endpoint aws -queue https://sqs.eu-west-1.amazonaws.com/123456789012/jobs
//
// With -queue it consumes that queue until a signal, as a service does.
// Without, it runs a sample: it makes queues of its own (jobs, and jobs-dlq
// after 3 receives), sends 20 orders, one of which is not JSON, and runs
// until every order is handled and the bad one is in the dead-letter queue,
// or until a signal; then it deletes the queues. It runs on the real clock
// either way: in memory (no -endpoint) on sqsfake, where the sample takes
// about 7 s, the retries' delays; against an endpoint on queues named
// sqskit-example-*.
//
// Flags:
//
//	-endpoint URL        an SQS endpoint URL (an emulator), or aws for AWS itself, with
//	                     the usual AWS_REGION and credentials; default in memory
//	                     ($SQSKIT_ENDPOINT, or aws when $SQSKIT_AWS is set)
//	-queue URL           the queue to consume; default: the sample run
//	-concurrency N       handlers at once (default 4)
//	-handler-timeout D   the longest a handler may run before its message fails (default 30s)
//	-retry-cap D         the longest a failed message waits before it comes back (default 5m)
//	-log LEVEL           debug, info, warn or error (default warn)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/consumer"
	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/sqsfake"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := (service{stdout: os.Stdout, stderr: os.Stderr}).run(ctx, os.Args[1:]); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "consumer-service:", err)
		}
		os.Exit(1)
	}
}

// service is one run of the worker.
type service struct {
	stdout, stderr io.Writer
	// rand is the source of the retries' jitter; nil means math/rand/v2's.
	// Tests fix it, so that the sample's delays repeat.
	rand backoff.Random
}

// settings are what the flags say.
type settings struct {
	endpoint, queue string
	concurrency     int
	handlerTimeout  time.Duration
	retryCap        time.Duration
	level           slog.Level
}

func parse(args []string, stderr io.Writer) (settings, error) {
	var s settings
	endpoint := os.Getenv("SQSKIT_ENDPOINT")
	if endpoint == "" && os.Getenv("SQSKIT_AWS") != "" {
		endpoint = "aws"
	}
	fs := flag.NewFlagSet("consumer-service", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&s.endpoint, "endpoint", endpoint, "an SQS endpoint URL, or aws; default in memory ($SQSKIT_ENDPOINT, or aws if $SQSKIT_AWS is set)")
	fs.StringVar(&s.queue, "queue", "", "the queue URL to consume; default: a sample run on queues of its own")
	fs.IntVar(&s.concurrency, "concurrency", 4, "handlers at once")
	fs.DurationVar(&s.handlerTimeout, "handler-timeout", 30*time.Second, "the longest a handler may run before its message fails")
	fs.DurationVar(&s.retryCap, "retry-cap", 5*time.Minute, "the longest a failed message waits before it comes back")
	fs.TextVar(&s.level, "log", slog.LevelWarn, "log level on stderr: debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		return s, err
	}
	switch {
	case fs.NArg() > 0:
		return s, fmt.Errorf("unexpected arguments %q", fs.Args())
	case s.queue != "" && s.endpoint == "":
		return s, errors.New("-queue needs -endpoint: in memory there is only the sample's queue")
	}
	return s, nil
}

// The sample: orders 0 to 19, each worth 10 × its number, and order 13 is
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

func (s service) run(ctx context.Context, args []string) (err error) {
	cfg, err := parse(args, s.stderr)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(s.stderr, &slog.HandlerOptions{Level: cfg.level}))
	client, closeIdle, err := newClient(ctx, cfg.endpoint)
	if err != nil {
		return err
	}
	defer closeIdle()

	var total atomic.Int64
	handle := handler.JSON(func(ctx context.Context, o order, m *handler.Message) error {
		total.Add(int64(o.Amount))
		return nil
	})
	options := func(o *consumer.Options) {
		o.Concurrency = cfg.concurrency
		o.HandlerTimeout = cfg.handlerTimeout // the hard bound: a hung handler fails its message
		// The default's strategy (equal jitter from 1 s), with the cap asked for.
		o.RedeliveryBackoff = backoff.EqualJitter{Base: time.Second, Cap: cfg.retryCap, Rand: s.rand}
		o.Logger = logger // failures, with the error; never bodies
		// Middleware, outermost first: a deadline on the handler's ctx, a
		// third of the hard bound. handler.Logging(logger) would add a
		// Debug line per message. TracerProvider, MeterProvider and
		// Propagator plug OpenTelemetry in: see examples/otel.
		o.Middleware = []handler.Middleware{handler.Timeout(cfg.handlerTimeout / 3)}
	}
	if cfg.queue != "" {
		c, err := consumer.New(client, cfg.queue, handle, options)
		if err != nil {
			return err
		}
		logger.Info("consuming", "queue", cfg.queue)
		err = c.Run(ctx) // until SIGINT or SIGTERM
		st := c.Stats()
		fmt.Fprintf(s.stdout, "stopped: %d messages handled, %d failures\n", st.Deleted, st.Failed)
		if errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	}
	return s.sample(ctx, client, cfg.endpoint, &total, handle, options)
}

// newClient returns an SQS client: sqsfake's in memory, or the SDK's for
// endpoint ("aws" for AWS itself), and a function that closes the client's
// idle connections when the program is done with it.
func newClient(ctx context.Context, endpoint string) (*sqs.Client, func(), error) {
	if endpoint == "" {
		return sqsfake.New().Client(), func() {}, nil
	}
	var loads []func(*config.LoadOptions) error
	if endpoint != "aws" && os.Getenv("AWS_ACCESS_KEY_ID") == "" && os.Getenv("AWS_PROFILE") == "" {
		// An emulator takes any credentials.
		loads = append(loads, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")))
	}
	cfg, err := config.LoadDefaultConfig(ctx, loads...)
	if err != nil {
		return nil, nil, fmt.Errorf("load AWS config: %w", err)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	transport := awshttp.NewBuildableClient().GetTransport() // the SDK's defaults
	client := sqs.NewFromConfig(cfg, func(o *sqs.Options) {
		o.HTTPClient = &http.Client{Transport: transport}
		if endpoint != "aws" {
			o.BaseEndpoint = aws.String(endpoint)
		}
	})
	return client, transport.CloseIdleConnections, nil
}

// sample makes the jobs queue and its dead-letter queue, sends the orders,
// and consumes them until every good one is handled and the bad one is in
// the dead-letter queue; then it deletes the queues.
func (s service) sample(ctx context.Context, client *sqs.Client, endpoint string, total *atomic.Int64, handle handler.Handler, options func(*consumer.Options)) (err error) {
	start := time.Now()
	say := func(format string, args ...any) {
		fmt.Fprintf(s.stdout, "%6s  %s\n", time.Since(start).Round(100*time.Millisecond), fmt.Sprintf(format, args...))
	}
	where := "in memory (sqsfake), in real time"
	if endpoint != "" {
		where = endpoint + ", in real time"
	}
	fmt.Fprintln(s.stdout, "backend:", where)
	prefix := ""
	if endpoint != "" {
		prefix = "sqskit-example-" + strconv.FormatInt(time.Now().UnixMilli(), 36) + "-" // a run's own queues
	}
	jobs, dlq, err := createQueues(ctx, client, prefix)
	defer func() { err = errors.Join(err, deleteQueues(ctx, client, jobs, dlq)) }()
	if err != nil {
		return err
	}
	numbers, err := send(ctx, client, jobs)
	if err != nil {
		return err
	}
	say("sent %d orders to jobs (dead-letter queue after %d receives); order %d is not JSON", orders, maxReceives, badOrder)

	var deleted atomic.Int64
	handled := make(chan struct{}) // closed once every good order is deleted
	c, err := consumer.New(client, jobs, handle, options, func(o *consumer.Options) {
		// Hooks are told after the event, on a goroutine of the consumer's.
		o.Hooks.Released = func(_ context.Context, m *handler.Message, visibleIn time.Duration) {
			say("order %d failed (receive %d); back on the queue in %v", numbers[m.ID], m.ReceiveCount(), visibleIn.Round(100*time.Millisecond))
		}
		o.Hooks.Deleted = func(context.Context, *handler.Message) {
			if deleted.Add(1) == orders-1 {
				close(handled)
			}
		}
	})
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- c.Run(runCtx) }()
	dead, err := waitForDLQ(ctx, client, dlq, handled)
	cancel() // as SIGTERM does: Run shuts down cleanly
	if runErr := <-stopped; runErr != nil && !errors.Is(runErr, context.Canceled) {
		return errors.Join(err, runErr)
	}
	st := c.Stats()
	if err != nil {
		if ctx.Err() != nil { // a signal: the shutdown is the sample's end
			fmt.Fprintf(s.stdout, "stopped by a signal: %d orders handled, %d failures\n", st.Deleted, st.Failed)
			return nil
		}
		return err
	}
	say("SQS moved order %d to the dead-letter queue", numbers[aws.ToString(dead.MessageId)])
	fmt.Fprintf(s.stdout, "handled %d orders worth %d; %d failures; in the dead-letter queue: %s\n",
		st.Deleted, total.Load(), st.Failed, aws.ToString(dead.Body))
	return nil
}

// createQueues makes the jobs queue and its dead-letter queue.
func createQueues(ctx context.Context, client *sqs.Client, prefix string) (jobs, dlq string, err error) {
	out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(prefix + "jobs-dlq")})
	if err != nil {
		return "", "", fmt.Errorf("create the dead-letter queue: %w", err)
	}
	dlq = aws.ToString(out.QueueUrl)
	attrs, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: out.QueueUrl,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err != nil {
		return "", dlq, fmt.Errorf("read the dead-letter queue's ARN: %w", err)
	}
	redrive := fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"%d"}`, attrs.Attributes[string(types.QueueAttributeNameQueueArn)], maxReceives)
	out, err = client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(prefix + "jobs"),
		Attributes: map[string]string{string(types.QueueAttributeNameRedrivePolicy): redrive}})
	if err != nil {
		return "", dlq, fmt.Errorf("create the jobs queue: %w", err)
	}
	return aws.ToString(out.QueueUrl), dlq, nil
}

// deleteQueues deletes the sample's queues, even after ctx ended (a signal),
// within 30 s.
func deleteQueues(ctx context.Context, client *sqs.Client, urls ...string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	var errs []error
	for _, url := range urls {
		if url == "" {
			continue
		}
		if _, err := client.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}); err != nil {
			errs = append(errs, fmt.Errorf("delete queue %s: %w", url, err))
		}
	}
	return errors.Join(errs...)
}

// send sends the orders in batches of ten and returns each message's order
// number by message id (a DLQ message keeps its id).
func send(ctx context.Context, client *sqs.Client, url string) (map[string]int, error) {
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
		res, err := client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
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
	return numbers, nil
}

// waitForDLQ returns the bad order once every good order is deleted and SQS
// has moved the bad one to the dead-letter queue, long-polling it, for up to
// two minutes.
func waitForDLQ(ctx context.Context, client *sqs.Client, dlq string, handled <-chan struct{}) (*types.Message, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	select {
	case <-handled:
	case <-ctx.Done():
		return nil, fmt.Errorf("orders not handled: %w", ctx.Err())
	}
	for {
		res, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(dlq), MaxNumberOfMessages: 1, WaitTimeSeconds: 20})
		if err != nil {
			return nil, fmt.Errorf("receive from the dead-letter queue: %w", err)
		}
		if len(res.Messages) > 0 {
			return &res.Messages[0], nil
		}
	}
}
