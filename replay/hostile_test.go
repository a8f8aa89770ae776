package replay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/replay"
	"github.com/sqskit/sqskit/sqsfake"
)

// The replayer against hostile input and failing networks: a message's
// attributes are input from anyone who can send to the queue, and a network
// fails in every way. Each test holds one guarantee against one of them.

func metadataAttr(t *testing.T, md map[string]any) types.MessageAttributeValue {
	t.Helper()
	b, err := json.Marshal(md)
	if err != nil {
		t.Fatal(err)
	}
	return types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(string(b))}
}

// takeAll receives and deletes everything visible on url, in the order the
// queue gives it, and returns the bodies.
func (w *world) takeAll(t *testing.T, url string) []string {
	t.Helper()
	var bodies []string
	for {
		msgs := w.receiveAll(t, url)
		if len(msgs) == 0 {
			return bodies
		}
		for _, m := range msgs {
			bodies = append(bodies, aws.ToString(m.Body))
			if _, err := w.api.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// Two DLQ messages whose metadata claims the same original id are two
// messages, and both reach the target: the metadata is anyone's to write, so
// a forged id must not make one message pass for a copy of another.
func TestForgedOriginalIDDoesNotDeduplicate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, true)
		w.seedDLQ(t, "A", "g", nil)
		time.Sleep(time.Second)
		a := w.receiveAll(t, w.dlq)
		if len(a) != 1 {
			t.Fatalf("expect A in the DLQ, got %d", len(a))
		}
		if _, err := w.api.ChangeMessageVisibility(context.Background(), &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(w.dlq), ReceiptHandle: a[0].ReceiptHandle}); err != nil {
			t.Fatal(err)
		}
		forged := metadataAttr(t, map[string]any{"id": *a[0].MessageId, "first": "2026-01-01T00:00:00Z"})
		w.seedDLQ(t, "B", "g", map[string]types.MessageAttributeValue{replay.MetadataAttribute: forged})
		rep := w.drain(t, w.replayer(t))
		if rep.Replayed != 2 {
			t.Fatalf("expect 2 replayed, got %+v", rep)
		}
		if got := w.takeAll(t, w.main); fmt.Sprint(got) != "[A B]" {
			t.Fatalf("expect A and B on the target, got %v", got)
		}
	})
}

// A due time in the metadata beyond any the policy gives is not obeyed: the
// message is not held; it is escalated with the reason. Obeyed, a forged due
// time would keep the message in the DLQ until its retention dropped it.
func TestForgedSentDelayIsNotHeld(t *testing.T) {
	for _, fifo := range []bool{false, true} {
		t.Run(map[bool]string{true: "fifo", false: "standard"}[fifo], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newWorld(t, fifo)
				forged := metadataAttr(t, map[string]any{"id": "x", "first": "2026-01-01T00:00:00Z", "sd": 8e18})
				w.seedDLQ(t, "far future", map[bool]string{true: "g"}[fifo], map[string]types.MessageAttributeValue{replay.MetadataAttribute: forged})
				time.Sleep(time.Second)
				rep := w.drain(t, w.replayer(t))
				if rep.Held != 0 || rep.Replayed+rep.Escalated != 1 {
					t.Fatalf("expect the message moved, not held, got %+v", rep)
				}
			})
		})
	}
}

// Ten messages of 200 KiB do not fit one SendMessageBatch (1 MiB): they are
// split into batches under 1 MiB, and all ten are replayed, none failed for
// the size of the batch it was put in.
func TestLargeMessagesSplitIntoBatchesUnderOneMiB(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, false)
		for i := range 10 {
			w.seedDLQ(t, fmt.Sprintf("%d%s", i, strings.Repeat("x", 200<<10)), "", nil)
		}
		rep := w.drain(t, w.replayer(t))
		if rep.Replayed != 10 || rep.Failed != 0 {
			t.Fatalf("expect 10 replayed, got %+v", rep)
		}
		if got := len(w.takeAll(t, w.main)); got != 10 {
			t.Fatalf("expect 10 on the target, got %d", got)
		}
	})
}

