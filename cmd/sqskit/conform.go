package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/spf13/cobra"

	"github.com/sqskit/sqskit/internal/fauxqs/emulator"
	"github.com/sqskit/sqskit/sqstest"
)

// conformReport is `sqskit conform -o json`.
type conformReport struct {
	Endpoint   string           `json:"endpoint"`
	KnownGaps  string           `json:"known_gaps,omitempty"`
	Passed     int              `json:"passed"`
	Skipped    int              `json:"skipped"`
	Failed     int              `json:"failed"`
	Incomplete bool             `json:"incomplete,omitempty"` // interrupted: not every case ran
	Results    []sqstest.Result `json:"results"`
}

// conformPreflightTimeout bounds conform's first call, which checks that
// the endpoint answers as SQS before any case runs.
var conformPreflightTimeout = 10 * time.Second

// conformPreflight lists queues (a read) to check that the endpoint is up
// and answers as SQS: an endpoint that is down, answers something else, or
// never answers is one clear error (exit 1), not every case failed (exit 4,
// a verdict on an SQS that was never reached) or a run that never ends.
func conformPreflight(ctx context.Context, c *sqs.Client, prefix string) error {
	ctx, cancel := context.WithTimeout(ctx, conformPreflightTimeout)
	defer cancel()
	_, err := c.ListQueues(ctx, &sqs.ListQueuesInput{QueueNamePrefix: aws.String(prefix), MaxResults: aws.Int32(1)})
	switch {
	case err == nil:
		return nil
	case ctx.Err() == context.DeadlineExceeded:
		return fmt.Errorf("conform: %s did not answer ListQueues within %v: nothing was run", endpointOf(c), conformPreflightTimeout)
	default:
		return fmt.Errorf("conform: %s does not answer as SQS (ListQueues: %w): nothing was run", endpointOf(c), err)
	}
}

// knownGaps are the backends whose known failures --known-gaps names.
var knownGaps = map[string]func() sqstest.Harness{
	"fauxqs": func() sqstest.Harness {
		return sqstest.Harness{Skip: emulator.Skips(), PrefixedErrorCodes: true}
	},
}

func newConformCmd(a *app) *cobra.Command {
	var gaps, prefix string
	cmd := &cobra.Command{
		Use:   "conform",
		Short: "Run sqstest's conformance cases against an SQS endpoint: passed, skipped (with reason), failed",
		Long: `conform runs every case of sqstest, sqskit's conformance suite, against the
endpoint (--endpoint-url, or real SQS from the AWS environment) and prints
each case's verdict: passed, skipped with the reason, or failed with what
went wrong. Cases that need a clock the suite can move (hours of queue time)
skip with that reason. It runs sqstest.Check, the suite's runner without go
test, 8 cases at a time, each on queues of its own named with --prefix that
it deletes when it ends.

--known-gaps fauxqs skips the cases the fauxqs emulator is known to fail,
with what it does instead, and accepts its AWS.SimpleQueueService.-prefixed
error codes: the same verdicts as sqskit's own CI run on fauxqs.

Exit 4 when any case failed; exit 1, before any case runs, when the endpoint
does not answer ListQueues as SQS within 10 s (down, not SQS, or hanging).
-o json gives every result, for scripts.
Against real SQS it creates and deletes queues, and a deleted queue's name
cannot be reused for 60 s: give each run its own --prefix.`,
		Example: `  sqskit conform --endpoint-url http://127.0.0.1:9324
  sqskit conform --endpoint-url http://127.0.0.1:4566 --known-gaps fauxqs -o json > verdicts.json
  sqskit conform --region eu-west-1 --prefix conform-$(date +%s)-   # real SQS`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			h := sqstest.Harness{}
			if gaps != "" {
				known, ok := knownGaps[gaps]
				if !ok {
					return usageError("--known-gaps %q: want fauxqs", gaps)
				}
				h = known()
			}
			if prefix == "" {
				return usageError("--prefix: must not be empty (the suite names its queues with it)")
			}
			c, err := a.sqs(ctx)
			if err != nil {
				return err
			}
			if err := conformPreflight(ctx, c, prefix); err != nil {
				return err
			}
			h.Client, h.Prefix = c, prefix
			bar := a.progress("conform", len(sqstest.Names()))
			results, err := sqstest.Check(ctx, h, func(sqstest.Result) { bar.add(1) })
			bar.finish()
			if err != nil && results == nil {
				return fmt.Errorf("conform: %w", err)
			}
			rep := conformReport{Endpoint: endpointOf(c), KnownGaps: gaps, Results: results, Incomplete: err != nil}
			for _, r := range results {
				switch r.Verdict {
				case sqstest.Passed:
					rep.Passed++
				case sqstest.Skipped:
					rep.Skipped++
				case sqstest.Failed:
					rep.Failed++
				}
			}
			if err := a.emit(rep, rep.table); err != nil {
				return err
			}
			switch {
			case rep.Failed > 0:
				return &exitError{code: exitNonConformant, err: fmt.Errorf("%d of %d cases failed against %s", rep.Failed, len(results), rep.Endpoint)}
			case err != nil:
				return fmt.Errorf("conform interrupted after %d cases: %w", len(results), err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&gaps, "known-gaps", "", "skip a backend's known failures, with reasons: fauxqs")
	cmd.Flags().StringVar(&prefix, "prefix", "sqskit-conform-", "start of the name of every queue the suite creates")
	return cmd
}

func (r conformReport) table(w io.Writer) {
	row(w, "CASE", "VERDICT", "REASON")
	for _, res := range r.Results {
		reason := strings.TrimPrefix(res.Reason, "SKIP "+res.Case+": ") // as go test prints it; the row names the case
		if i := strings.IndexByte(reason, '\n'); i >= 0 {
			reason = reason[:i] + " …"
		}
		row(w, res.Case, res.Verdict, reason)
	}
	row(w)
	row(w, fmt.Sprintf("%d passed, %d skipped, %d failed against %s", r.Passed, r.Skipped, r.Failed, r.Endpoint))
}

// endpointOf names the endpoint a client calls: --endpoint-url or
// AWS_ENDPOINT_URL_SQS, else AWS's in the client's region.
func endpointOf(c *sqs.Client) string {
	o := c.Options()
	if e := aws.ToString(o.BaseEndpoint); e != "" {
		return e
	}
	return "AWS " + o.Region
}
