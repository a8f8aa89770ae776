// Command sqs-dlq-replay is a Go drop-in replacement for the Lambda function
// of the AWS sample amazon-sqs-dlq-replay-backoff (the AWS Compute blog post
// "Using Amazon SQS dead-letter queues to replay messages"), built on
// package replay. It reads the sample's environment, keeps its counter
// attribute and its delay distribution, and fails a record it will not
// replay, as the sample does, so the same template and queues work
// unchanged. Build it for the provided.al2023 runtime:
//
//	GOOS=linux GOARCH=arm64 go build -tags lambda.norpc -o build/bootstrap ./cmd/sqs-dlq-replay
//
// and set the function's Runtime to provided.al2023, Handler to bootstrap,
// CodeUri to build/, Architectures to arm64 (or build with GOARCH=amd64 for
// x86_64).
//
// # Environment
//
//	SQS_MAIN_URL              the queue replays go to (required)
//	MAX_ATTEMPS               replays before a message is given up, 0 to
//	                          1,000,000 (the sample's spelling; MAX_ATTEMPTS
//	                          is read too; default 3)
//	BACKOFF_RATE              base of the delay, whole seconds (default 2)
//	MESSAGE_RETENTION_PERIOD  cap of the delay, seconds, 60 to 1,209,600
//	                          (default 345600); sqskit caps it at 12 h
//	LOG_LEVEL                 DEBUG, INFO, WARNING, ERROR or CRITICAL
//	                          (default INFO)
//	OPERATOR_QUEUE_URL        optional: escalate explicitly to this queue,
//	                          with the reason, instead of failing the record;
//	                          neither SQS_MAIN_URL nor the DLQ the function
//	                          reads
//	REPORT_BATCH_ITEM_FAILURES true when the event source mapping has
//	                          FunctionResponseTypes ReportBatchItemFailures
//	                          (default false, as in the sample's template)
//
// Replay n of a message waits a whole number of seconds drawn uniformly
// from 0 to min(MESSAGE_RETENTION_PERIOD, BACKOFF_RATE × 2^n), as the
// sample's full-jitter backoff does, and carries the counter
// sqs-dlq-replay-nb = n.
//
// The function refuses to start (exit 1, the variable named) on settings
// that would strand a message: a first delay, up to 2 × BACKOFF_RATE,
// longer than MESSAGE_RETENTION_PERIOD or than 12 h, or OPERATOR_QUEUE_URL
// naming SQS_MAIN_URL. The DLQ is known only from the event: an
// OPERATOR_QUEUE_URL naming it fails every record from it, with an error
// log that names the variable.
//
// # Giving up on a message
//
// Without OPERATOR_QUEUE_URL a message past MAX_ATTEMPS replays, or one that
// cannot be replayed (see below), fails its record, as the sample's raised
// exception does: the DLQ's own redrive policy then moves it to the
// operator queue after its maxReceiveCount. With OPERATOR_QUEUE_URL it is
// sent there at once, with the reason and its history in the sqskit-replay
// attribute (package replay's escalation); give the function
// sqs:SendMessage on that queue.
//
// A failed record fails the whole invocation, as in the sample, whose
// template has no ReportBatchItemFailures: the records of the batch that
// were replayed are deleted from the DLQ first, so they are not replayed
// twice. With REPORT_BATCH_ITEM_FAILURES=true the function reports the
// failed records instead, and Lambda deletes the others.
//
// # What it fixes
//
//   - Delays above 900 s: the sample passes them to SendMessage, which SQS
//     refuses, so the message fails again and again. Here the message waits
//     in the DLQ (its visibility extended, up to 12 h at a time) until due.
//     Each such wait is one more receive of the DLQ message: keep the DLQ's
//     maxReceiveCount at 3 or more.
//   - FIFO main queues: the sample drops a message without a MessageGroupId
//     (it sends nothing and succeeds, so Lambda deletes it) and sends the
//     others at once, whatever the delay. Here a message without a valid
//     group id is given up like one past its replays, and the others wait
//     in the DLQ for their delay.
//   - Logs: the sample logs every event, bodies included, at INFO. Here
//     logs carry message ids, decisions and reasons, never a body or an
//     attribute value.
//   - A counter that is not a whole number (the sample raises on it) or is
//     negative or absurd gives the message up at once, as forged.
//
// It also adds one attribute, sqskit-replay, with the message's history;
// with ten attributes already, the counter or an attribute moves inside it
// (replay.Restore gives it back).
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/internal/sqsrule"
	"github.com/sqskit/sqskit/replay"
)

func main() {
	if os.Getenv("AWS_LAMBDA_RUNTIME_API") == "" {
		fmt.Fprintln(os.Stderr, "sqs-dlq-replay runs as an AWS Lambda function (provided.al2023) on a dead-letter queue; see go doc github.com/sqskit/sqskit/cmd/sqs-dlq-replay")
		os.Exit(2)
	}
	cfg, err := loadConfig(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	logger := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: cfg.level}))
	awsCfg, err := awsconfig.LoadDefaultConfig(context.Background())
	if err != nil {
		logger.Error("load AWS config", "error", err)
		os.Exit(1)
	}
	h := newHandler(sqs.NewFromConfig(awsCfg), cfg, logger)
	lambda.Start(h.handle)
}

// errConfig matches every invalid setting of the environment.
var errConfig = errors.New("sqs-dlq-replay: invalid environment")

// config is the function's environment, read once at cold start.
type config struct {
	mainURL        string
	operatorURL    string // "": the sample's behaviour, fail the record
	maxAttempts    int
	backoffRate    time.Duration
	retention      time.Duration
	level          slog.Level
	reportFailures bool
}