func lambdaEvent(msgs []types.Message) events.SQSEvent {
	var event events.SQSEvent
	for _, m := range msgs {
		rec := events.SQSMessage{MessageId: *m.MessageId, ReceiptHandle: *m.ReceiptHandle, Body: *m.Body, Attributes: m.Attributes,
			EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:dlq", MessageAttributes: map[string]events.SQSMessageAttribute{}}
		for n, v := range m.MessageAttributes {
			rec.MessageAttributes[n] = events.SQSMessageAttribute{DataType: *v.DataType, StringValue: v.StringValue, BinaryValue: v.BinaryValue}
		}
		event.Records = append(event.Records, rec)
	}
	return event
}

// A Lambda event of 25 records is sent in batches of ten, SendMessageBatch's
// limit, and all 25 reach the target: an event source mapping may deliver
// more records than one batch call takes.
func TestLambdaEventOfTwentyFiveRecords(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, false)
		for i := range 25 {
			w.seedDLQ(t, fmt.Sprintf("m%02d", i), "", nil)
		}
		var msgs []types.Message
		for len(msgs) < 25 {
			got := w.receiveAll(t, w.dlq)
			if len(got) == 0 {
				t.Fatalf("expect 25 in the DLQ, got %d", len(msgs))
			}
			msgs = append(msgs, got...)
		}
		resp, err := w.replayer(t).HandleLambda(context.Background(), handler.Event(lambdaEvent(msgs)))
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("expect all 25 moved, got %d failures, %v", len(resp.BatchItemFailures), err)
		}
		if got := len(w.takeAll(t, w.main)); got != 25 {
			t.Fatalf("expect 25 on the target, got %d", got)
		}
	})
}

// A message too large for the replay metadata is escalated, and
// the escalation, which cannot carry everything either, still reaches the
// operator queue with the body intact.
func TestTooLargeEscalationReachesTheOperator(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, false)
		body := strings.Repeat("y", 1<<20-64)
		w.seedDLQ(t, body, "", map[string]types.MessageAttributeValue{"k": {DataType: aws.String("String"), StringValue: aws.String("v")}})
		rep := w.drain(t, w.replayer(t))
		if rep.Escalated != 1 {
			t.Fatalf("expect the message escalated, got %+v", rep)
		}
		got := w.receiveAll(t, w.operator)
		if len(got) != 1 || aws.ToString(got[0].Body) != body {
			t.Fatalf("expect the body intact on the operator queue, got %d messages", len(got))
		}
		time.Sleep(31 * time.Second)
		if left := w.receiveAll(t, w.dlq); len(left) != 0 {
			t.Fatalf("expect the DLQ empty, got %d", len(left))
		}
	})
}

// A Lambda record whose attributes SQS refuses (a String without a value)
// is not retried forever: it reaches the operator queue in a form SQS
// accepts, with the reason.
func TestUnsendableAttributesReachTheOperator(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, false)
		w.seedDLQ(t, "bad attribute", "", nil)
		msgs := w.receiveAll(t, w.dlq)
		event := lambdaEvent(msgs)
		event.Records[0].MessageAttributes["empty"] = events.SQSMessageAttribute{DataType: "String"}
		resp, err := w.replayer(t).HandleLambda(context.Background(), handler.Event(event))
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("expect the record moved, got %v, %v", resp.BatchItemFailures, err)
		}
		got := w.receiveAll(t, w.operator)
		if len(got) != 1 || aws.ToString(got[0].Body) != "bad attribute" || metadataOf(t, got[0]).Reason == "" {
			t.Fatalf("expect it escalated with a reason, got %v", got)
		}
	})
}

func seedGroup(t *testing.T, w *world, group string, n int) {
	for i := range n {
		w.seedDLQ(t, fmt.Sprintf("%s:%d", group, i), group, nil)
	}
}

// On FIFO, a send entry that fails keeps the later messages of its group
// behind it, so the group reaches the target in order.
func TestFIFOEntryFailureKeepsGroupOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, true)
		seedGroup(t, w, "g", 3)
		w.srv.Inject(sqsfake.Fault{Op: "SendMessageBatch", Queue: "main.fifo", Times: 5, Entries: &sqsfake.EntryFault{Match: func(i int, _ string) bool { return i == 0 }}})
		r := w.replayer(t)
		w.drain(t, r)
		time.Sleep(31 * time.Second)
		w.drain(t, r)
		time.Sleep(31 * time.Second)
		w.drain(t, r)
		if got := w.takeAll(t, w.main); fmt.Sprint(got) != "[g:0 g:1 g:2]" {
			t.Fatalf("expect [g:0 g:1 g:2] on the target, got %v", got)
		}
	})
}

// On FIFO, a Filter that skips a group's head keeps the rest of the group
// behind it: the group moves only after its head, in order.
func TestFIFOFilterSkippingTheHeadKeepsGroupOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, true)
		seedGroup(t, w, "g", 3)
		rep := w.drain(t, w.replayer(t, func(o *replay.Options) {
			o.Filter = func(m *types.Message) bool { return *m.Body != "g:0" }
		}))
		if rep.Replayed != 0 {
			t.Fatalf("expect nothing of g replayed while g:0 stays, got %+v", rep)
		}
		time.Sleep(31 * time.Second)
		w.drain(t, w.replayer(t))
		if got := w.takeAll(t, w.main); fmt.Sprint(got) != "[g:0 g:1 g:2]" {
			t.Fatalf("expect [g:0 g:1 g:2] on the target, got %v", got)
		}
	})
}

