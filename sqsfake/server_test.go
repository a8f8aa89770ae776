package sqsfake_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/sqskit/sqskit/sqsfake"
)

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type fixture struct {
	srv    *sqsfake.Server
	clock  *sqsfake.ManualClock
	client *sqs.Client
}

func newFixture(fns ...func(*sqsfake.Options)) *fixture {
	clock := sqsfake.NewManualClock(start)
	srv := sqsfake.New(append([]func(*sqsfake.Options){func(o *sqsfake.Options) { o.Clock = clock }}, fns...)...)
	return &fixture{srv: srv, clock: clock, client: srv.Client()}
}

func (f *fixture) queue(t *testing.T, name string, attrs map[string]string) string {
	t.Helper()
	out, err := f.client.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		t.Fatalf("create queue: %v", err)
	}
	return *out.QueueUrl
}

func (f *fixture) send(url, body string) error {
	_, err := f.client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)})
	return err
}

func (f *fixture) visible(t *testing.T, url string) string {
	t.Helper()
	out, err := f.client.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{"All"}})
	if err != nil {
		t.Fatalf("attributes: %v", err)
	}
	return out.Attributes["ApproximateNumberOfMessages"]
}

func TestFaultBeforeApplyChangesNothing(t *testing.T) {
	f := newFixture()
	url := f.queue(t, "q", nil)
	boom := errors.New("boom")
	h := f.srv.Inject(sqsfake.Fault{Op: "SendMessage", Times: 2, Err: boom})
	for i := range 2 {
		err := f.send(url, "x")
		var opErr *smithy.OperationError
		if !errors.Is(err, boom) || !errors.As(err, &opErr) || opErr.OperationName != "SendMessage" {
			t.Fatalf("call %d: expect boom wrapped in an OperationError, got %v", i, err)
		}
	}
	if err := f.send(url, "x"); err != nil {
		t.Fatalf("expect the fault to be spent after 2 calls, got %v", err)
	}
	if got := f.visible(t, url); got != "1" {
		t.Errorf("expect 1 message, got %s", got)
	}
	if h.Fired() != 2 {
		t.Errorf("expect 2 firings, got %d", h.Fired())
	}
}

func TestFaultDefaultErrorIsRetryableServerFault(t *testing.T) {
	f := newFixture()
	url := f.queue(t, "q", nil)
	f.srv.Inject(sqsfake.Fault{Times: 1})
	var apiErr smithy.APIError
	if err := f.send(url, "x"); !errors.As(err, &apiErr) || apiErr.ErrorFault() != smithy.FaultServer {
		t.Fatalf("expect a server fault, got %v", err)
	}
}

func TestFaultAfterApplyTakesEffect(t *testing.T) {
	f := newFixture()
	url := f.queue(t, "q", nil)
	f.srv.Inject(sqsfake.Fault{Op: "SendMessage", Times: 1, AfterApply: true})
	if err := f.send(url, "x"); err == nil {
		t.Fatal("expect an error")
	}
	if got := f.visible(t, url); got != "1" {
		t.Errorf("expect the message stored despite the error, got %s", got)
	}
}

func TestFaultFiltersByQueue(t *testing.T) {
	f := newFixture()
	a, b := f.queue(t, "a", nil), f.queue(t, "b", nil)
	f.srv.Inject(sqsfake.Fault{Queue: "b"})
	if err := f.send(a, "x"); err != nil {
		t.Fatalf("expect queue a unaffected, got %v", err)
	}
	if err := f.send(b, "x"); err == nil {
		t.Fatal("expect queue b to fail")
	}
}

func TestFaultRemove(t *testing.T) {
	f := newFixture()
	url := f.queue(t, "q", nil)
	h := f.srv.Inject(sqsfake.Fault{Op: "SendMessage"})
	if err := f.send(url, "x"); err == nil {
		t.Fatal("expect an error while the fault is active")
	}
	h.Remove()
	if err := f.send(url, "x"); err != nil {
		t.Fatalf("expect success after Remove, got %v", err)
	}
	f.srv.Inject(sqsfake.Fault{})
	f.srv.ClearFaults()
	if err := f.send(url, "x"); err != nil {
		t.Fatalf("expect success after ClearFaults, got %v", err)
	}
}

