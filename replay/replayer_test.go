package replay_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"go.uber.org/goleak"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/consumer"
	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/replay"
	"github.com/sqskit/sqskit/sqsfake"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// world is a main queue redriving to a DLQ after two receives, and an
// operator queue, on sqsfake.
type world struct {
	srv                 *sqsfake.Server
	api                 *sqs.Client
	main, dlq, operator string
}

func newWorld(t *testing.T, fifo bool) *world {
	t.Helper()
	srv := sqsfake.New()
	w := &world{srv: srv, api: srv.Client()}
	suffix, attrs := "", func() map[string]string { return map[string]string{} }
	if fifo {
		suffix = ".fifo"
		attrs = func() map[string]string {
			return map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"}
		}
	}
	w.dlq = w.create(t, "dlq"+suffix, attrs())
	mainAttrs := attrs()
	mainAttrs["RedrivePolicy"] = `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:123456789012:dlq` + suffix + `","maxReceiveCount":2}`
	mainAttrs["VisibilityTimeout"] = "5"
	w.main = w.create(t, "main"+suffix, mainAttrs)
	w.operator = w.create(t, "operator"+suffix, attrs())
	return w
}

func (w *world) create(t *testing.T, name string, attrs map[string]string) string {
	t.Helper()
	out, err := w.api.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		t.Fatal(err)
	}
	return *out.QueueUrl
}

func (w *world) send(t *testing.T, body, group string, attrs map[string]types.MessageAttributeValue) string {
	t.Helper()
	in := &sqs.SendMessageInput{QueueUrl: aws.String(w.main), MessageBody: aws.String(body), MessageAttributes: attrs}
	if group != "" {
		in.MessageGroupId = aws.String(group)
	}
	out, err := w.api.SendMessage(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return *out.MessageId
}

func (w *world) receiveAll(t *testing.T, url string) []types.Message {
	t.Helper()
	out, err := w.api.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10,
		MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []types.MessageSystemAttributeName{"All"}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Messages
}

// handling records when the main queue's consumer handled what.
type handling struct {
	mu   sync.Mutex
	at   map[string][]time.Time
	fail func(body string, n int) bool
}

func (h *handling) handle(_ context.Context, m *handler.Message) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.at[m.Body] = append(h.at[m.Body], time.Now())
	if h.fail(m.Body, len(h.at[m.Body])) {
		return fmt.Errorf("cannot handle %s yet", m.Body)
	}
	return nil
}

func (h *handling) times(body string) []time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]time.Time(nil), h.at[body]...)
}

