// Command sqsfake runs sqskit's in-memory SQS as a standalone emulator that
// any language, SDK or the AWS CLI can use over HTTP. It speaks both of SQS's
// wire protocols: AWS JSON 1.0, which current SDKs and AWS CLIs send, and the
// query protocol (form-encoded Action=…, XML answers), which older SDKs and
// distribution-packaged AWS CLI v2 builds (Debian's 2.9) still send.
//
//	go run github.com/sqskit/sqskit/cmd/sqsfake -addr 127.0.0.1:9324 \
//	    -queue orders-dlq -queue orders,dlq=orders-dlq,maxReceiveCount=5
//
// Point a client at it with an endpoint override. Any region and any
// credentials work: signatures are accepted and not checked.
//
//	export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1
//	aws --endpoint-url http://127.0.0.1:9324 sqs list-queues
//	aws --endpoint-url http://127.0.0.1:9324 sqs send-message \
//	    --queue-url http://127.0.0.1:9324/123456789012/orders --message-body hello
//	aws --endpoint-url http://127.0.0.1:9324 sqs receive-message \
//	    --queue-url http://127.0.0.1:9324/123456789012/orders --attribute-names All
//
// In Go, set BaseEndpoint (sqs.Options) or AWS_ENDPOINT_URL_SQS; in Python,
// boto3.client("sqs", endpoint_url="http://127.0.0.1:9324"). Queue URLs in
// answers point back at the address the request was sent to.
//
// Flags:
//
//	-addr host:port    where to listen (default 127.0.0.1:9324; port 0 picks one)
//	-queue spec        a queue to create at start; repeat for more. spec is
//	                   NAME[,ATTRIBUTE=VALUE...] with any CreateQueue attribute,
//	                   plus dlq=NAME and maxReceiveCount=N (default 3) for a
//	                   redrive policy; a name ending in .fifo makes a FIFO queue
//	-region name       region in queue ARNs (default us-east-1)
//	-account id        account in queue URLs and ARNs (default 123456789012)
//	-max-requests n    requests served at once, long polls included (default 1024)
//	-quiet             no request log
//
// Limits, so that a misbehaving client cannot exhaust the process: a
// request body is at most 8 MiB (a larger declared Content-Length is
// answered 413 before the body is read, and memory grows with the bytes
// that arrive, not with the length declared); headers must arrive within
// 10 s and a whole request within 60 s; an idle keep-alive connection is
// closed after 120 s; at most -max-requests requests (default 1024, long
// polls included) are served at once, and one beyond that is answered at
// once with HTTP 503 ServiceUnavailable, which SDKs retry.
//
// Each request is logged on standard error: operation, queue, HTTP status and
// duration, never a body or attribute value. State lives in memory and ends
// with the process. SIGINT or SIGTERM shuts it down cleanly: it stops
// listening, answers long polls in progress, and exits 0.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqskit/sqskit/sqsfake"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stderr, nil); err != nil {
		fmt.Fprintln(os.Stderr, "sqsfake:", err)
		os.Exit(1)
	}
}

// queueFlags collects repeated -queue flags.
type queueFlags []string

func (q *queueFlags) String() string     { return strings.Join(*q, " ") }
func (q *queueFlags) Set(v string) error { *q = append(*q, v); return nil }

// shutdownGrace is how long a shutdown waits for requests in progress.
const shutdownGrace = 5 * time.Second

// run serves until ctx ends. It reports the base URL on ready once it
// listens, if ready is not nil.
func run(ctx context.Context, args []string, stderr io.Writer, ready chan<- string) error {
	fs := flag.NewFlagSet("sqsfake", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:9324", "where to listen, host:port")
	region := fs.String("region", "us-east-1", "region in queue ARNs")
	account := fs.String("account", "123456789012", "account id in queue URLs and ARNs")
	quiet := fs.Bool("quiet", false, "no request log")
	maxRequests := fs.Int("max-requests", 1024, "requests served at once, long polls included; more are answered 503")
	var queues queueFlags
	fs.Var(&queues, "queue", "queue to create at start: NAME[,ATTRIBUTE=VALUE...][,dlq=NAME][,maxReceiveCount=N]; repeatable")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *maxRequests < 1 {
		return fmt.Errorf("-max-requests %d: must be at least 1", *maxRequests)
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	srv := sqsfake.New(func(o *sqsfake.Options) {
		o.Region, o.AccountID = *region, *account
		if !*quiet {
			o.Logger = logger
		}
	})
	if err := createQueues(ctx, srv, *region, *account, queues); err != nil {
		return err
	}
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	hs, err := sqsfake.NewHTTPServer(srv, func(o *sqsfake.HTTPOptions) { o.Listener, o.MaxConcurrentRequests = l, *maxRequests })
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	logger.Info("sqsfake listening", "url", hs.URL, "queues", len(queues))
	if ready != nil {
		ready <- hs.URL
	}
	<-ctx.Done()
	logger.Info("sqsfake shutting down")
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	return hs.Shutdown(sctx)
}

// queueSpec is one -queue flag.
type queueSpec struct {
	name            string
	attrs           map[string]string
	dlq             string
	maxReceiveCount string
}

func parseQueueSpec(spec string) (queueSpec, error) {
	parts := strings.Split(spec, ",")
	q := queueSpec{name: strings.TrimSpace(parts[0]), attrs: map[string]string{}, maxReceiveCount: "3"}
	if q.name == "" {
		return q, fmt.Errorf("-queue %q: no queue name", spec)
	}
	for _, p := range parts[1:] {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return q, fmt.Errorf("-queue %q: %q is not ATTRIBUTE=VALUE", spec, p)
		}
		switch k {
		case "dlq":
			q.dlq = v
		case "maxReceiveCount":
			q.maxReceiveCount = v
		default:
			q.attrs[k] = v
		}
	}
	if strings.HasSuffix(q.name, ".fifo") {
		q.attrs["FifoQueue"] = "true"
	}
	return q, nil
}

// createQueues creates every queue, then sets redrive policies, so a -queue
// may name a dead-letter queue given after it.
func createQueues(ctx context.Context, srv *sqsfake.Server, region, account string, specs []string) error {
	client := srv.Client()
	parsed := make([]queueSpec, len(specs))
	urls := make([]*string, len(specs))
	for i, spec := range specs {
		q, err := parseQueueSpec(spec)
		if err != nil {
			return err
		}
		parsed[i] = q
		out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(q.name), Attributes: q.attrs})
		if err != nil {
			return fmt.Errorf("-queue %q: %w", spec, err)
		}
		urls[i] = out.QueueUrl
	}
	for i, q := range parsed {
		if q.dlq == "" {
			continue
		}
		policy := fmt.Sprintf(`{"deadLetterTargetArn":"arn:aws:sqs:%s:%s:%s","maxReceiveCount":%q}`, region, account, q.dlq, q.maxReceiveCount)
		_, err := client.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: urls[i], Attributes: map[string]string{"RedrivePolicy": policy}})
		if err != nil {
			return fmt.Errorf("-queue %q: redrive to %s: %w", specs[i], q.dlq, err)
		}
	}
	return nil
}