func TestFaultLatencyWaitsOnTheClock(t *testing.T) {
	f := newFixture()
	url := f.queue(t, "q", nil)
	f.srv.Inject(sqsfake.Fault{Op: "SendMessage", Times: 1, Latency: 2 * time.Second})
	done := make(chan error, 1)
	go func() { done <- f.send(url, "x") }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := f.clock.WaitForTimers(ctx, 1); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Fatalf("expect the call to wait for the clock, returned %v", err)
	default:
	}
	f.clock.Advance(2 * time.Second)
	if err := <-done; err != nil {
		t.Fatalf("expect a delayed success, got %v", err)
	}
}

// A long poll that a send wakes stops counting as parked before the send
// returns, not when its goroutine next runs: a test that advances the clock
// once every poll is parked (ManualClock.Timers) would otherwise advance it
// past the work the send started (the dlq-replay example told a replay ten
// simulated seconds late, 1 run in 40).
func TestWokenLongPollsAreNoLongerParkedWhenTheSendReturns(t *testing.T) {
	const polls = 4
	f := newFixture()
	url := f.queue(t, "q", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for round := range 20 {
		got := make(chan int, polls)
		for range polls {
			go func() {
				out, err := f.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 20})
				if err != nil {
					t.Error(err)
					got <- 0
					return
				}
				got <- len(out.Messages)
			}()
		}
		if err := f.clock.WaitForTimers(ctx, polls); err != nil {
			t.Fatal(err)
		}
		entries := make([]types.SendMessageBatchRequestEntry, polls)
		for i := range entries {
			entries[i] = types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), MessageBody: aws.String("m")}
		}
		if _, err := f.client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries}); err != nil {
			t.Fatal(err)
		}
		if n := f.clock.Timers(); n != 0 {
			t.Fatalf("round %d: expect no poll parked once the send returned, got %d", round, n)
		}
		n := 0
		for range polls {
			n += <-got
		}
		if n != polls {
			t.Fatalf("round %d: expect the %d messages received, got %d", round, polls, n)
		}
	}
}

func TestFaultEntries(t *testing.T) {
	f := newFixture()
	url := f.queue(t, "q", nil)
	f.srv.Inject(sqsfake.Fault{Op: "SendMessageBatch", Times: 1, Entries: &sqsfake.EntryFault{
		Code: "ServiceUnavailable", Match: func(i int, _ string) bool { return i == 1 },
	}})
	out, err := f.client.SendMessageBatch(context.Background(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: []types.SendMessageBatchRequestEntry{
		{Id: aws.String("a"), MessageBody: aws.String("a")}, {Id: aws.String("b"), MessageBody: aws.String("b")}, {Id: aws.String("c"), MessageBody: aws.String("c")},
	}})
	if err != nil {
		t.Fatalf("send batch: %v", err)
	}
	if len(out.Successful) != 2 || len(out.Failed) != 1 {
		t.Fatalf("expect 2 ok and 1 failed, got %d and %d", len(out.Successful), len(out.Failed))
	}
	fail := out.Failed[0]
	if aws.ToString(fail.Id) != "b" || aws.ToString(fail.Code) != "ServiceUnavailable" || fail.SenderFault {
		t.Errorf("expect b failed with ServiceUnavailable and no sender fault, got %+v", fail)
	}
	if got := f.visible(t, url); got != "2" {
		t.Errorf("expect 2 messages stored, got %s", got)
	}
}

func TestCalls(t *testing.T) {
	f := newFixture()
	a, b := f.queue(t, "a", nil), f.queue(t, "b", nil)
	for range 3 {
		_ = f.send(a, "x")
	}
	_ = f.send(b, "x")
	c := f.srv.Calls()
	if c.Op["SendMessage"] != 4 || c.Queue["a"]["SendMessage"] != 3 || c.Queue["b"]["SendMessage"] != 1 || c.Op["CreateQueue"] != 2 {
		t.Fatalf("unexpected counts %+v", c)
	}
	if c.Total() != 6 {
		t.Errorf("expect 6 calls, got %d", c.Total())
	}
	f.srv.ResetCalls()
	if f.srv.Calls().Total() != 0 {
		t.Error("expect no calls after ResetCalls")
	}
}

func TestCancelledContextMakesNoCall(t *testing.T) {
	f := newFixture()
	url := f.queue(t, "q", nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := f.client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("x")})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("expect context.Canceled, got %v", err)
	}
	if got := f.visible(t, url); got != "0" {
		t.Errorf("expect nothing sent, got %s", got)
	}
}