// run starts the main queue's consumer and the replayer; stop ends both.
func (w *world) run(t *testing.T, h *handling, fns ...func(*replay.Options)) (r *replay.Replayer, stop func()) {
	t.Helper()
	c, err := consumer.New(w.api, w.main, h.handle, func(o *consumer.Options) {
		o.OnFailure = consumer.LeaveToTimeout
		o.VisibilityTimeout = 5 * time.Second
	})
	if err != nil {
		t.Fatal(err)
	}
	r, err = replay.New(w.api, w.dlq, w.operator, append([]func(*replay.Options){func(o *replay.Options) {
		o.Target = w.main
	}}, fns...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = c.Run(ctx) }()
	go func() {
		defer wg.Done()
		if err := r.Run(ctx); err != nil {
			t.Error(err)
		}
	}()
	return r, func() { cancel(); wg.Wait() }
}

func metadataOf(t *testing.T, m types.Message) replay.Metadata {
	t.Helper()
	var md replay.Metadata
	if err := json.Unmarshal([]byte(aws.ToString(m.MessageAttributes[replay.MetadataAttribute].StringValue)), &md); err != nil {
		t.Fatalf("metadata: %v", err)
	}
	return md
}

// The whole life of a poison message: it fails on the main queue, SQS moves
// it to the DLQ, it is replayed three times with growing delays, and then it
// goes to the operator queue with the reason and its provenance, body and
// attributes intact.
func TestPoisonMessageLife(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, false)
		h := &handling{at: map[string][]time.Time{}, fail: func(string, int) bool { return true }}
		attrs := map[string]types.MessageAttributeValue{
			"tenant": {DataType: aws.String("String"), StringValue: aws.String("acme")},
			"sig":    {DataType: aws.String("Binary"), BinaryValue: []byte{0, 0xfe, 0xff, 7}},
			"amount": {DataType: aws.String("Number.cents"), StringValue: aws.String("1999")},
		}
		id := w.send(t, "poison ✓", "", attrs)
		var mu sync.Mutex
		var delays []time.Duration
		_, stop := w.run(t, h, func(o *replay.Options) {
			o.Policy = replay.Policy{MaxAttempts: 3, Backoff: backoff.Exponential{Base: 10 * time.Second}}
			o.Hooks.Replayed = func(_ context.Context, _ *types.Message, d replay.Decision, _ string) {
				mu.Lock()
				delays = append(delays, d.Delay)
				mu.Unlock()
			}
		})
		var escalated []types.Message
		for len(escalated) == 0 {
			time.Sleep(time.Second)
			escalated = w.receiveAll(t, w.operator)
		}
		stop()

		// 2 receives before each redrive: the original and 3 replays.
		if got := len(h.times("poison ✓")); got != 8 {
			t.Fatalf("expect 8 handlings (2 per life), got %d", got)
		}
		mu.Lock()
		if fmt.Sprint(delays) != "[10s 20s 40s]" {
			t.Fatalf("expect delays 10s, 20s, 40s, got %v", delays)
		}
		mu.Unlock()
		times := h.times("poison ✓")
		for i, want := range []time.Duration{10, 20, 40} {
			// Each life ends 5 s (the visibility timeout) after its second
			// failed handling, when SQS moves the message to the DLQ; the
			// replay's delay counts from there.
			if gap := times[2*i+2].Sub(times[2*i+1]); gap < 5*time.Second+want*time.Second {
				t.Errorf("replay %d came %v after the last failure, before the life's end and its %v delay", i+1, gap, want*time.Second)
			}
		}
		m := escalated[0]
		if aws.ToString(m.Body) != "poison ✓" {
			t.Fatalf("expect the body intact, got %q", aws.ToString(m.Body))
		}
		for name, v := range attrs {
			got := m.MessageAttributes[name]
			if aws.ToString(got.DataType) != aws.ToString(v.DataType) || aws.ToString(got.StringValue) != aws.ToString(v.StringValue) || string(got.BinaryValue) != string(v.BinaryValue) {
				t.Errorf("attribute %s: expect %+v, got %+v", name, v, got)
			}
		}
		md := metadataOf(t, m)
		if md.Reason != replay.AttemptsExhausted || md.OriginalID != id || md.SourceArn != "arn:aws:sqs:us-east-1:123456789012:main" || md.FirstFailure.IsZero() {
			t.Fatalf("expect reason and provenance, got %+v", md)
		}
		if aws.ToString(m.MessageAttributes[replay.DefaultCounterAttribute].StringValue) != "3" {
			t.Errorf("expect the escalated message to show 3 replays, got %v", m.MessageAttributes[replay.DefaultCounterAttribute])
		}
		if left := w.receiveAll(t, w.dlq); len(left) != 0 {
			t.Fatalf("expect the DLQ empty, got %d", len(left))
		}
	})
}

// A transient failure: the message fails its first life and half of its
// second, then succeeds on replay 2; nothing is escalated.
func TestTransientFailureSucceedsOnReplayTwo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, false)
		h := &handling{at: map[string][]time.Time{}, fail: func(_ string, n int) bool { return n <= 4 }}
		w.send(t, "flaky", "", nil)
		var attempts []int
		_, stop := w.run(t, h, func(o *replay.Options) {
			o.Policy = replay.Policy{MaxAttempts: 3, Backoff: backoff.Constant{D: 30 * time.Second}}
			o.Hooks.Replayed = func(_ context.Context, _ *types.Message, d replay.Decision, _ string) {
				attempts = append(attempts, d.Attempt)
			}
		})
		for len(h.times("flaky")) < 5 {
			time.Sleep(time.Second)
		}
		time.Sleep(time.Minute)
		stop()
		if len(h.times("flaky")) != 5 || fmt.Sprint(attempts) != "[1 2]" {
			t.Fatalf("expect success on the fifth handling after replays 1 and 2, got %d handlings, replays %v", len(h.times("flaky")), attempts)
		}
		if got := w.receiveAll(t, w.operator); len(got) != 0 {
			t.Fatal("expect nothing escalated")
		}
		if got := w.receiveAll(t, w.main); len(got) != 0 {
			t.Fatal("expect the message deleted after success")
		}
	})
}