// On FIFO, in one Drain, a held head may come back from its hold with later
// messages of its group that this Drain has not seen: they stay behind it,
// so the group reaches the target in order.
func TestFIFODrainKeepsLaterMessagesBehindAHeldHead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, true)
		for i := range 9 {
			w.seedDLQ(t, fmt.Sprintf("f%d", i), fmt.Sprintf("f%d", i), nil)
		}
		w.seedDLQ(t, "g:0", "g", counterAttrs("5"))
		w.seedDLQ(t, "g:1", "g", nil)
		for i := range 200 {
			w.seedDLQ(t, fmt.Sprintf("late%03d", i), fmt.Sprintf("late%03d", i), nil)
		}
		time.Sleep(10 * time.Second) // every message but g:0 is due
		w.srv.Inject(sqsfake.Fault{Latency: time.Second})
		r := w.replayer(t, sequential(), func(o *replay.Options) {
			o.Policy = replay.Policy{MaxAttempts: 10, Backoff: backoff.Exponential{Base: time.Second}}
		})
		w.drain(t, r)
		w.srv.ClearFaults()
		for range 3 {
			time.Sleep(time.Minute)
			w.drain(t, r)
		}
		var order []string
		for _, b := range w.takeAll(t, w.main) {
			if strings.HasPrefix(b, "g:") {
				order = append(order, b)
			}
		}
		if fmt.Sprint(order) != "[g:0 g:1]" {
			t.Fatalf("expect [g:0 g:1] on the target, got %v", order)
		}
	})
}

// Decorators around the strategy (Capped, MaxAttempts) keep a message's
// delay reproducible, so every decision for one message gives the same due
// time; and backoff.MaxAttempts{N: 3} inside a policy of three replays
// allows three.
func TestDelaysReproducibleUnderDecorators(t *testing.T) {
	jitter := backoff.FullJitter{Base: time.Second, Cap: time.Hour}
	for name, s := range map[string]backoff.Strategy{
		"Capped":      backoff.Capped{S: jitter, Cap: 10 * time.Minute},
		"MaxAttempts": backoff.MaxAttempts{S: jitter, N: 10},
	} {
		p := replay.Policy{MaxAttempts: 10, Backoff: s}
		m := &types.Message{MessageId: aws.String("m-1"), Body: aws.String("x"), MessageAttributes: counterAttrs("4"),
			Attributes: map[string]string{"SentTimestamp": "1772366400000"}}
		first := p.Decide(m, time.Now()).Delay
		for range 4 {
			if d := p.Decide(m, time.Now()).Delay; d != first {
				t.Fatalf("%s: expect the same delay on every decision, got %v and %v", name, first, d)
			}
		}
	}
	p := replay.Policy{MaxAttempts: 3, Backoff: backoff.MaxAttempts{S: backoff.Constant{D: time.Second}, N: 3}}
	for n, want := range []replay.Action{replay.Replay, replay.Replay, replay.Replay, replay.Escalate} {
		m := &types.Message{MessageId: aws.String("m-1"), Body: aws.String("x"), MessageAttributes: counterAttrs(fmt.Sprint(n))}
		if d := p.Decide(m, time.Now()); d.Action != want {
			t.Errorf("counter %d: expect %v, got %v (%s)", n, want, d.Action, d.Detail)
		}
	}
}

// throttled answers every receive with throttling and cancels after limit
// receives, so a loop that never waits still ends.
type throttled struct {
	replay.API
	n      atomic.Int64
	limit  int64
	cancel context.CancelFunc
}

func (a *throttled) ReceiveMessage(context.Context, *sqs.ReceiveMessageInput, ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	if a.n.Add(1) >= a.limit {
		a.cancel()
	}
	return nil, &types.RequestThrottled{Message: aws.String("slow down")}
}

// A receive backoff that gives 0 or Stop (a drained Budget) does not make
// Run spin: it is refused up front, or throttled receives stay spaced out
// instead of hammering SQS in a tight loop.
func TestRunDoesNotSpinOnAZeroOrStoppedBackoff(t *testing.T) {
	drained, err := backoff.NewBudget(1, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	drained.TryRetry()
	for name, s := range map[string]backoff.Strategy{
		"zero":    backoff.Constant{},
		"drained": backoff.Budgeted{S: backoff.Constant{D: time.Second}, B: drained},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				api := &throttled{API: sqsfake.New().Client(), limit: 1000, cancel: cancel}
				r, err := newReplayer(api, "https://sqs.us-east-1.amazonaws.com/1/dlq", "https://sqs.us-east-1.amazonaws.com/1/ops",
					func(o *replay.Options) { o.Target = "https://sqs.us-east-1.amazonaws.com/1/main" }, receiveBackoff(s))
				if errors.Is(err, replay.ErrConfig) {
					return // refused up front: as good
				}
				if err != nil {
					t.Fatal(err)
				}
				began := time.Now()
				runCtx, stop := context.WithTimeout(ctx, time.Minute)
				defer stop()
				if err := r.Run(runCtx); err != nil {
					t.Fatal(err)
				}
				if n := api.n.Load(); n > 1000 || (n >= 100 && time.Since(began) < time.Duration(n)*50*time.Millisecond) {
					t.Fatalf("expect receives spaced out, got %d in %v", n, time.Since(began))
				}
			})
		})
	}
}