func TestInFlightLimit(t *testing.T) {
	f := newFixture(func(o *sqsfake.Options) { o.InFlightLimit = 2 })
	std := f.queue(t, "std", nil)
	fifo := f.queue(t, "q.fifo", map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"})
	ctx := context.Background()
	for i := range 3 {
		_ = f.send(std, fmt.Sprint(i))
		_, _ = f.client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(fifo), MessageBody: aws.String(fmt.Sprint(i)), MessageGroupId: aws.String(fmt.Sprint(i))})
	}
	for _, url := range []string{std, fifo} {
		if out, err := f.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 2}); err != nil || len(out.Messages) != 2 {
			t.Fatalf("expect 2 messages from %s, got %v", url, err)
		}
	}
	_, err := f.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(std)})
	var over *types.OverLimit
	if !errors.As(err, &over) {
		t.Errorf("standard: expect OverLimit, got %v", err)
	}
	out, err := f.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(fifo)})
	if err != nil || len(out.Messages) != 0 {
		t.Errorf("FIFO: expect an empty receive, got %v, %d messages", err, len(out.Messages))
	}
}

func TestQueueNameCooldownAfterDelete(t *testing.T) {
	f := newFixture()
	url := f.queue(t, "q", nil)
	ctx := context.Background()
	if _, err := f.client.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}); err != nil {
		t.Fatal(err)
	}
	_, err := f.client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("q")})
	var recent *types.QueueDeletedRecently
	if !errors.As(err, &recent) {
		t.Fatalf("expect QueueDeletedRecently, got %v", err)
	}
	f.clock.Advance(61 * time.Second)
	f.queue(t, "q", nil)
}

func TestDeleteQueueEndsLongPoll(t *testing.T) {
	f := newFixture()
	url := f.queue(t, "q", nil)
	done := make(chan error, 1)
	go func() {
		_, err := f.client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 20})
		done <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := f.clock.WaitForTimers(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := f.client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}); err != nil {
		t.Fatal(err)
	}
	var gone *types.QueueDoesNotExist
	if err := <-done; !errors.As(err, &gone) {
		t.Fatalf("expect QueueDoesNotExist, got %v", err)
	}
}

func TestFIFODeleteWakesLongPollOnGroup(t *testing.T) {
	f := newFixture()
	url := f.queue(t, "q.fifo", map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"})
	ctx := context.Background()
	for _, b := range []string{"1", "2"} {
		if _, err := f.client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(b), MessageGroupId: aws.String("g")}); err != nil {
			t.Fatal(err)
		}
	}
	first, _ := f.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url)})
	done := make(chan []types.Message, 1)
	go func() {
		out, _ := f.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 20})
		done <- out.Messages
	}()
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := f.clock.WaitForTimers(wctx, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := f.client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: first.Messages[0].ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	if got := <-done; len(got) != 1 || *got[0].Body != "2" {
		t.Fatalf("expect message 2 once the group unlocks, got %v", got)
	}
}

func TestRedriveKeepsReceiveCount(t *testing.T) {
	f := newFixture()
	dlq := f.queue(t, "dlq", nil)
	src := f.queue(t, "src", map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:123456789012:dlq","maxReceiveCount":"3"}`})
	_ = f.send(src, "poison")
	ctx := context.Background()
	for range 3 {
		out, _ := f.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(src)})
		if len(out.Messages) != 1 {
			t.Fatal("expect the message before maxReceiveCount")
		}
		f.clock.Advance(31 * time.Second)
	}
	// The move happens on the next receive attempt on the source.
	if out, _ := f.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(src)}); len(out.Messages) != 0 {
		t.Fatal("expect no delivery past maxReceiveCount")
	}
	out, _ := f.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(dlq), MessageSystemAttributeNames: []types.MessageSystemAttributeName{"All"}})
	if len(out.Messages) != 1 {
		t.Fatal("expect the message in the DLQ")
	}
	if got := out.Messages[0].Attributes["ApproximateReceiveCount"]; got != "4" {
		t.Errorf("expect the receive count to carry on (4), got %s", got)
	}
}