// A 3-hour delay, far past the 900 s SQS allows per message: the message is
// held in the DLQ until due, and arrives on time.
func TestThreeHourDelayHonoured(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, false)
		h := &handling{at: map[string][]time.Time{}, fail: func(_ string, n int) bool { return n <= 2 }}
		w.send(t, "later", "", nil)
		var held []time.Time
		_, stop := w.run(t, h, func(o *replay.Options) {
			o.Policy = replay.Policy{Backoff: backoff.Constant{D: 3 * time.Hour}}
			o.Hooks.Held = func(_ context.Context, _ *types.Message, _ replay.Decision, until time.Time) {
				held = append(held, until)
			}
		})
		for len(h.times("later")) < 3 {
			time.Sleep(time.Minute)
		}
		stop()
		times := h.times("later")
		if gap := times[2].Sub(times[0]); gap < 3*time.Hour || gap > 3*time.Hour+2*time.Minute {
			t.Fatalf("expect the replay 3 h after the first send, came after %v", gap)
		}
		if len(held) != 1 {
			t.Fatalf("expect one hold in the DLQ, got %v", held)
		}
	})
}

func TestReplayOptions(t *testing.T) {
	api := sqsfake.New().Client()
	for i, fn := range []func(*replay.Options){
		func(o *replay.Options) {},
		func(o *replay.Options) { o.Target = "" },
		func(o *replay.Options) { o.Sources = map[string]string{"arn": "url"} },
		func(o *replay.Options) { o.RateLimit = -1 },
		func(o *replay.Options) { o.WaitTime = 30 * time.Second },
		func(o *replay.Options) { o.Policy.MaxAttempts = -2 }, // -1 is NoReplays
	} {
		_, err := replay.New(api, "dlq-url", "ops", func(o *replay.Options) { o.Target = "main" }, fn)
		if (err == nil) != (i == 0) {
			t.Errorf("case %d: unexpected %v", i, err)
		}
	}
}

// A nil option function is skipped: it made New panic.
func TestNilOptionFuncIsSkipped(t *testing.T) {
	var unset func(*replay.Options)
	if _, err := replay.New(sqsfake.New().Client(), "dlq-url", "ops", unset, func(o *replay.Options) { o.Target = "main" }); err != nil {
		t.Fatalf("expect the nil option skipped, got %v", err)
	}
}

// The default policy spaces replays by a growing delay a user watching the
// queues can see: each replay reaches the main queue its delay after it
// left the DLQ (the sample's rule), and each delay is at least the one
// before (EqualJitter from 1 min: 30 s to 1 min, 1 to 2 min, 2 to 4 min).
func TestDefaultPolicySpacesReplaysVisibly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, false)
		h := &handling{at: map[string][]time.Time{}, fail: func(string, int) bool { return true }}
		w.send(t, "poison", "", nil)
		var mu sync.Mutex
		var delays []time.Duration
		_, stop := w.run(t, h, func(o *replay.Options) {
			o.Hooks.Replayed = func(_ context.Context, _ *types.Message, d replay.Decision, _ string) {
				mu.Lock()
				delays = append(delays, d.Delay)
				mu.Unlock()
			}
		})
		for len(w.receiveAll(t, w.operator)) == 0 {
			time.Sleep(time.Second)
		}
		stop()
		mu.Lock()
		defer mu.Unlock()
		if len(delays) != 3 {
			t.Fatalf("expect 3 replays, got %v", delays)
		}
		times := h.times("poison")
		for i, d := range delays {
			lo, hi := 30*time.Second<<i, time.Minute<<i
			if d < lo || d > hi {
				t.Errorf("replay %d: expect a delay of %v to %v, got %v", i+1, lo, hi, d)
			}
			if i > 0 && d < delays[i-1] {
				t.Errorf("replay %d: expect at least the previous delay %v, got %v", i+1, delays[i-1], d)
			}
			// The life ends 5 s after its second failure (the visibility
			// timeout), when SQS moves the message to the DLQ.
			if gap := times[2*i+2].Sub(times[2*i+1]); gap < 5*time.Second+d || gap > 5*time.Second+d+2*time.Second {
				t.Errorf("replay %d: expect the next life %v after the last failure, got %v", i+1, 5*time.Second+d, gap)
			}
		}
	})
}