// Drain gives up after five receives in a row that failed in a retryable
// way, and returns the error with what it did so far.
func TestDrainGivesUpAfterFiveFailedReceives(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, false)
		w.seedDLQ(t, "m", "", nil)
		w.srv.Inject(sqsfake.Fault{Op: "ReceiveMessage"}) // InternalFailure, every time
		w.srv.ResetCalls()
		rep, err := w.replayer(t, sequential()).Drain(context.Background())
		if err == nil || rep.Replayed != 0 {
			t.Fatalf("expect Drain to end with the receive's error, got %+v, %v", rep, err)
		}
		if n := w.srv.Calls().Op["ReceiveMessage"]; n != 5 {
			t.Fatalf("expect five receives before Drain gives up, got %d", n)
		}
	})
}

// Configurations that would make the replayer loop, or that it cannot pace,
// are refused with ErrConfig: the DLQ as a destination (target, operator
// queue or a source's route) or the operator queue as the target, however
// the URLs are spelled, since messages would go round for ever; a counter
// kept in the metadata attribute; a rate limit or receive backoff that
// cannot space receives; a counter name SQS reserves.
func TestLoopingConfigurationsRefused(t *testing.T) {
	api := sqsfake.New().Client()
	const dlq, main, ops = "https://sqs.eu-west-1.amazonaws.com/1/dlq", "https://sqs.eu-west-1.amazonaws.com/1/main", "https://sqs.eu-west-1.amazonaws.com/1/ops"
	// The same queues spelled another way: legacy host, trailing slash.
	const dlqAgain, opsAgain = "https://eu-west-1.queue.amazonaws.com/1/dlq", "https://sqs.eu-west-1.amazonaws.com/1/ops/"
	for name, c := range map[string]struct {
		dlq, ops string
		fn       func(*replay.Options)
	}{
		"operator is the DLQ":                        {dlq, dlq, func(o *replay.Options) { o.Target = main }},
		"operator is the target":                     {dlq, ops, func(o *replay.Options) { o.Target = ops }},
		"target is the DLQ":                          {dlq, ops, func(o *replay.Options) { o.Target = dlq }},
		"operator is the DLQ spelled another way":    {dlq, dlqAgain, func(o *replay.Options) { o.Target = main }},
		"target is the operator spelled another way": {dlq, ops, func(o *replay.Options) { o.Target = opsAgain }},
		"target is the DLQ spelled another way":      {dlq, ops, func(o *replay.Options) { o.Target = dlqAgain }},
		"a source routes to the DLQ":                 {dlq, ops, func(o *replay.Options) { o.Sources = map[string]string{"arn:aws:sqs:us-east-1:1:main": dlq} }},
		"counter is the metadata":                    {dlq, ops, func(o *replay.Options) { o.Target, o.Policy.CounterAttribute = main, replay.MetadataAttribute }},
		"rate limit NaN":                             {dlq, ops, func(o *replay.Options) { o.Target, o.RateLimit = main, math.NaN() }},
		"rate limit +Inf":                            {dlq, ops, func(o *replay.Options) { o.Target, o.RateLimit = main, math.Inf(1) }},
		"receive backoff invalid":                    {dlq, ops, func(o *replay.Options) { o.Target = main; receiveBackoff(backoff.Constant{D: -1})(o) }},
		"counter attribute reserved name":            {dlq, ops, func(o *replay.Options) { o.Target, o.Policy.CounterAttribute = main, "AWS.counter" }},
	} {
		if _, err := newReplayer(api, c.dlq, c.ops, c.fn); !errors.Is(err, replay.ErrConfig) {
			t.Errorf("%s: expect ErrConfig, got %v", name, err)
		}
	}
}

