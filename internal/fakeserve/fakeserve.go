// Package fakeserve runs sqsfake as a standalone emulator over HTTP: the
// flags, the -queue specs, the fault flags and the serve loop shared by
// cmd/sqsfake and `sqskit serve`, so the two cannot drift apart.
package fakeserve

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqskit/sqskit/sqsfake"
)

// ShutdownGrace is how long a shutdown waits for requests in progress.
const ShutdownGrace = 5 * time.Second

// Config is what the flags set.
type Config struct {
	Addr        string
	Region      string
	Account     string
	Quiet       bool
	MaxRequests int
	Queues      []string // -queue specs
	Faults      []string // -fail specs
	// QuotaFIFO and QuotaStandard, when non-zero, throttle each action on
	// each queue to that many calls a second (sqsfake.Quota).
	QuotaFIFO, QuotaStandard float64
}

// listFlag collects a repeated flag.
type listFlag struct{ v *[]string }

func (l listFlag) String() string {
	if l.v == nil {
		return ""
	}
	return strings.Join(*l.v, " ")
}
func (l listFlag) Set(v string) error { *l.v = append(*l.v, v); return nil }

// Flags registers the emulator's flags on fs and returns the Config they
// fill in.
func Flags(fs *flag.FlagSet) *Config {
	c := &Config{}
	fs.StringVar(&c.Addr, "addr", "127.0.0.1:9324", "where to listen, host:port (port 0 picks one)")
	fs.StringVar(&c.Region, "region", "us-east-1", "region in queue ARNs")
	fs.StringVar(&c.Account, "account", "123456789012", "account id in queue URLs and ARNs")
	fs.BoolVar(&c.Quiet, "quiet", false, "no request log")
	fs.IntVar(&c.MaxRequests, "max-requests", 1024, "requests served at once, long polls included; more are answered 503")
	fs.Var(listFlag{&c.Queues}, "queue", "a `spec` of a queue to create at start: NAME[,ATTRIBUTE=VALUE...], with dlq=NAME and maxReceiveCount=N (default 3) for a redrive policy; repeatable")
	fs.Var(listFlag{&c.Faults}, "fail", "a `fault`: OPERATION[@QUEUE]:N[:KIND] fails the next N calls of the operation (on that queue), KIND internal (HTTP 500, the default), throttled, or lost (the call takes effect, its answer is an error); repeatable")
	fs.Float64Var(&c.QuotaFIFO, "quota-fifo", 0, "throttle each action on each FIFO queue to this many calls/s (SQS: 300); 0: no quota")
	fs.Float64Var(&c.QuotaStandard, "quota-standard", 0, "throttle each action on each standard queue to this many calls/s; 0: no quota")
	return c
}

// Run parses args as cmd/sqsfake's command line and serves until ctx ends.
// It reports the base URL on ready once it listens, if ready is not nil.
func Run(ctx context.Context, name string, args []string, stderr io.Writer, ready chan<- string) error {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := Flags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return c.Serve(ctx, stderr, ready)
}

// Validate checks what can be checked before anything starts.
func (c *Config) Validate() error {
	if c.MaxRequests < 1 {
		return fmt.Errorf("-max-requests %d: must be at least 1", c.MaxRequests)
	}
	if c.QuotaFIFO < 0 || c.QuotaStandard < 0 {
		return errors.New("-quota-fifo and -quota-standard must not be negative")
	}
	for _, spec := range c.Queues {
		if _, err := ParseQueueSpec(spec); err != nil {
			return err
		}
	}
	for _, spec := range c.Faults {
		if _, err := ParseFault(spec); err != nil {
			return err
		}
	}
	return nil
}

// Serve serves until ctx ends, then shuts down cleanly.
func (c *Config) Serve(ctx context.Context, stderr io.Writer, ready chan<- string) error {
	if err := c.Validate(); err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	srv := sqsfake.New(func(o *sqsfake.Options) {
		o.Region, o.AccountID = c.Region, c.Account
		if !c.Quiet {
			o.Logger = logger
		}
		if c.QuotaFIFO > 0 || c.QuotaStandard > 0 {
			o.Quota = &sqsfake.Quota{FIFO: c.QuotaFIFO, Standard: c.QuotaStandard}
		}
	})
	if err := CreateQueues(ctx, srv, c.Region, c.Account, c.Queues); err != nil {
		return err
	}
	for _, spec := range c.Faults {
		f, _ := ParseFault(spec) // validated
		srv.Inject(f)
	}
	l, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return err
	}
	hs, err := sqsfake.NewHTTPServer(srv, func(o *sqsfake.HTTPOptions) { o.Listener, o.MaxConcurrentRequests = l, c.MaxRequests })
	if err != nil {
		l.Close()
		return err
	}
	logger.Info("sqsfake listening", "url", hs.URL, "queues", len(c.Queues), "faults", len(c.Faults))
	if ready != nil {
		ready <- hs.URL
	}
	<-ctx.Done()
	logger.Info("sqsfake shutting down")
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownGrace)
	defer cancel()
	return hs.Shutdown(sctx)
}

