package replay_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/replay"
	"github.com/sqskit/sqskit/sqsfake"
)

// FIFO target: replays keep the group's order, with their backoff honoured
// by holding in the DLQ (FIFO queues take no per-message delay).
func TestFIFOReplaysInGroupOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, true)
		h := &handling{at: map[string][]time.Time{}, fail: func(_ string, n int) bool { return n <= 2 }}
		for _, b := range []string{"m1", "m2", "m3"} {
			w.send(t, b, "g", nil)
		}
		w.send(t, "other", "h", nil)
		var held atomic.Int64 // hooks run on the replayer's workers
		_, stop := w.run(t, h, func(o *replay.Options) {
			o.Policy = replay.Policy{Backoff: backoff.Constant{D: 2 * time.Minute}}
			o.Hooks.Held = func(context.Context, *types.Message, replay.Decision, time.Time) { held.Add(1) }
		})
		for len(h.times("m3")) < 3 {
			time.Sleep(time.Second)
		}
		stop()
		success := func(b string) time.Time { return h.times(b)[2] }
		if !(success("m1").Before(success("m2")) || success("m1").Equal(success("m2"))) || success("m3").Before(success("m2")) {
			t.Fatalf("expect m1, m2, m3 handled in order after replay: %v %v %v", success("m1"), success("m2"), success("m3"))
		}
		if gap := success("m1").Sub(h.times("m1")[0]); gap < 2*time.Minute {
			t.Fatalf("expect the 2 min backoff honoured on a FIFO target, replayed after %v", gap)
		}
		if held.Load() == 0 {
			t.Fatal("expect the replays held in the DLQ until due")
		}
	})
}

func (w *world) seedDLQ(t *testing.T, body, group string, attrs map[string]types.MessageAttributeValue) {
	t.Helper()
	in := &sqs.SendMessageInput{QueueUrl: aws.String(w.dlq), MessageBody: aws.String(body), MessageAttributes: attrs}
	if group != "" {
		in.MessageGroupId = aws.String(group)
	}
	if _, err := w.api.SendMessage(context.Background(), in); err != nil {
		t.Fatal(err)
	}
}

func (w *world) replayer(t *testing.T, fns ...func(*replay.Options)) *replay.Replayer {
	t.Helper()
	r, err := replay.New(w.api, w.dlq, w.operator, append([]func(*replay.Options){func(o *replay.Options) {
		o.Target = w.main
		o.Policy = replay.Policy{Backoff: backoff.Constant{}}
		o.VisibilityTimeout = 30 * time.Second
	}}, fns...)...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (w *world) drain(t *testing.T, r *replay.Replayer) replay.Report {
	t.Helper()
	rep, err := r.Drain(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// A crash between the send and the delete (the delete fails, or the send's
// response is lost after SQS stored it): the message stays in the DLQ and is
// sent again on the next pass. On a FIFO target the fixed deduplication id
// makes that a no-op: exactly one copy. On a standard target it is a
// duplicate, never a loss.
func TestCrashBetweenSendAndDelete(t *testing.T) {
	for _, fifo := range []bool{true, false} {
		for _, fault := range []sqsfake.Fault{
			{Op: "DeleteMessageBatch", Times: 1, Err: errors.New("crash before delete")},
			{Op: "SendMessageBatch", Times: 1, AfterApply: true},
		} {
			t.Run(fault.Op+map[bool]string{true: "/fifo", false: "/standard"}[fifo], func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					w := newWorld(t, fifo)
					w.seedDLQ(t, "order-1", map[bool]string{true: "g", false: ""}[fifo], nil)
					r := w.replayer(t)
					w.srv.Inject(fault)
					w.drain(t, r)
					time.Sleep(31 * time.Second) // the DLQ message's visibility lapses
					w.drain(t, r)
					got := w.receiveAll(t, w.main)
					if fifo && len(got) != 1 {
						t.Fatalf("expect exactly one copy on the FIFO target, got %d", len(got))
					}
					if len(got) < 1 {
						t.Fatal("expect the message on the target: nothing may be lost")
					}
					time.Sleep(31 * time.Second)
					if left := w.receiveAll(t, w.dlq); len(left) != 0 {
						t.Fatalf("expect the DLQ empty after the second pass, got %d", len(left))
					}
				})
			})
		}
	}
}

// Routing by the source queue goes only to allow-listed queues; a message
// from anywhere else goes to the operator queue.
func TestRoutingBySourceAllowList(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, false)
		w.send(t, "from-main", "", nil)
		for range 3 { // two failed receives, then the redrive
			w.receiveAll(t, w.main)
			time.Sleep(6 * time.Second)
		}
		w.seedDLQ(t, "from-nowhere", "", nil)
		var reasons []replay.Reason
		r, err := replay.New(w.api, w.dlq, w.operator, func(o *replay.Options) {
			o.Sources = map[string]string{"arn:aws:sqs:us-east-1:123456789012:main": w.main}
			o.Policy = replay.Policy{Backoff: backoff.Constant{}}
			o.Hooks.Escalated = func(_ context.Context, _ *types.Message, d replay.Decision) { reasons = append(reasons, d.Reason) }
		})
		if err != nil {
			t.Fatal(err)
		}
		rep := w.drain(t, r)
		if rep.Replayed != 1 || rep.Escalated != 1 || len(reasons) != 1 || reasons[0] != replay.NotRoutable {
			t.Fatalf("expect one replay and one NotRoutable escalation, got %+v %v", rep, reasons)
		}
		if got := w.receiveAll(t, w.main); len(got) != 1 || *got[0].Body != "from-main" {
			t.Fatalf("expect from-main back on main, got %v", got)
		}
	})
}