// A malformed counter inside the metadata escalates as InvalidCounter
// instead of restarting the count, which would give a poison message a
// fresh set of replays.
func TestMalformedCounterInMetadataEscalates(t *testing.T) {
	for _, n := range []any{"abc", 1.5, -1, 1e12} {
		attrs := map[string]types.MessageAttributeValue{replay.MetadataAttribute: metadataAttr(t, map[string]any{"id": "x", "first": "2026-01-01T00:00:00Z", "n": n})}
		m := &types.Message{MessageId: aws.String("m-1"), Body: aws.String("x"), MessageAttributes: attrs}
		if d := (replay.Policy{}).Decide(m, time.Now()); d.Action != replay.Escalate || d.Reason != replay.InvalidCounter {
			t.Errorf("n=%v: expect InvalidCounter, got %v %q (%s)", n, d.Action, d.Reason, d.Detail)
		}
	}
}

// A Decision's Detail, the escalation's metadata and the log never quote
// text a sender chose: only what SQS set, and attribute names that are
// names. A forged sqskit-replay "src" was kept when SQS set no
// DeadLetterQueueSourceArn (a message sent straight to the DLQ) and quoted
// by the NotRoutable detail, the escalated metadata and the Warn log line;
// a forged moved-attribute name and a counter's data type were quoted too.
func TestDetailNeverQuotesForgedText(t *testing.T) {
	const forged = "attacker-text\nlevel=ERROR msg=\"forged log line\""
	t.Run("source", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			w := newWorld(t, false)
			w.seedDLQ(t, "x", "", map[string]types.MessageAttributeValue{
				replay.MetadataAttribute: metadataAttr(t, map[string]any{"id": "x", "src": forged}),
			})
			var logs bytes.Buffer
			var details []string
			r, err := replay.New(w.api, w.dlq, w.operator, func(o *replay.Options) {
				o.Sources = map[string]string{"arn:aws:sqs:us-east-1:123456789012:main": w.main}
				o.Policy = replay.Policy{Backoff: backoff.Constant{}}
				o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
				o.Hooks.Escalated = func(_ context.Context, _ *types.Message, d replay.Decision) { details = append(details, d.Detail) }
			})
			if err != nil {
				t.Fatal(err)
			}
			w.drain(t, r)
			got := w.receiveAll(t, w.operator)
			if len(details) != 1 || len(got) != 1 {
				t.Fatalf("expect one escalation, got %v", details)
			}
			if md := metadataOf(t, got[0]); md.SourceArn != "" || strings.Contains(details[0], "attacker") || strings.Contains(logs.String(), "attacker") {
				t.Fatalf("a forged source is quoted:\n detail: %s\n metadata src: %q\n log: %s", details[0], md.SourceArn, logs.String())
			}
		})
	})
	for name, attrs := range map[string]map[string]types.MessageAttributeValue{
		"moved name": {replay.MetadataAttribute: metadataAttr(t, map[string]any{"id": "x", "moved": map[string]any{forged: map[string]any{"t": "String", "s": "v"}}})},
		"counter type": {replay.DefaultCounterAttribute: {DataType: aws.String("Binary." + forged), BinaryValue: []byte("1")},
			"other": {DataType: aws.String("String"), StringValue: aws.String("v")}},
	} {
		t.Run(name, func(t *testing.T) {
			m := &types.Message{MessageId: aws.String("m-1"), Body: aws.String("x"), MessageAttributes: attrs}
			if d := (replay.Policy{}).Decide(m, time.Now()); d.Action != replay.Escalate || strings.Contains(d.Detail, "attacker") {
				t.Fatalf("expect an escalation whose detail quotes no forged text, got %v %q", d.Action, d.Detail)
			}
		})
	}
}

// A delete that fails in a retryable way is retried, so the message is not
// sent twice.
func TestFailedDeleteIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, false)
		w.seedDLQ(t, "once", "", nil)
		w.srv.Inject(sqsfake.Fault{Op: "DeleteMessageBatch", Times: 1})
		r := w.replayer(t)
		w.drain(t, r)
		time.Sleep(31 * time.Second)
		w.drain(t, r)
		if got := w.takeAll(t, w.main); len(got) != 1 {
			t.Fatalf("expect one copy on the target, got %d", len(got))
		}
	})
}

