// Command sqskit is the operator's tool for SQS queues: it lists queues and
// their dead-letter queues, peeks at and explains messages (the replayer's
// counter and metadata decoded), replays selected messages with the
// replayer's guarantees, starts and follows redrives, purges, certifies any
// SQS endpoint with sqstest's cases, plans capacity, and serves sqsfake.
//
//	cd cmd/sqskit && go install .   # from a clone (go.mod replaces the library with ../..)
//	sqskit queues
//	sqskit peek orders-dlq
//	sqskit replay orders-dlq --reason HandlerFailed        # a dry run
//	sqskit replay orders-dlq --reason HandlerFailed --yes  # moves them
//
// It reads the AWS environment and profiles as the AWS CLI does
// (AWS_PROFILE, AWS_REGION, AWS_ENDPOINT_URL_SQS, ~/.aws/config) and takes
// --profile, --region and --endpoint-url. Output is a table for people and
// JSON with -o json. Every command that moves, deletes or purges messages
// changes nothing without --yes (or, at a terminal, a typed confirmation).
//
// Exit codes: 0 done; 1 failed; 2 bad arguments (nothing was changed);
// 3 not confirmed (nothing was changed); 4 conform found failing cases.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], newTerminal(os.Stdin, os.Stdout, os.Stderr))
	stop()
	os.Exit(code)
}