func TestForgedCountersAndFullAttributeSets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, false)
		// SQS refuses a Number that is not one, so a non-numeric counter
		// can only arrive typed as String.
		for v, dt := range map[string]string{"abc": "String", "-4": "Number", "2.5": "Number", "88888888888": "Number"} {
			w.seedDLQ(t, "forged "+v, "", map[string]types.MessageAttributeValue{replay.DefaultCounterAttribute: {DataType: aws.String(dt), StringValue: aws.String(v)}})
		}
		full := map[string]types.MessageAttributeValue{}
		for _, n := range strings.Split("a b c d e f g h i j", " ") {
			full[n] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("v-" + n)}
		}
		w.seedDLQ(t, "ten attributes", "", full)
		rep := w.drain(t, w.replayer(t))
		if rep.Escalated != 4 || rep.Replayed != 1 {
			t.Fatalf("expect 4 forged counters escalated and the full message replayed, got %+v", rep)
		}
		for _, m := range w.receiveAll(t, w.operator) {
			if md := metadataOf(t, m); md.Reason != replay.InvalidCounter {
				t.Errorf("%s: expect InvalidCounter, got %+v", *m.Body, md)
			}
		}
		got := w.receiveAll(t, w.main)
		if len(got) != 1 || len(got[0].MessageAttributes) != 10 {
			t.Fatalf("expect the replay within 10 attributes, got %v", got)
		}
		if back := replay.Restore(got[0].MessageAttributes, ""); len(back) != 10 || aws.ToString(back["j"].StringValue) != "v-j" {
			t.Fatalf("expect Restore to give all 10 attributes back, got %v", back)
		}
	})
}

func TestDryRunAndFilter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, false)
		for _, b := range []string{"keep-1", "move-1", "move-2"} {
			w.seedDLQ(t, b, "", nil)
		}
		dry := w.drain(t, w.replayer(t, func(o *replay.Options) { o.DryRun = true }))
		if dry.Replayed != 3 || len(dry.Decisions) != 3 || len(w.receiveAll(t, w.main)) != 0 {
			t.Fatalf("expect 3 replay decisions and nothing moved, got %+v", dry)
		}
		time.Sleep(31 * time.Second)
		rep := w.drain(t, w.replayer(t, func(o *replay.Options) {
			o.Filter = func(m *types.Message) bool { return strings.HasPrefix(*m.Body, "move") }
		}))
		if rep.Replayed != 2 || rep.Skipped != 1 {
			t.Fatalf("expect 2 replayed and 1 skipped, got %+v", rep)
		}
		time.Sleep(31 * time.Second)
		if left := w.receiveAll(t, w.dlq); len(left) != 1 || *left[0].Body != "keep-1" {
			t.Fatalf("expect keep-1 left in the DLQ, got %v", left)
		}
	})
}

