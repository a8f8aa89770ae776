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
//	-fail spec         a fault: OPERATION[@QUEUE]:N[:internal|throttled|lost]
//	                   fails the next N calls (lost: after they took effect);
//	                   repeatable
//	-quota-fifo r      throttle each action on each FIFO queue to r calls/s
//	-quota-standard r  the same on standard queues
//
// The flags and the serve loop live in internal/fakeserve, shared with
// `sqskit serve`.
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
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/sqskit/sqskit/internal/fakeserve"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stderr, nil); err != nil {
		fmt.Fprintln(os.Stderr, "sqsfake:", err)
		os.Exit(1)
	}
}

// run serves until ctx ends. It reports the base URL on ready once it
// listens, if ready is not nil.
func run(ctx context.Context, args []string, stderr io.Writer, ready chan<- string) error {
	return fakeserve.Run(ctx, "sqsfake", args, stderr, ready)
}