// Report.Replayed and Escalated count messages that left the DLQ, and
// Hooks.Replayed fires for them only: a message sent to its target whose
// delete from the DLQ failed for good is still in the DLQ, and will be sent
// again, so it counts as failed (Hooks.Failed says why). It was counted
// replayed, so a CLI said "replayed 1" while the message was still there.
func TestReportCountsOnlyWhatLeftTheDLQ(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, false)
		w.seedDLQ(t, "once", "", nil)
		w.seedDLQ(t, "gone", "", nil)
		w.srv.Inject(sqsfake.Fault{Op: "DeleteMessageBatch", Entries: &sqsfake.EntryFault{Code: "ReceiptHandleIsInvalid", SenderFault: true,
			Match: func(index int, _ string) bool { return index == 0 }}})
		var replayed, failures []string
		r := w.replayer(t, sequential(), func(o *replay.Options) {
			o.Hooks.Replayed = func(_ context.Context, m *types.Message, _ replay.Decision, _ string) {
				replayed = append(replayed, aws.ToString(m.Body))
			}
			o.Hooks.Failed = func(_ context.Context, m *types.Message, err error) {
				failures = append(failures, aws.ToString(m.Body)+": "+err.Error())
			}
		})
		rep := w.drain(t, r)
		w.srv.ClearFaults()
		time.Sleep(31 * time.Second)
		left := w.receiveAll(t, w.dlq)
		if rep.Replayed != 1 || rep.Failed != 1 || len(left) != 1 || len(replayed) != 1 || len(failures) != 1 || !strings.Contains(failures[0], "delete") {
			t.Fatalf("expect one replayed and one failed (sent, not deleted, %d left in the DLQ), got %+v, hooks %v, %v", len(left), rep, replayed, failures)
		}
	})
}

// A call that fails for good — the DLQ gone, access denied to a receive, a
// send or a delete — ends Run and Drain with its error, once the batches
// under way are done. Only a receive's did: a replayer denied
// sqs:DeleteMessage on the DLQ sent every message again at each visibility
// timeout, a duplicate on the target each time, forever; one denied the
// target left messages failing in the DLQ until its retention dropped them.
func TestRunEndsOnAFinalError(t *testing.T) {
	denied := &smithy.GenericAPIError{Code: "AccessDenied", Message: "not authorized", Fault: smithy.FaultClient}
	for _, c := range []struct{ name, op string }{
		{"missing DLQ", ""}, {"send denied", "SendMessageBatch"}, {"delete denied", "DeleteMessageBatch"},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newWorld(t, false)
				w.seedDLQ(t, "m", "", nil)
				dlq := w.dlq
				if c.op == "" {
					dlq += "-gone"
				} else {
					w.srv.Inject(sqsfake.Fault{Op: c.op, Err: denied})
				}
				r, err := replay.New(w.api, dlq, w.operator, func(o *replay.Options) {
					o.Target = w.main
					o.Policy = replay.Policy{Backoff: backoff.Constant{}}
				})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
				defer cancel()
				err = r.Run(ctx)
				var missing *types.QueueDoesNotExist
				var apiErr smithy.APIError
				if ctx.Err() != nil || !(errors.As(err, &missing) || errors.As(err, &apiErr) && apiErr.ErrorCode() == "AccessDenied") {
					t.Fatalf("expect Run to end with the final error, got %v (ctx %v)", err, ctx.Err())
				}
				time.Sleep(time.Minute) // the message's visibility timeout
				if _, err := r.Drain(context.Background()); err == nil {
					t.Fatal("expect Drain to end with the final error too")
				}
			})
		})
	}
}

// AWSTraceHeader survives replay and escalation, so a replayed or escalated
// message stays in the trace it was sent in.
func TestTraceHeaderSurvives(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, false)
		const trace = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
		for _, c := range []string{"0", "9"} {
			if _, err := w.api.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(w.dlq), MessageBody: aws.String("traced " + c),
				MessageAttributes:       counterAttrs(c),
				MessageSystemAttributes: map[string]types.MessageSystemAttributeValue{"AWSTraceHeader": {DataType: aws.String("String"), StringValue: aws.String(trace)}},
			}); err != nil {
				t.Fatal(err)
			}
		}
		rep := w.drain(t, w.replayer(t))
		if rep.Replayed != 1 || rep.Escalated != 1 {
			t.Fatalf("expect one replay and one escalation, got %+v", rep)
		}
		for _, q := range []string{w.main, w.operator} {
			got := w.receiveAll(t, q)
			if len(got) != 1 || got[0].Attributes["AWSTraceHeader"] != trace {
				t.Errorf("%s: expect the trace header kept, got %v", q, got)
			}
		}
	})
}

func counterAttrs(v string) map[string]types.MessageAttributeValue {
	return map[string]types.MessageAttributeValue{replay.DefaultCounterAttribute: {DataType: aws.String("Number"), StringValue: aws.String(v)}}
}