// The sample template's defaults.
const (
	defaultMaxAttempts = 3
	defaultBackoffRate = 2
	defaultRetention   = 345600
	maxDelayCap        = 12 * time.Hour // the longest SQS keeps a message invisible
)

// loadConfig reads the sample's environment, and sqskit's two additions.
func loadConfig(getenv func(string) string) (config, error) {
	c := config{mainURL: strings.TrimSpace(getenv("SQS_MAIN_URL")), operatorURL: strings.TrimSpace(getenv("OPERATOR_QUEUE_URL"))}
	if c.mainURL == "" {
		return c, fmt.Errorf("%w: SQS_MAIN_URL is required", errConfig)
	}
	if c.operatorURL != "" && sqsrule.SameQueue(c.operatorURL, c.mainURL) {
		return c, fmt.Errorf("%w: OPERATOR_QUEUE_URL is SQS_MAIN_URL: escalations would be replayed", errConfig)
	}
	attempts, err := integer(getenv, "MAX_ATTEMPS", defaultMaxAttempts, 0, 1_000_000)
	if err != nil {
		return c, err
	}
	if v := getenv("MAX_ATTEMPTS"); v != "" {
		n, err := integer(getenv, "MAX_ATTEMPTS", defaultMaxAttempts, 0, 1_000_000)
		if err != nil {
			return c, err
		}
		if getenv("MAX_ATTEMPS") != "" && n != attempts {
			return c, fmt.Errorf("%w: MAX_ATTEMPS (%d) and MAX_ATTEMPTS (%d) disagree", errConfig, attempts, n)
		}
		attempts = n
	}
	c.maxAttempts = attempts
	rate, err := integer(getenv, "BACKOFF_RATE", defaultBackoffRate, 0, math.MaxInt32)
	if err != nil {
		return c, err
	}
	c.backoffRate = time.Duration(rate) * time.Second
	retention, err := integer(getenv, "MESSAGE_RETENTION_PERIOD", defaultRetention, 60, 1_209_600)
	if err != nil {
		return c, err
	}
	c.retention = time.Duration(retention) * time.Second
	// The first replay waits up to 2 × BACKOFF_RATE; a delay that cannot
	// fit would fail every record on every invocation until retention
	// deletes it, so such settings are refused here, at cold start.
	switch first := 2 * c.backoffRate; {
	case first > maxDelayCap:
		return c, fmt.Errorf("%w: BACKOFF_RATE %d: the first replay waits up to 2 × BACKOFF_RATE = %v, beyond the 12 h SQS can hold a message; use at most %d",
			errConfig, rate, first, int(maxDelayCap/time.Second)/2)
	case first > c.retention:
		return c, fmt.Errorf("%w: MESSAGE_RETENTION_PERIOD %d is shorter than the first replay's delay, up to 2 × BACKOFF_RATE = %d s: raise it, or use a BACKOFF_RATE of at most %d",
			errConfig, retention, 2*rate, retention/2)
	}
	c.level = logLevel(getenv("LOG_LEVEL"))
	switch v := strings.ToLower(strings.TrimSpace(getenv("REPORT_BATCH_ITEM_FAILURES"))); v {
	case "", "false", "0":
	case "true", "1":
		c.reportFailures = true
	default:
		return c, fmt.Errorf("%w: REPORT_BATCH_ITEM_FAILURES %q: want true or false", errConfig, v)
	}
	// Whatever else the replayer would refuse, refuse now, not at the
	// first record.
	if err := c.policy().Validate(); err != nil {
		return c, fmt.Errorf("%w: %w", errConfig, err)
	}
	return c, nil
}

// integer reads a whole number from lo to hi, or def when unset.
func integer(getenv func(string) string, name string, def, lo, hi int) (int, error) {
	v := strings.TrimSpace(getenv(name))
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%w: %s %q: want a whole number from %d to %d", errConfig, name, v, lo, hi)
	}
	return n, nil
}

// logLevel maps Python's logging level names, which the sample reads, to
// slog's; an unknown name is INFO, as in the sample.
func logLevel(name string) slog.Level {
	switch strings.ToUpper(strings.TrimSpace(name)) {
	case "DEBUG", "NOTSET":
		return slog.LevelDebug
	case "WARNING", "WARN":
		return slog.LevelWarn
	case "ERROR", "CRITICAL", "FATAL":
		return slog.LevelError
	}
	return slog.LevelInfo
}

// policy is the sample's: replay n waits floor(U(0, min(cap, rate·2^n)))
// seconds, with the cap MESSAGE_RETENTION_PERIOD (at most 12 h), and a
// message is given up after maxAttempts replays (0: never replayed).
func (c config) policy() replay.Policy {
	limit := min(c.retention, maxDelayCap)
	attempts := c.maxAttempts
	if attempts == 0 {
		attempts = replay.NoReplays
	}
	// Replay n waits Backoff.Delay(n-1): a base of 2·rate gives rate·2^n.
	return replay.Policy{MaxAttempts: attempts, Backoff: wholeSeconds{backoff.FullJitter{Base: 2 * c.backoffRate, Cap: limit}}, MaxBackoff: limit}
}

// wholeSeconds rounds a strategy's delays down to whole seconds, as the
// sample's int(delaySeconds) does. It passes replay's seeded random source
// through, so a delay is reproducible.
type wholeSeconds struct{ s backoff.Strategy }

func (w wholeSeconds) Delay(attempt int, prev time.Duration) time.Duration {
	d := w.s.Delay(attempt, prev)
	if d == backoff.Stop {
		return d
	}
	return d.Truncate(time.Second)
}

func (w wholeSeconds) WithRand(r backoff.Random) backoff.Strategy {
	return wholeSeconds{backoff.WithRand(w.s, r)}
}

func (w wholeSeconds) Validate() error { return backoff.Validate(w.s) }
