package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"go.uber.org/goleak"
)

// TestMain runs main when the test binary is started as the emulator by
// TestSubprocess; otherwise it runs the tests.
func TestMain(m *testing.M) {
	if os.Getenv("SQSFAKE_RUN_MAIN") == "1" {
		main()
		return
	}
	goleak.VerifyTestMain(m)
}

// syncBuffer is a bytes.Buffer safe for the logger and the test at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func sdkClient(url string) *sqs.Client {
	return sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(url), Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
}

// The emulator creates the queues its flags name, with redrive, serves the
// SDK over HTTP, logs each request without bodies, and stops cleanly.
func TestRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var log syncBuffer
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0",
			"-queue", "orders,dlq=orders-dlq,maxReceiveCount=2,VisibilityTimeout=1",
			"-queue", "orders-dlq",
			"-queue", "events.fifo,ContentBasedDeduplication=true",
		}, &log, ready)
	}()
	var url string
	select {
	case url = <-ready:
	case err := <-done:
		t.Fatalf("run ended before listening: %v", err)
	}
	client := sdkClient(url)
	list, err := client.ListQueues(ctx, &sqs.ListQueuesInput{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{url + "/123456789012/events.fifo", url + "/123456789012/orders", url + "/123456789012/orders-dlq"}
	if strings.Join(list.QueueUrls, " ") != strings.Join(want, " ") {
		t.Fatalf("expect queues %v, got %v", want, list.QueueUrls)
	}
	attrs, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(want[1]), AttributeNames: []types.QueueAttributeName{"All"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := attrs.Attributes["RedrivePolicy"]; got != `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:123456789012:orders-dlq","maxReceiveCount":2}` {
		t.Fatalf("unexpected redrive policy %s", got)
	}
	if attrs.Attributes["VisibilityTimeout"] != "1" {
		t.Fatalf("expect VisibilityTimeout 1, got %s", attrs.Attributes["VisibilityTimeout"])
	}
	fifo, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(want[0]), AttributeNames: []types.QueueAttributeName{"All"}})
	if err != nil || fifo.Attributes["FifoQueue"] != "true" || fifo.Attributes["ContentBasedDeduplication"] != "true" {
		t.Fatalf("expect a FIFO queue with content deduplication, got %v, %v", fifo, err)
	}
	if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(want[1]), MessageBody: aws.String("secret-body")}); err != nil {
		t.Fatal(err)
	}
	got, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(want[1])})
	if err != nil || len(got.Messages) != 1 || aws.ToString(got.Messages[0].Body) != "secret-body" {
		t.Fatalf("expect the message back, got %v, %v", got, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("expect a clean stop, got %v", err)
	}
	out := log.String()
	for _, want := range []string{"op=SendMessage queue=orders status=200", "op=ReceiveMessage queue=orders status=200", "sqsfake shutting down"} {
		if !strings.Contains(out, want) {
			t.Errorf("expect %q in the log:\n%s", want, out)
		}
	}
	if strings.Contains(out, "secret-body") {
		t.Errorf("expect no message bodies in the log:\n%s", out)
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-queue", ",VisibilityTimeout=1"},
		{"-queue", "orders,VisibilityTimeout"},
		{"-queue", "orders,NoSuchAttribute=1"},
		{"-queue", "orders,dlq=missing"},
		{"-addr", "not an address"},
		{"-max-requests", "0"},
		{"stray"},
	} {
		var log syncBuffer
		if err := run(context.Background(), args, &log, nil); err == nil {
			t.Errorf("%v: expect an error", args)
		}
	}
}

// As a process, the emulator serves requests and shuts down cleanly on
// SIGTERM, exiting 0. (That long polls are answered at shutdown is tested in
// package sqsfake, where the test can see the poll parked.)
func TestSubprocess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	cmd := exec.Command(os.Args[0], "-addr", "127.0.0.1:0", "-queue", "jobs")
	cmd.Env = append(os.Environ(), "SQSFAKE_RUN_MAIN=1")
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
	if url == "" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatal("the emulator did not report its URL")
	}
	rest := make(chan string, 1)
	go func() {
		var b strings.Builder
		for lines.Scan() {
			b.WriteString(lines.Text() + "\n")
		}
		rest <- b.String()
	}()
	if _, err := sdkClient(url).SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url + "/123456789012/jobs"), MessageBody: aws.String("x")}); err != nil {
		t.Fatalf("send to the process: %v", err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	out := <-rest // read to the end before Wait closes the pipe
	if err := cmd.Wait(); err != nil {
		t.Fatalf("expect exit status 0 after SIGTERM, got %v", err)
	}
	if !strings.Contains(out, "op=SendMessage queue=jobs status=200") || !strings.Contains(out, "sqsfake shutting down") {
		t.Fatalf("expect the request and a shutdown line in the log, got:\n%s", out)
	}
}