func TestAttemptIDRetryResetsVisibility(t *testing.T) {
	f := newFixture()
	url := f.queue(t, "q.fifo", map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"})
	ctx := context.Background()
	_, _ = f.client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("m"), MessageGroupId: aws.String("g")})
	in := &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), ReceiveRequestAttemptId: aws.String("a1"), VisibilityTimeout: 10}
	if out, _ := f.client.ReceiveMessage(ctx, in); len(out.Messages) != 1 {
		t.Fatal("expect the message")
	}
	f.clock.Advance(8 * time.Second)
	if out, _ := f.client.ReceiveMessage(ctx, in); len(out.Messages) != 1 {
		t.Fatal("expect the retry to return the message")
	}
	f.clock.Advance(8 * time.Second) // 16 s after the first receive, 8 s after the retry
	if out, _ := f.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url)}); len(out.Messages) != 0 {
		t.Fatal("expect the retry to have reset the visibility timeout")
	}
}

func TestListQueuesPagination(t *testing.T) {
	f := newFixture()
	for i := range 5 {
		f.queue(t, fmt.Sprintf("q%d", i), nil)
	}
	var all []string
	var token *string
	for {
		out, err := f.client.ListQueues(context.Background(), &sqs.ListQueuesInput{MaxResults: aws.Int32(2), NextToken: token})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, out.QueueUrls...)
		if token = out.NextToken; token == nil {
			break
		}
	}
	if len(all) != 5 {
		t.Fatalf("expect 5 queues over the pages, got %v", all)
	}
}

func TestGetQueueUrlOtherAccount(t *testing.T) {
	f := newFixture()
	f.queue(t, "q", nil)
	_, err := f.client.GetQueueUrl(context.Background(), &sqs.GetQueueUrlInput{QueueName: aws.String("q"), QueueOwnerAWSAccountId: aws.String("999999999999")})
	var gone *types.QueueDoesNotExist
	if !errors.As(err, &gone) {
		t.Fatalf("expect QueueDoesNotExist, got %v", err)
	}
}

func TestURLsOfAnyEndpointResolve(t *testing.T) {
	f := newFixture()
	f.queue(t, "q", nil)
	if err := f.send("http://localhost:4566/123456789012/q", "x"); err != nil {
		t.Fatalf("expect any host to reach the queue, got %v", err)
	}
	var gone *types.QueueDoesNotExist
	if err := f.send("https://sqs.us-east-1.amazonaws.com/000000000000/q", "x"); !errors.As(err, &gone) {
		t.Fatalf("expect another account's URL to miss, got %v", err)
	}
}

// Many goroutines send, receive and delete at once: every message is
// delivered once while visibility holds, and the race detector stays quiet.
func TestConcurrentUse(t *testing.T) {
	f := newFixture()
	url := f.queue(t, "q", map[string]string{"VisibilityTimeout": "3600"})
	ctx := context.Background()
	const senders, perSender = 4, 250
	var wg sync.WaitGroup
	for s := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perSender {
				if err := f.send(url, fmt.Sprintf("%d-%d", s, i)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	var mu sync.Mutex
	seen := map[string]int{}
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for empty := 0; empty < 50; {
				out, err := f.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10})
				if err != nil {
					t.Error(err)
					return
				}
				if len(out.Messages) == 0 {
					empty++
					time.Sleep(time.Millisecond)
					continue
				}
				entries := make([]types.DeleteMessageBatchRequestEntry, len(out.Messages))
				mu.Lock()
				for i, m := range out.Messages {
					seen[*m.Body]++
					entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: m.ReceiptHandle}
				}
				mu.Unlock()
				if _, err := f.client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: entries}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if len(seen) != senders*perSender {
		t.Fatalf("expect %d distinct messages, got %d", senders*perSender, len(seen))
	}
	for body, n := range seen {
		if n != 1 {
			t.Fatalf("expect %s once, got %d", body, n)
		}
	}
}

func newTextLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
}

// A nil option function is skipped, as in every sqskit constructor.
func TestNewSkipsNilOptionFunc(t *testing.T) {
	srv := sqsfake.New(nil, func(o *sqsfake.Options) { o.Region = "eu-west-1" }, nil)
	out, err := srv.Client().CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String("q")})
	if err != nil || !strings.Contains(aws.ToString(out.QueueUrl), "eu-west-1") {
		t.Fatalf("expect a working server with the option applied, got %v, %v", out, err)
	}
}