// In Lambda, replayed and escalated messages are successes (Lambda deletes
// them); held ones are failures, so they stay in the DLQ, invisible until
// due.
func TestLambdaMode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, false)
		w.seedDLQ(t, "now", "", nil)
		w.seedDLQ(t, "exhausted", "", map[string]types.MessageAttributeValue{replay.DefaultCounterAttribute: {DataType: aws.String("Number"), StringValue: aws.String("9")}})
		msgs := w.receiveAll(t, w.dlq)
		event := events.SQSEvent{}
		for _, m := range msgs {
			rec := events.SQSMessage{MessageId: *m.MessageId, ReceiptHandle: *m.ReceiptHandle, Body: *m.Body, Attributes: m.Attributes,
				EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:dlq", MessageAttributes: map[string]events.SQSMessageAttribute{}}
			for n, v := range m.MessageAttributes {
				rec.MessageAttributes[n] = events.SQSMessageAttribute{DataType: *v.DataType, StringValue: v.StringValue, BinaryValue: v.BinaryValue}
			}
			event.Records = append(event.Records, rec)
		}
		r := w.replayer(t)
		resp, err := r.HandleLambda(context.Background(), handler.Event(event))
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("expect both moved, got %v, %v", resp, err)
		}
		if len(w.receiveAll(t, w.main)) != 1 || len(w.receiveAll(t, w.operator)) != 1 {
			t.Fatal("expect one replay and one escalation")
		}
		w.seedDLQ(t, "later", "", nil)
		msgs = w.receiveAll(t, w.dlq)
		later := events.SQSEvent{Records: []events.SQSMessage{{MessageId: *msgs[0].MessageId, ReceiptHandle: *msgs[0].ReceiptHandle, Body: *msgs[0].Body, Attributes: msgs[0].Attributes}}}
		slow := w.replayer(t, func(o *replay.Options) { o.Policy = replay.Policy{Backoff: backoff.Constant{D: time.Hour}} })
		resp, err = slow.HandleLambda(context.Background(), handler.Event(later))
		if err != nil || len(resp.BatchItemFailures) != 1 {
			t.Fatalf("expect the held message reported, got %v, %v", resp, err)
		}
	})
}

// RateLimit holds with many batches in flight: in no second do more than
// RateLimit messages leave the DLQ, and the pacing costs no more than it
// must.
func TestRateLimit(t *testing.T) {
	for _, c := range []struct {
		n    int
		rate float64
	}{{30, 10}, {200, 20}, {35, 5}} {
		t.Run(fmt.Sprintf("%d at %v per s", c.n, c.rate), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newWorld(t, false)
				for i := range c.n {
					w.seedDLQ(t, fmt.Sprintf("m%03d", i), "", nil)
				}
				var mu sync.Mutex
				var at []time.Time
				rep := w.drain(t, w.replayer(t, func(o *replay.Options) {
					o.RateLimit = c.rate
					o.Hooks.Replayed = func(context.Context, *types.Message, replay.Decision, string) {
						mu.Lock()
						at = append(at, time.Now())
						mu.Unlock()
					}
				}))
				if rep.Replayed != c.n {
					t.Fatalf("expect %d replayed, got %+v", c.n, rep)
				}
				slices.SortFunc(at, time.Time.Compare)
				// A token bucket of one receive: any run of replays fits the
				// rate over its span, plus one batch.
				batch := min(10, int(c.rate))
				for i := range at {
					for j := i; j < len(at); j++ {
						if allowed := c.rate*at[j].Sub(at[i]).Seconds() + float64(batch); float64(j-i+1) > allowed {
							t.Fatalf("expect at most %v replays from %v to %v, got %d", allowed, at[i].Sub(at[0]), at[j].Sub(at[0]), j-i+1)
						}
					}
				}
				want := time.Duration(float64((c.n-1)/batch*batch) / c.rate * float64(time.Second))
				if took := at[len(at)-1].Sub(at[0]); took < want || took > want+time.Second {
					t.Fatalf("expect the last replay %v after the first, got %v", want, took)
				}
			})
		})
	}
}

// receiveLog records when messages were taken from a queue.
type receiveLog struct {
	replay.API
	mu sync.Mutex
	at []time.Time
}

func (l *receiveLog) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, fns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	out, err := l.API.ReceiveMessage(ctx, in, fns...)
	if err == nil {
		l.mu.Lock()
		for range out.Messages {
			l.at = append(l.at, time.Now())
		}
		l.mu.Unlock()
	}
	return out, err
}

func (l *receiveLog) taken() []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.at)
}

