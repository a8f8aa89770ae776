package main

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqskit/sqskit/internal/fauxqs"
)

// replay and redrive as processes against `sqskit serve` as a process,
// with failed and lost calls injected by its flags: nothing is lost or left
// in flight.
func TestReplayEndToEndServe(t *testing.T) {
	url := serve(t, "--quiet",
		"--queue", "orders,dlq=orders-dlq,maxReceiveCount=5", "--queue", "orders-dlq", "--queue", "spare",
		"--fail", "SendMessageBatch:1", "--fail", "DeleteMessageBatch:1:lost", "--fail", "ReceiveMessage:1")
	c := fauxqs.NewClient(url)
	dlq, orders := url+"/123456789012/orders-dlq", url+"/123456789012/orders"
	sendN(t, c, dlq, "a", "b", "c", "d")

	// Sent straight to the DLQ (no DeadLetterQueueSourceArn): they go to
	// its only source queue.
	got := runBinary(t, url, "replay", "orders-dlq", "--body-contains", "a")
	if got.code != exitNotConfirmed || !strings.Contains(got.stdout, "DRY RUN") {
		t.Fatalf("expect a dry run and exit %d without --yes, got %d: %s%s", exitNotConfirmed, got.code, got.stdout, got.stderr)
	}
	got = runBinary(t, url, "replay", "orders-dlq", "--all", "--max", "3", "--yes", "-o", "json")
	mustSucceed(t, got)
	var res replayResult
	parseJSON(t, got.stdout, &res)
	if res.Moved != 3 || res.Failed != 0 {
		t.Fatalf("expect 3 moved, got %+v", res)
	}
	if visible, inFlight := counts(t, c, orders); visible != "3" || inFlight != "0" {
		t.Errorf("expect 3 in orders, got %s visible, %s in flight", visible, inFlight)
	}
	if visible, inFlight := counts(t, c, dlq); visible != "1" || inFlight != "0" {
		t.Errorf("expect 1 left visible in the DLQ, got %s visible, %s in flight", visible, inFlight)
	}

	got = runBinary(t, url, "redrive", "start", "orders-dlq", "--to", "spare", "--wait", "--yes", "-o", "json")
	mustSucceed(t, got)
	var task moveTask
	parseJSON(t, got.stdout, &task)
	if task.Status != "COMPLETED" || task.Moved != 1 {
		t.Errorf("expect the last message moved by a move task, got %+v", task)
	}
	got = runBinary(t, url, "redrive", "list", "orders-dlq", "-o", "json")
	mustSucceed(t, got)
	var tasks []moveTask
	parseJSON(t, got.stdout, &tasks)
	if len(tasks) != 1 {
		t.Errorf("expect one task listed, got %+v", tasks)
	}
	if got := runBinary(t, url, "redrive", "start", "orders-dlq", "--rate", "501", "--yes"); got.code != exitUsage {
		t.Errorf("expect exit %d for --rate 501, got %d", exitUsage, got.code)
	}
}

// Against the fauxqs emulator as a process: replay works with --to (fauxqs
// sets no DeadLetterQueueSourceArn and has no ListDeadLetterSourceQueues),
// and redrive says plainly that it has no move tasks.
func TestReplayEndToEndFauxqs(t *testing.T) {
	emu := startFauxqs(t)
	c := emu.Client()
	var urls []string
	for _, name := range []string{"rp-orders-dlq", "rp-orders"} {
		out, err := c.CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: aws.String(name)})
		if err != nil {
			t.Fatal(err)
		}
		urls = append(urls, aws.ToString(out.QueueUrl))
	}
	sendN(t, c, urls[0], "x", "y")

	got := runBinary(t, emu.Endpoint, "replay", "rp-orders-dlq", "--all")
	if got.code != exitOK || !strings.Contains(got.stdout, "pass --to") {
		t.Errorf("expect both not replayable without --to (no source known), got %d: %s%s", got.code, got.stdout, got.stderr)
	}
	got = runBinary(t, emu.Endpoint, "replay", "rp-orders-dlq", "--all", "--to", "rp-orders", "--yes", "-o", "json")
	mustSucceed(t, got)
	var res replayResult
	parseJSON(t, got.stdout, &res)
	if res.Moved != 2 {
		t.Errorf("expect 2 moved, got %+v", res)
	}
	if visible, inFlight := counts(t, c, urls[1]); visible != "2" || inFlight != "0" {
		t.Errorf("expect 2 in rp-orders, got %s visible, %s in flight", visible, inFlight)
	}
	got = runBinary(t, emu.Endpoint, "redrive", "list", "rp-orders-dlq")
	if got.code != exitFailed || !strings.Contains(got.stderr, "no message move tasks") {
		t.Errorf("expect redrive to say fauxqs has no move tasks, got %d: %s", got.code, got.stderr)
	}
}