// A message SQS accepts in no form (a body with a character SQS refuses,
// which only a hand-made event can carry) is rejected loudly: the hook, the
// Report, a failure for Lambda, and a long hold in the DLQ instead of a loop.
func TestRejectedMessageIsReportedAndHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, false)
		w.seedDLQ(t, "fine", "", nil)
		event := lambdaEvent(w.receiveAll(t, w.dlq))
		event.Records[0].Body = "bad\x00body"
		var rejected []error
		r := w.replayer(t, func(o *replay.Options) {
			o.Hooks.Rejected = func(_ context.Context, _ *types.Message, _ replay.Decision, err error) {
				rejected = append(rejected, err)
			}
		})
		resp, err := r.HandleLambda(context.Background(), handler.Event(event))
		if err != nil || len(resp.BatchItemFailures) != 1 {
			t.Fatalf("expect the record reported failed, got %v, %v", resp, err)
		}
		if len(rejected) != 1 || !errors.Is(rejected[0], replay.ErrRejected) {
			t.Fatalf("expect one rejection matching ErrRejected, got %v", rejected)
		}
		if got := w.receiveAll(t, w.operator); len(got) != 0 {
			t.Fatalf("expect nothing sent, got %d", len(got))
		}
		time.Sleep(time.Hour)
		if got := w.receiveAll(t, w.dlq); len(got) != 0 {
			t.Fatal("expect the message held in the DLQ, not back after its visibility timeout")
		}
	})
}

// A hold asks SQS for at most 12 h from the message's receive, the most SQS
// accepts. In Lambda the event source mapping received the batch before
// the invocation (a batching window of up to 5 min): the hold of a
// rejected message assumed a receive within the last minute, SQS refused
// it, the failure was ignored, and the message came back after the
// mapping's visibility timeout to be rejected again, over and over, while
// the Report said held. In Run and Drain a pass that took minutes (slow
// sends) had its holds refused the same way.
func TestHoldWithinTwelveHoursOfTheReceive(t *testing.T) {
	t.Run("lambda batching window", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			w := newWorld(t, false)
			w.seedDLQ(t, "fine", "", nil)
			out, err := w.api.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(w.dlq), MaxNumberOfMessages: 10,
				VisibilityTimeout: 900, MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []types.MessageSystemAttributeName{"All"}})
			if err != nil || len(out.Messages) != 1 {
				t.Fatal(out, err)
			}
			event := lambdaEvent(out.Messages)
			event.Records[0].Body = "bad\x00body" // SQS takes it in no form
			time.Sleep(2 * time.Minute)           // the mapping's batching window
			var rejected []error
			r := w.replayer(t, func(o *replay.Options) {
				o.Hooks.Rejected = func(_ context.Context, _ *types.Message, _ replay.Decision, err error) {
					rejected = append(rejected, err)
				}
			})
			if _, err := r.HandleLambda(context.Background(), handler.Event(event)); err != nil {
				t.Fatal(err)
			}
			if len(rejected) != 1 || strings.Contains(rejected[0].Error(), "hold") {
				t.Fatalf("expect one rejection, held, got %v", rejected)
			}
			time.Sleep(time.Hour)
			if got := w.receiveAll(t, w.dlq); len(got) != 0 {
				t.Fatal("expect the rejected message held in the DLQ, not back an hour later")
			}
		})
	})
	t.Run("rejected, hold refused", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			w := newWorld(t, false)
			w.seedDLQ(t, "fine", "", nil)
			event := lambdaEvent(w.receiveAll(t, w.dlq))
			event.Records[0].Body = "bad\x00body"
			w.srv.Inject(sqsfake.Fault{Op: "ChangeMessageVisibilityBatch", Entries: &sqsfake.EntryFault{Code: "InvalidParameterValue", SenderFault: true}})
			var rejected []error
			r := w.replayer(t, func(o *replay.Options) {
				o.Hooks.Rejected = func(_ context.Context, _ *types.Message, _ replay.Decision, err error) {
					rejected = append(rejected, err)
				}
			})
			if _, err := r.HandleLambda(context.Background(), handler.Event(event)); err != nil {
				t.Fatal(err)
			}
			if len(rejected) != 1 || !errors.Is(rejected[0], replay.ErrRejected) || !strings.Contains(rejected[0].Error(), "hold in the DLQ failed") {
				t.Fatalf("expect the rejection to say its hold failed, got %v", rejected)
			}
		})
	})
	t.Run("slow pass", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			w := newWorld(t, false)
			w.seedDLQ(t, "due", "", nil)
			time.Sleep(12 * time.Hour)
			w.seedDLQ(t, "waits", "", nil) // due in 12 h: held
			w.srv.Inject(sqsfake.Fault{Op: "SendMessageBatch", Latency: 2 * time.Minute})
			var until time.Time
			r := w.replayer(t, func(o *replay.Options) {
				o.Policy = replay.Policy{Backoff: backoff.Constant{D: 12 * time.Hour}}
				o.VisibilityTimeout = 10 * time.Minute
				o.Hooks.Held = func(_ context.Context, _ *types.Message, _ replay.Decision, u time.Time) { until = u }
			})
			began := time.Now()
			if rep := w.drain(t, r); rep.Replayed != 1 || rep.Held != 1 {
				t.Fatalf("expect one replayed and one held, got %+v", rep)
			}
			if until.After(began.Add(12*time.Hour)) || until.Before(began.Add(11*time.Hour)) {
				t.Fatalf("expect the hold to end within 12 h of the receive, got %v after", until.Sub(began))
			}
			time.Sleep(11 * time.Hour)
			if got := w.receiveAll(t, w.dlq); len(got) != 0 {
				t.Fatal("expect the held message still held 11 h later")
			}
		})
	})
}