// withinRate fails unless every run of receipts fits the rate over its
// span plus one burst.
func withinRate(t *testing.T, at []time.Time, rate float64, burst int) {
	t.Helper()
	for i := range at {
		for j := i; j < len(at); j++ {
			if allowed := rate*at[j].Sub(at[i]).Seconds() + float64(burst); float64(j-i+1) > allowed {
				t.Fatalf("expect at most %v messages taken from %v to %v, got %d", allowed, at[i].Sub(at[0]), at[j].Sub(at[0]), j-i+1)
			}
		}
	}
}

// RateLimit is measured on receives, in bursts of at most one receive:
// Run's receives, long-polling an empty DLQ, do not all take their ten when
// messages arrive. The pacer's schedule started at the zero time, so every
// worker was admitted at once: 16 long polls took 160 messages in the same
// instant at RateLimit 10.
func TestRateLimitBurstsOfOneReceive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, false)
		log := &receiveLog{API: w.api}
		r, err := replay.New(log, w.dlq, w.operator, func(o *replay.Options) {
			o.Target = w.main
			o.Policy = replay.Policy{Backoff: backoff.Constant{}}
			o.RateLimit = 10
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- r.Run(ctx) }()
		time.Sleep(time.Second) // every receive long-polls the empty DLQ
		for b := range 30 {
			entries := make([]types.SendMessageBatchRequestEntry, 10)
			for i := range entries {
				entries[i] = types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), MessageBody: aws.String(fmt.Sprintf("m%02d-%d", b, i))}
			}
			if _, err := w.api.SendMessageBatch(context.Background(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(w.dlq), Entries: entries}); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(10 * time.Second)
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		at := log.taken()
		if len(at) < 90 {
			t.Fatalf("expect about 100 messages taken in 10 s at RateLimit 10, got %d", len(at))
		}
		withinRate(t, at, 10, 10)
	})
}

// Under a RateLimit a message waits before its receive, never after it: at
// 0.1 per second each receive takes one message and starts its pass at
// once. Messages taken together waited in the pacer, invisible, past their
// 60 s visibility timeout, and a second reader of the DLQ replayed them
// too.
func TestRateLimitHoldsNoMessagePastItsVisibility(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, false)
		slow, err := replay.New(w.api, w.dlq, w.operator, func(o *replay.Options) {
			o.Target = w.main
			o.Policy = replay.Policy{Backoff: backoff.Constant{}}
			o.RateLimit = 0.1
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- slow.Run(ctx) }()
		time.Sleep(time.Second)
		for i := range 16 {
			w.seedDLQ(t, fmt.Sprintf("m%02d", i), "", nil)
		}
		time.Sleep(61 * time.Second)
		// An operator drains the DLQ by hand, without a rate.
		if _, err := w.replayer(t).Drain(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Second)
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if got := w.takeAll(t, w.main); len(got) != 16 {
			t.Fatalf("16 messages dead-lettered, %d on the target: the rate-limited replayer held some past their visibility timeout", len(got))
		}
	})
}

// A tiny RateLimit is a tiny rate: one message in 300 years moves one
// message. Its pacing span overflowed time.Duration into the past, and
// nothing was paced.
func TestTinyRateLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, false)
		for i := range 30 {
			w.seedDLQ(t, fmt.Sprint(i), "", nil)
		}
		log := &receiveLog{API: w.api}
		r, err := replay.New(log, w.dlq, w.operator, func(o *replay.Options) {
			o.Target = w.main
			o.Policy = replay.Policy{Backoff: backoff.Constant{}}
			o.Concurrency = 1
			o.RateLimit = 1e-10
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		if _, err := r.Drain(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("expect Drain to wait for the rate until its ctx ended, got %v", err)
		}
		if n := len(log.taken()); n != 1 {
			t.Fatalf("expect one message taken within the hour at RateLimit 1e-10/s, got %d", n)
		}
	})
}

