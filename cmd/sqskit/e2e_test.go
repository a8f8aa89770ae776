package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/internal/fauxqs"
)

// runBinary runs the built sqskit binary against endpoint, as a script would:
// no terminal, the AWS environment of a test account.
func runBinary(t *testing.T, endpoint string, args ...string) invocation {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, append([]string{"--endpoint-url", endpoint}, args...)...)
	cmd.Env = testEnv()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("sqskit %q: %v", args, err)
	}
	return invocation{stdout: out.String(), stderr: errOut.String(), code: code}
}

// testEnv is the environment without the caller's AWS settings, with
// static test credentials and a region.
func testEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") {
			env = append(env, kv)
		}
	}
	return append(env, "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_REGION=us-east-1",
		"AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_EC2_METADATA_DISABLED=true")
}

// serve starts `sqskit serve` as a process and returns its URL; it is
// stopped with SIGTERM when the test ends, and must exit 0.
func serve(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = testEnv()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stderr)
	var url string
	for lines.Scan() {
		if _, after, ok := strings.Cut(lines.Text(), "url="); ok {
			url, _, _ = strings.Cut(after, " ")
			break
		}
	}
	rest := make(chan string, 1)
	go func() {
		var b strings.Builder
		for lines.Scan() {
			b.WriteString(lines.Text() + "\n")
		}
		rest <- b.String()
	}()
	stop := func() (string, error) {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		log := <-rest // read to the end before Wait closes the pipe
		return log, cmd.Wait()
	}
	if url == "" {
		log, err := stop()
		t.Fatalf("sqskit serve did not report its URL (%v):\n%s", err, log)
	}
	t.Cleanup(func() {
		if log, err := stop(); err != nil {
			t.Errorf("sqskit serve: expect exit 0 after SIGTERM, got %v:\n%s", err, log)
		}
	})
	return url
}

func sendN(t *testing.T, c *sqs.Client, url string, bodies ...string) {
	t.Helper()
	for _, b := range bodies {
		if _, err := c.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
	}
}

func counts(t *testing.T, c *sqs.Client, url string) (visible, inFlight string) {
	t.Helper()
	out, err := c.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{"All"}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Attributes["ApproximateNumberOfMessages"], out.Attributes["ApproximateNumberOfMessagesNotVisible"]
}

// The commands as processes against `sqskit serve` as a process, with
// faults injected by its flags: the SDK retries them and nothing is left
// in flight or half done.
func TestEndToEndServe(t *testing.T) {
	url := serve(t, "--quiet",
		"--queue", "orders,dlq=orders-dlq,maxReceiveCount=5", "--queue", "orders-dlq",
		"--fail", "ChangeMessageVisibilityBatch:1", "--fail", "PurgeQueue:1:throttled", "--fail", "ReceiveMessage:1")
	c := fauxqs.NewClient(url)
	dlq := url + "/123456789012/orders-dlq"
	sendN(t, c, dlq, "a", "b", "c")

	got := runBinary(t, url, "queues", "-o", "json")
	mustSucceed(t, got)
	var list queueList
	parseJSON(t, got.stdout, &list)
	if len(list.Queues) != 2 || list.Queues[1].Visible != 3 || list.Queues[1].Sources[0] != "orders" {
		t.Fatalf("expect orders and orders-dlq (3 messages, fed by orders), got %+v", list.Queues)
	}

	// The first receive and the first release fail (HTTP 500): the SDK
	// retries both, and every message comes back visible.
	got = runBinary(t, url, "peek", "orders-dlq", "-o", "json")
	mustSucceed(t, got)
	var res peekResult
	parseJSON(t, got.stdout, &res)
	if res.Received != 3 || res.Released != 3 {
		t.Errorf("expect 3 messages received and released, got %+v", res)
	}
	if visible, inFlight := counts(t, c, dlq); visible != "3" || inFlight != "0" {
		t.Errorf("expect all 3 visible after peek, got %s visible, %s in flight", visible, inFlight)
	}

	got = runBinary(t, url, "purge", "orders-dlq")
	if got.code != exitNotConfirmed {
		t.Fatalf("expect exit %d without a terminal or --yes, got %d: %s", exitNotConfirmed, got.code, got.stderr)
	}
	got = runBinary(t, url, "purge", "orders-dlq", "--yes", "-o", "json")
	mustSucceed(t, got)
	var purged purgeResult
	parseJSON(t, got.stdout, &purged)
	if visible, inFlight := counts(t, c, dlq); !purged.Purged || visible != "0" || inFlight != "0" {
		t.Errorf("expect orders-dlq empty after the purge (its throttle retried), got %s visible, %s in flight", visible, inFlight)
	}

	if got := runBinary(t, url, "peek", "orders-dlq", "-n", "0"); got.code != exitUsage {
		t.Errorf("expect exit %d for -n 0, got %d", exitUsage, got.code)
	}
	if got := runBinary(t, url, "serve", "--fail", "nonsense"); got.code != exitUsage {
		t.Errorf("expect exit %d for a bad --fail, got %d", exitUsage, got.code)
	}
}