// A Filter that panics picks nothing; the pass goes on.
func TestPanickingFilterPicksNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, false)
		w.seedDLQ(t, "boom", "", nil)
		w.seedDLQ(t, "fine", "", nil)
		rep := w.drain(t, w.replayer(t, func(o *replay.Options) {
			o.Filter = func(m *types.Message) bool {
				if *m.Body == "boom" {
					panic("filter bug")
				}
				return true
			}
		}))
		if rep.Skipped != 1 || rep.Replayed != 1 {
			t.Fatalf("expect one skipped and one replayed, got %+v", rep)
		}
	})
}

// blankAnswers answers the batch calls named in ops with 200 and an empty
// body, as a proxy or gateway that swallows the call might (the SDK decodes
// it as no entry in Successful and none in Failed): nothing reaches SQS.
type blankAnswers struct {
	replay.API
	ops   map[string]bool
	calls atomic.Int32
}

func (b *blankAnswers) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, fns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	if b.ops["SendMessageBatch"] {
		b.calls.Add(1)
		return &sqs.SendMessageBatchOutput{}, nil
	}
	return b.API.SendMessageBatch(ctx, in, fns...)
}

func (b *blankAnswers) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, fns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	if b.ops["DeleteMessageBatch"] {
		b.calls.Add(1)
		return &sqs.DeleteMessageBatchOutput{}, nil
	}
	return b.API.DeleteMessageBatch(ctx, in, fns...)
}

func (b *blankAnswers) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, fns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	if b.ops["ChangeMessageVisibilityBatch"] {
		b.calls.Add(1)
		return &sqs.ChangeMessageVisibilityBatchOutput{}, nil
	}
	return b.API.ChangeMessageVisibilityBatch(ctx, in, fns...)
}

// An entry of a batch answer in neither Successful nor Failed is
// unconfirmed, as if lost in transit (package fifo's rule): a send is not
// taken as sent, so nothing is deleted from the DLQ; a delete and a hold
// are tried again, and not taken as done. A send answer that listed
// nothing made the replayer delete the whole batch from the DLQ, sent
// nowhere.
func TestBatchAnswerWithoutTheEntryIsUnconfirmed(t *testing.T) {
	for _, c := range []struct {
		op    string
		delay time.Duration // Policy's: over 15 min, the message is held
		calls int32
		check func(t *testing.T, w *world, rep replay.Report)
	}{
		{"SendMessageBatch", 0, 3, func(t *testing.T, w *world, rep replay.Report) {
			if rep.Replayed != 0 || rep.Failed != 1 || len(w.receiveAll(t, w.dlq)) != 1 || len(w.receiveAll(t, w.main)) != 0 {
				t.Fatalf("expect the message failed and still in the DLQ, got %+v", rep)
			}
		}},
		{"DeleteMessageBatch", 0, 5, func(t *testing.T, w *world, rep replay.Report) {
			if rep.Replayed != 0 || rep.Failed != 1 || len(w.receiveAll(t, w.main)) != 1 || len(w.receiveAll(t, w.dlq)) != 1 {
				t.Fatalf("expect the message sent and, its delete unconfirmed, still in the DLQ and counted failed, got %+v", rep)
			}
		}},
		{"ChangeMessageVisibilityBatch", time.Hour, 5, func(t *testing.T, w *world, rep replay.Report) {
			if rep.Held != 0 || rep.Failed != 1 {
				t.Fatalf("expect the unconfirmed hold counted failed, got %+v", rep)
			}
		}},
	} {
		t.Run(c.op, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newWorld(t, false)
				w.seedDLQ(t, "precious", "", nil)
				api := &blankAnswers{API: w.api, ops: map[string]bool{c.op: true}}
				r, err := replay.New(api, w.dlq, w.operator, func(o *replay.Options) {
					o.Target = w.main
					o.Policy = replay.Policy{Backoff: backoff.Constant{D: c.delay}}
					o.VisibilityTimeout = 30 * time.Second
				})
				if err != nil {
					t.Fatal(err)
				}
				rep := w.drain(t, r)
				if n := api.calls.Load(); n != c.calls {
					t.Errorf("expect %d tries of the unconfirmed entry, got %d", c.calls, n)
				}
				time.Sleep(31 * time.Second)
				c.check(t, w, rep)
			})
		})
	}
}
