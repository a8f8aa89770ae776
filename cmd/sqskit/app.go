package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/sqskit/sqskit/internal/queueref"
)

// Exit codes, for scripts.
const (
	exitOK            = 0
	exitFailed        = 1 // a call failed, or the work did not finish
	exitUsage         = 2 // a bad argument; nothing was changed
	exitNotConfirmed  = 3 // a change was not confirmed; nothing was changed
	exitNonConformant = 4 // conform: at least one case failed
)

// exitError carries the exit code an error ends the command with.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageError is a bad argument: exit 2, before anything changed.
func usageError(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// exitCode is the code err ends the command with.
func exitCode(err error) int {
	var e *exitError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &e):
		return e.code
	default:
		return exitFailed
	}
}

// terminal is where a command reads and writes, and whether a person is
// there: confirmations need one, progress bars draw only for one.
type terminal struct {
	in              io.Reader
	out, err        io.Writer
	interactive     bool // stdin and stderr are terminals: someone can answer
	progressVisible bool // stderr is a terminal: progress may redraw a line
}

func newTerminal(in *os.File, out, errOut *os.File) terminal {
	errTTY := term.IsTerminal(int(errOut.Fd()))
	return terminal{
		in: in, out: out, err: errOut,
		interactive:     term.IsTerminal(int(in.Fd())) && errTTY,
		progressVisible: errTTY,
	}
}

// app is one invocation: its terminal, its global flags, and its client.
type app struct {
	term terminal

	endpoint, region, profile string
	output                    string // "table" or "json"
	yes                       bool

	// newClient builds the SQS client from the flags and the AWS
	// environment; tests give sqsfake's.
	newClient func(ctx context.Context) (*sqs.Client, error)
	client    *sqs.Client

	// shortPoll makes peek's and show's receives return at once (tests on
	// a manual clock, where a long poll would wait for the test).
	shortPoll bool
}

// sqs is the client, built once.
func (a *app) sqs(ctx context.Context) (*sqs.Client, error) {
	if a.client != nil {
		return a.client, nil
	}
	newClient := a.newClient
	if newClient == nil {
		newClient = a.clientFromEnvironment
	}
	c, err := newClient(ctx)
	if err != nil {
		return nil, err
	}
	a.client = c
	return c, nil
}

// clientFromEnvironment reads the AWS environment and profiles as the AWS
// CLI does; --profile, --region and --endpoint-url take precedence.
func (a *app) clientFromEnvironment(ctx context.Context) (*sqs.Client, error) {
	var opts []func(*config.LoadOptions) error
	if a.region != "" {
		opts = append(opts, config.WithRegion(a.region))
	}
	if a.profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(a.profile))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, usageError("AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return nil, usageError("no region: pass --region or set AWS_REGION (or a region in the profile)")
	}
	return sqs.NewFromConfig(cfg, func(o *sqs.Options) {
		if a.endpoint != "" {
			o.BaseEndpoint = aws.String(a.endpoint)
		}
	}), nil
}

// queueURL turns a queue given by name or URL into its URL. A queue that
// does not exist is a bad argument.
func (a *app) queueURL(ctx context.Context, queue string) (string, error) {
	if queue == "" {
		return "", usageError("no queue given")
	}
	if queueref.IsURL(queue) {
		return queue, nil
	}
	c, err := a.sqs(ctx)
	if err != nil {
		return "", err
	}
	out, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(queue)})
	if err != nil {
		var missing *types.QueueDoesNotExist
		if errors.As(err, &missing) {
			return "", usageError("queue %q does not exist", queue)
		}
		return "", fmt.Errorf("queue %q: %w", queue, err)
	}
	return aws.ToString(out.QueueUrl), nil
}

// run runs one invocation and returns its exit code.
func run(ctx context.Context, args []string, t terminal) int {
	return runApp(ctx, args, &app{term: t})
}

func runApp(ctx context.Context, args []string, a *app) int {
	root := newRoot(a)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err != nil {
		fmt.Fprintln(a.term.err, "sqskit:", err)
	}
	return exitCode(err)
}

// newRoot is the command tree.
func newRoot(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "sqskit",
		Short: "The operator's tool for SQS queues, dead-letter queues and endpoints",
		Long: `sqskit inspects queues and dead-letter queues, explains and replays
selected messages with the replayer's guarantees, redrives, purges, certifies
an SQS endpoint, plans capacity, and serves an in-memory SQS.

It reads the AWS environment and profiles as the AWS CLI does. Commands that
move, delete or purge messages change nothing without --yes (or, at a
terminal, a typed confirmation).

Exit codes: 0 done; 1 failed; 2 bad arguments (nothing was changed);
3 not confirmed (nothing was changed); 4 conform found failing cases.`,
		Example: `  sqskit queues
  sqskit peek orders-dlq -n 20
  sqskit --endpoint-url http://127.0.0.1:9324 --region us-east-1 queues -o json`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError("unknown command %q (sqskit --help lists them)", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if a.output != "table" && a.output != "json" {
				return usageError("-o %q: want table or json", a.output)
			}
			if a.endpoint != "" {
				u, err := url.Parse(a.endpoint)
				if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					return usageError("--endpoint-url %q: want http:// or https:// and a host", a.endpoint)
				}
			}
			return nil
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &exitError{code: exitUsage, err: err}
	})
	f := root.PersistentFlags()
	f.StringVar(&a.endpoint, "endpoint-url", "", "SQS endpoint to call instead of AWS's (an emulator, a VPC endpoint)")
	f.StringVar(&a.region, "region", "", "AWS region (default: AWS_REGION or the profile's)")
	f.StringVar(&a.profile, "profile", "", "AWS profile from ~/.aws/config (default: AWS_PROFILE)")
	f.StringVarP(&a.output, "output", "o", "table", "output format: table or json")
	f.BoolVar(&a.yes, "yes", false, "make the change without asking: required without a terminal")
	// Before the built-in commands are made: completion binds its output
	// when it is created.
	root.SetIn(a.term.in)
	root.SetOut(a.term.out)
	root.SetErr(a.term.err)
	// Once the commands below are added (cobra makes completion only for a
	// root with subcommands), and before the caller gets root.
	defer withBuiltinExamples(root)

	// Each command lives in its own file.
	root.AddCommand(newQueuesCmd(a), newPeekCmd(a), newShowCmd(a), newPurgeCmd(a), newPlanCmd(a), newServeCmd(a), newConformCmd(a),
		newReplayCmd(a), newRedriveCmd(a))
	return root
}

// withBuiltinExamples adds cobra's help and completion commands now rather
// than at Execute, so that they too carry examples.
func withBuiltinExamples(root *cobra.Command) {
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		switch c.Name() {
		case "help":
			c.Example = "  sqskit help peek\n  sqskit peek --help"
		case "completion":
			c.Example = "  source <(sqskit completion bash)\n  sqskit completion zsh > \"${fpath[1]}/_sqskit\""
			for _, sh := range c.Commands() {
				sh.Example = fmt.Sprintf("  sqskit completion %s", sh.Name())
			}
		}
	}
}