// A batch in progress when Run's ctx ends is finished: its sends, deletes
// and holds use a ctx that outlives Run's, so nothing sent is left
// undeleted, and every message received is processed, with a RateLimit
// too. Messages that waited in the pacer after their receive were dropped
// at the end of Run, to come back only after their visibility timeout.
func TestRunFinishesTheBatchInProgress(t *testing.T) {
	for _, rate := range []float64{0, 1} {
		t.Run(fmt.Sprint("RateLimit ", rate), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newWorld(t, false)
				for i := range 3 {
					w.seedDLQ(t, fmt.Sprint(i), "", nil)
				}
				w.srv.Inject(sqsfake.Fault{Op: "SendMessageBatch", Latency: 5 * time.Second})
				log := &receiveLog{API: w.api}
				r, err := replay.New(log, w.dlq, w.operator, func(o *replay.Options) {
					o.Target = w.main
					o.Policy = replay.Policy{Backoff: backoff.Constant{}}
					o.RateLimit = rate
				})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- r.Run(ctx) }()
				time.Sleep(500 * time.Millisecond) // the sends are on their way
				cancel()
				if err := <-done; err != nil {
					t.Fatal(err)
				}
				onMain, taken := w.receiveAll(t, w.main), len(log.taken())
				time.Sleep(time.Minute) // past the receive's visibility timeout
				if inDLQ := w.receiveAll(t, w.dlq); taken == 0 || len(onMain) != taken || len(inDLQ) != 3-taken {
					t.Fatalf("expect every message taken (%d) on main and deleted from the DLQ, got %d on main, %d in the DLQ", taken, len(onMain), len(inDLQ))
				}
			})
		})
	}
}

// The DLQ must not have a redrive policy of its own: holds count as
// receives, so SQS moves a message held until due on to the DLQ's own
// dead-letter queue at its next receive, out of the replayer's reach. A
// pass with a client that reads queue attributes refuses to start; one
// whose client cannot read them shows why.
func TestDLQRedrivePolicyIsRefusedBecauseItTakesHeldMessagesAway(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, false)
		lost := w.create(t, "dlq-of-dlq", nil)
		if _, err := w.api.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(w.dlq), Attributes: map[string]string{
			"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:123456789012:dlq-of-dlq","maxReceiveCount":1}`,
		}}); err != nil {
			t.Fatal(err)
		}
		w.seedDLQ(t, "m", "", nil)
		policy := func(o *replay.Options) { o.Policy = replay.Policy{Backoff: backoff.Constant{D: time.Hour}} }
		if _, err := w.replayer(t, policy).Drain(context.Background()); !errors.Is(err, replay.ErrConfig) || !strings.Contains(err.Error(), "redrive policy") {
			t.Fatalf("expect the pass refused for the DLQ's redrive policy, got %v", err)
		}
		if n := w.srv.Calls().Op["ReceiveMessage"]; n != 0 {
			t.Fatalf("expect nothing received by a refused pass, got %d receives", n)
		}

		unchecked, err := replay.New(apiOnly{w.api}, w.dlq, w.operator, func(o *replay.Options) {
			o.Target, o.VisibilityTimeout = w.main, 30*time.Second
			policy(o)
		})
		if err != nil {
			t.Fatal(err)
		}
		if rep := w.drain(t, unchecked); rep.Held != 1 {
			t.Fatalf("expect the message held for its hour, got %+v", rep)
		}
		time.Sleep(time.Hour + time.Minute)
		if rep := w.drain(t, unchecked); rep.Replayed != 0 {
			t.Fatalf("expect nothing to replay, got %+v", rep)
		}
		if got := w.receiveAll(t, lost); len(got) != 1 {
			t.Fatalf("expect the held message moved to the DLQ's own DLQ, got %d there", len(got))
		}
	})
}

// A DLQ whose retention is no longer than the longest hold would let a held
// message expire in it: the pass refuses to start, naming both.
func TestDLQRetentionNoLongerThanMaxBackoffIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, false)
		if _, err := w.api.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(w.dlq), Attributes: map[string]string{
			"MessageRetentionPeriod": "3600",
		}}); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			maxBackoff time.Duration
			refused    bool
		}{{0, true}, {time.Hour, true}, {59 * time.Minute, false}} {
			r := w.replayer(t, func(o *replay.Options) { o.Policy.MaxBackoff = tc.maxBackoff })
			_, err := r.Drain(context.Background())
			if refused := errors.Is(err, replay.ErrConfig) && strings.Contains(err.Error(), "MessageRetentionPeriod 1h0m0s"); refused != tc.refused || (!tc.refused && err != nil) {
				t.Errorf("MaxBackoff %v: expect refused=%v, got %v", tc.maxBackoff, tc.refused, err)
			}
		}
	})
}