// The commands against the fauxqs emulator as a process.
func TestEndToEndFauxqs(t *testing.T) {
	emu := startFauxqs(t)
	c := emu.Client()
	ctx := t.Context()
	dlqOut, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("cli-orders-dlq")})
	if err != nil {
		t.Fatal(err)
	}
	dlq := aws.ToString(dlqOut.QueueUrl)
	policy := `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:cli-orders-dlq","maxReceiveCount":"5"}`
	if _, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("cli-orders"), Attributes: map[string]string{"RedrivePolicy": policy}}); err != nil {
		t.Fatal(err)
	}
	sendN(t, c, dlq, "x", "y")

	got := runBinary(t, emu.Endpoint, "queues", "--prefix", "cli-", "-o", "json")
	mustSucceed(t, got)
	var list queueList
	parseJSON(t, got.stdout, &list)
	if len(list.Queues) != 2 || list.Queues[0].DLQ != "cli-orders-dlq" || list.Queues[1].Visible != 2 ||
		len(list.Queues[1].Sources) != 1 || list.Queues[1].SourcesFrom != "policies" {
		t.Fatalf("expect cli-orders → cli-orders-dlq (2 messages; sources from the policies, fauxqs lacks the API), got %+v", list.Queues)
	}

	got = runBinary(t, emu.Endpoint, "peek", "cli-orders-dlq", "-o", "json")
	mustSucceed(t, got)
	var res peekResult
	parseJSON(t, got.stdout, &res)
	if res.Received != 2 || res.Released != 2 {
		t.Fatalf("expect 2 peeked and released, got %+v", res)
	}
	if visible, _ := counts(t, c, dlq); visible != "2" {
		t.Errorf("expect both visible again after peek, got %s", visible)
	}
	got = runBinary(t, emu.Endpoint, "show", "cli-orders-dlq", res.Messages[1].ID, "-o", "json")
	mustSucceed(t, got)
	var m message
	parseJSON(t, got.stdout, &m)
	if m.ID != res.Messages[1].ID || m.ReceiveCount != 2 {
		t.Errorf("expect the second message on its second receive, got %+v", m)
	}
	if got := runBinary(t, emu.Endpoint, "peek", "cli-orders"); got.code != exitNotConfirmed {
		t.Errorf("expect peek to ask on a queue with a redrive policy (exit %d), got %d", exitNotConfirmed, got.code)
	}
	got = runBinary(t, emu.Endpoint, "--yes", "purge", "cli-orders-dlq")
	mustSucceed(t, got)
	if visible, inFlight := counts(t, c, dlq); visible != "0" || inFlight != "0" {
		t.Errorf("expect cli-orders-dlq empty after the purge, got %s visible, %s in flight", visible, inFlight)
	}
}