// QueueSpec is one -queue flag.
type QueueSpec struct {
	Name            string
	Attrs           map[string]string
	DLQ             string
	MaxReceiveCount string
}

// ParseQueueSpec reads NAME[,ATTRIBUTE=VALUE...][,dlq=NAME][,maxReceiveCount=N].
func ParseQueueSpec(spec string) (QueueSpec, error) {
	parts := strings.Split(spec, ",")
	q := QueueSpec{Name: strings.TrimSpace(parts[0]), Attrs: map[string]string{}, MaxReceiveCount: "3"}
	if q.Name == "" {
		return q, fmt.Errorf("-queue %q: no queue name", spec)
	}
	for _, p := range parts[1:] {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return q, fmt.Errorf("-queue %q: %q is not ATTRIBUTE=VALUE", spec, p)
		}
		switch k {
		case "dlq":
			q.DLQ = v
		case "maxReceiveCount":
			q.MaxReceiveCount = v
		default:
			q.Attrs[k] = v
		}
	}
	if strings.HasSuffix(q.Name, ".fifo") {
		q.Attrs["FifoQueue"] = "true"
	}
	return q, nil
}

// CreateQueues creates every queue, then sets redrive policies, so a -queue
// may name a dead-letter queue given after it.
func CreateQueues(ctx context.Context, srv *sqsfake.Server, region, account string, specs []string) error {
	client := srv.Client()
	parsed := make([]QueueSpec, len(specs))
	urls := make([]*string, len(specs))
	for i, spec := range specs {
		q, err := ParseQueueSpec(spec)
		if err != nil {
			return err
		}
		parsed[i] = q
		out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(q.Name), Attributes: q.Attrs})
		if err != nil {
			return fmt.Errorf("-queue %q: %w", spec, err)
		}
		urls[i] = out.QueueUrl
	}
	for i, q := range parsed {
		if q.DLQ == "" {
			continue
		}
		policy := fmt.Sprintf(`{"deadLetterTargetArn":"arn:aws:sqs:%s:%s:%s","maxReceiveCount":%q}`, region, account, q.DLQ, q.MaxReceiveCount)
		_, err := client.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: urls[i], Attributes: map[string]string{"RedrivePolicy": policy}})
		if err != nil {
			return fmt.Errorf("-queue %q: redrive to %s: %w", specs[i], q.DLQ, err)
		}
	}
	return nil
}

// ParseFault reads OPERATION[@QUEUE]:N[:internal|throttled|lost]: the next
// N calls of the operation (on that queue, if named) fail with an internal
// error (HTTP 500, the default), a throttle, or — lost — an internal error
// after the call took effect, as when an acknowledgement is lost. The SDK
// retries all three, as it would from SQS.
func ParseFault(spec string) (sqsfake.Fault, error) {
	parts := strings.Split(spec, ":")
	if len(parts) < 2 || len(parts) > 3 || parts[0] == "" {
		return sqsfake.Fault{}, fmt.Errorf("-fail %q: want OPERATION[@QUEUE]:N[:internal|throttled|lost]", spec)
	}
	op, queue, _ := strings.Cut(parts[0], "@")
	n, err := strconv.Atoi(parts[1])
	if err != nil || n < 1 {
		return sqsfake.Fault{}, fmt.Errorf("-fail %q: %q is not a count of calls, 1 or more", spec, parts[1])
	}
	f := sqsfake.Fault{Op: op, Queue: queue, Times: n, Err: sqsfake.ErrInternal}
	if len(parts) == 3 {
		switch parts[2] {
		case "internal":
		case "throttled":
			f.Err = sqsfake.ErrThrottled
		case "lost":
			f.AfterApply = true
		default:
			return sqsfake.Fault{}, fmt.Errorf("-fail %q: kind %q: want internal, throttled or lost", spec, parts[2])
		}
	}
	return f, nil
}
