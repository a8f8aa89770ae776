package main

import (
	"flag"
	"io"

	"github.com/spf13/cobra"

	"github.com/sqskit/sqskit/internal/fakeserve"
)

// newServeCmd is sqsfake as a process: the same flags and server as
// cmd/sqsfake (internal/fakeserve), with fault flags for tests of the
// commands that move messages.
func newServeCmd(a *app) *cobra.Command {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg := fakeserve.Flags(fs)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve sqsfake, sqskit's in-memory SQS, over HTTP",
		Long: `serve runs sqsfake, the in-memory SQS that passes sqstest's whole suite, as
cmd/sqsfake does: both wire protocols (AWS JSON 1.0 and query), any region and
credentials, queues created from --queue specs, one log line per request on
standard error (never a body). It stops cleanly on SIGINT or SIGTERM.

--fail and --quota-* inject faults, so that scripts and tests can watch a
command that moves messages survive failed, throttled and lost calls.
--region here is the region in queue ARNs.`,
		Example: `  sqskit serve --addr 127.0.0.1:9324 --queue orders-dlq --queue orders,dlq=orders-dlq,maxReceiveCount=5
  sqskit serve --addr 127.0.0.1:0 --queue jobs --fail SendMessageBatch:2 --fail DeleteMessageBatch:1:lost
  sqskit serve --queue events.fifo,ContentBasedDeduplication=true --quota-fifo 300`,
		Args: noArgs,
		PreRunE: func(*cobra.Command, []string) error {
			if err := cfg.Validate(); err != nil {
				return usageError("%w", err)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cfg.Serve(cmd.Context(), a.term.err, nil)
		},
	}
	cmd.Flags().AddGoFlagSet(fs)
	return cmd
}

// noArgs refuses positional arguments as a usage error.
func noArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError("unexpected arguments %q", args)
	}
	return nil
}
