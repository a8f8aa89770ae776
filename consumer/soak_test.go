package consumer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/sqsfake"
)

// chaosClient fails calls at random, before SQS applies them or after (a
// lost response: the call took effect, the caller sees an error).
type chaosClient struct {
	API
	mu  sync.Mutex
	rng *rand.Rand
	p   float64 // chance of each kind of fault
}

// roll picks what happens to one call: fail before, fail after, or pass.
func (c *chaosClient) roll() (before, after bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	x := c.rng.Float64()
	return x < c.p, x >= c.p && x < 2*c.p
}

func chaos[In, Out any](c *chaosClient, call func(context.Context, *In, ...func(*sqs.Options)) (*Out, error), ctx context.Context, in *In) (*Out, error) {
	before, after := c.roll()
	if before {
		return nil, sqsfake.ErrInternal
	}
	out, err := call(ctx, in)
	if err == nil && after {
		return nil, sqsfake.ErrInternal
	}
	return out, err
}

func (c *chaosClient) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	return chaos(c, c.API.ReceiveMessage, ctx, in)
}

func (c *chaosClient) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	return chaos(c, c.API.DeleteMessageBatch, ctx, in)
}

func (c *chaosClient) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	return chaos(c, c.API.ChangeMessageVisibilityBatch, ctx, in)
}

func (c *chaosClient) GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, _ ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	return chaos(c, c.API.GetQueueAttributes, ctx, in)
}

// soakLedger checks the soak's invariants as events happen.
type soakLedger struct {
	mu         sync.Mutex
	sent       map[string][]string // group → bodies in send order
	firstOK    map[string][]string // group → bodies in order of first success
	succeeded  map[string]bool
	deleted    map[string]bool // message id → a Deleted hook fired
	violations []string
}

func (l *soakLedger) violate(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.violations) < 20 {
		l.violations = append(l.violations, fmt.Sprintf(format, args...))
	}
}

// watch wires a consumer's hooks to the ledger.
func (l *soakLedger) watch(o *Options, c func() *Consumer, maxInFlight int) {
	sample := func() {
		if n := c().Stats().InFlight; n > int64(maxInFlight) {
			l.violate("InFlight %d above MaxInFlight %d", n, maxInFlight)
		}
	}
	o.Hooks.Received = func(_ context.Context, m *handler.Message) {
		sample()
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.deleted[m.ID] {
			l.violations = append(l.violations, fmt.Sprintf("%s received after a Deleted hook said it was deleted", m.Body))
		}
	}
	o.Hooks.Handled = func(_ context.Context, m *handler.Message, _ time.Duration) {
		sample()
		l.mu.Lock()
		defer l.mu.Unlock()
		if !l.succeeded[m.Body] {
			l.succeeded[m.Body] = true
			l.firstOK[m.GroupID()] = append(l.firstOK[m.GroupID()], m.Body)
		}
	}
	o.Hooks.Deleted = func(_ context.Context, m *handler.Message) {
		sample()
		l.mu.Lock()
		defer l.mu.Unlock()
		if !l.succeeded[m.Body] {
			l.violations = append(l.violations, fmt.Sprintf("%s deleted before any handler succeeded", m.Body))
		}
		l.deleted[m.ID] = true
	}
	o.Hooks.Released = func(context.Context, *handler.Message, time.Duration) { sample() }
	o.Hooks.Failed = func(context.Context, *handler.Message, error) { sample() }
}

// TestSoakFIFOUnderFaults runs two consumers with two receivers each on one
// FIFO queue with faults on every operation (failed and lost calls, failed
// batch entries), handlers that fail, panic, exit and outlive the
// visibility timeout, and restarts; with a dead-letter queue, poison
// messages too. It checks that nothing hangs, InFlight never passes
// MaxInFlight, nothing is lost (every message succeeded, or is in the
// dead-letter queue), no message is reported deleted that was not, and each
// group's first successes keep send order. Seeds 1 and 3 by default, all
// four with SQSKIT_LONG=1 (as CI runs it).
func TestSoakFIFOUnderFaults(t *testing.T) {
	long := os.Getenv("SQSKIT_LONG") != ""
	for _, tc := range []struct {
		name string
		seed uint64
		dlq  bool
	}{{"seed 1", 1, false}, {"seed 2", 2, false}, {"seed 3 with redrive", 3, true}, {"seed 4 with redrive", 4, true}} {
		t.Run(tc.name, func(t *testing.T) {
			if !long && tc.seed%2 == 0 {
				t.Skip("seeds 2 and 4 run with SQSKIT_LONG=1 (CI sets it)")
			}
			if tc.dlq && sqsfakeSkipsAfterRedrive(t) {
				t.Skip("this sqsfake skips messages when a redrive inside a receive compacts the queue " +
					"(on FIFO it returns a group's later messages first), which breaks FIFO order under the consumer; " +
					"the redrive soak runs once sqsfake is fixed")
			}
			synctest.Test(t, func(t *testing.T) { soak(t, tc.seed, tc.dlq) })
		})
	}
}

func soak(t *testing.T, seed uint64, withDLQ bool) {
	const messages, groups, maxInFlight = 3000, 25, 12
	var f *qfix
	deadLettered := func() map[string]bool { return nil }
	if withDLQ {
		dlq := newQueue(t, "soak-dlq.fifo", nil)
		arn, err := dlq.client.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: &dlq.url, AttributeNames: []types.QueueAttributeName{"QueueArn"}})
		if err != nil {
			t.Fatal(err)
		}
		q, err := dlq.client.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String("soak.fifo"), Attributes: map[string]string{
			"FifoQueue": "true", "ContentBasedDeduplication": "true",
			"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":6}`, arn.Attributes["QueueArn"]),
		}})
		if err != nil {
			t.Fatal(err)
		}
		f = &qfix{srv: dlq.srv, client: dlq.client, url: *q.QueueUrl}
		deadLettered = func() map[string]bool { return drain(t, dlq) }
	} else {
		f = newQueue(t, "soak.fifo", nil)
	}
	poison := func(body string) bool { return withDLQ && strings.HasSuffix(body, "37") } // 30 messages, all of group g12
	l := &soakLedger{sent: map[string][]string{}, firstOK: map[string][]string{}, succeeded: map[string]bool{}, deleted: map[string]bool{}}
	for i := range messages {
		g := fmt.Sprintf("g%02d", i%groups)
		body := fmt.Sprintf("%s-%04d", g, i)
		l.sent[g] = append(l.sent[g], body)
		f.send(t, g, body)
	}
	entryRng := rand.New(rand.NewPCG(seed, 7))
	var entryMu sync.Mutex
	failEntry := func(int, string) bool { entryMu.Lock(); defer entryMu.Unlock(); return entryRng.Float64() < 0.05 }
	f.srv.Inject(sqsfake.Fault{Op: "DeleteMessageBatch", Entries: &sqsfake.EntryFault{Match: failEntry}})
	f.srv.Inject(sqsfake.Fault{Op: "ChangeMessageVisibilityBatch", Entries: &sqsfake.EntryFault{Match: failEntry}})

	handlerRng := rand.New(rand.NewPCG(seed, 11))
	var handlerMu sync.Mutex
	handle := func(ctx context.Context, m *handler.Message) error {
		handlerMu.Lock()
		x := handlerRng.Float64()
		d := time.Duration(handlerRng.IntN(2000)) * time.Millisecond
		handlerMu.Unlock()
		switch {
		case x < 0.01:
			d = 40 * time.Second // past the 30 s visibility: the heartbeat must hold it
		case x < 0.02:
			panic("handler bug")
		case x < 0.025:
			runtime.Goexit()
		}
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return ctx.Err()
		}
		if x < 0.10 || poison(m.Body) {
			return errors.New("failure")
		}
		return nil
	}

	var wg sync.WaitGroup
	done := make(chan struct{})
	for i := range 2 {
		client := &chaosClient{API: f.client, rng: rand.New(rand.NewPCG(seed, uint64(i))), p: 0.03}
		var c *Consumer
		c, err := New(client, f.url, handle, func(o *Options) {
			o.Concurrency, o.MaxInFlight = 4, maxInFlight
			o.ReceiveConcurrency, o.MaxReceiveConcurrency = 2, 2
			o.DeleteConcurrency = 2
			o.OnFailure = ReleaseNow
			o.ShutdownTimeout = 5 * time.Second
			l.watch(o, func() *Consumer { return c }, maxInFlight)
		})
		if err != nil {
			t.Fatal(err)
		}
		runRestarting(&wg, c, fmt.Sprint("consumer ", i), rand.New(rand.NewPCG(seed, uint64(100+i))), 5, 40, done, 0, l.violate)
	}

	deadline := time.Now().Add(6 * time.Hour)
	for {
		time.Sleep(time.Second)
		if v, fl := f.counts(t); v+fl == 0 {
			break // everything was deleted or dead-lettered
		}
		if time.Now().After(deadline) {
			l.mu.Lock()
			t.Fatalf("not done after 6 h of fake time: %d of %d handled", len(l.succeeded), messages)
		}
	}
	close(done)
	wg.Wait()

	dead := deadLettered()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, v := range l.violations {
		t.Error(v)
	}
	for g, sent := range l.sent {
		var want []string
		for _, b := range sent {
			switch {
			case dead[b] && l.succeeded[b]:
				t.Errorf("%s succeeded and was dead-lettered too", b)
			case poison(b) && !dead[b]:
				t.Errorf("poison message %s is not in the dead-letter queue", b)
			case !dead[b]:
				want = append(want, b)
			}
		}
		if got := l.firstOK[g]; !slices.Equal(got, want) {
			t.Errorf("group %s: first successes out of send order (dead-lettered excluded):\n got  %v\n want %v", g, got, want)
		}
	}
	// Messages behind the poison ones pay for some of their failures (see
	// the maxReceiveCount rule in the package doc); with restarts, lost
	// calls and two consumers a few may still be dead-lettered, not many.
	if good := len(dead) - 30; withDLQ && good > 10 {
		t.Errorf("expect few good messages dead-lettered, got %d", good)
	}
}

// drain empties a queue and returns the bodies it held.
func drain(t *testing.T, q *qfix) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for {
		r, err := q.client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: &q.url, MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Messages) == 0 {
			return out
		}
		for _, m := range r.Messages {
			out[aws.ToString(m.Body)] = true
			if _, err := q.client.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: &q.url, ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// sqsfakeSkipsAfterRedrive reports whether this sqsfake has the defect where
// a redrive inside a receive compacts the queue under the receive's loop,
// so the receive skips messages (on FIFO, it can return a group's later
// messages first).
func sqsfakeSkipsAfterRedrive(t *testing.T) bool {
	t.Helper()
	ctx := context.Background()
	dlq := newQueue(t, "probe-dlq", nil)
	arn, err := dlq.client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &dlq.url, AttributeNames: []types.QueueAttributeName{"QueueArn"}})
	if err != nil {
		t.Fatal(err)
	}
	q, err := dlq.client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("probe"), Attributes: map[string]string{
		"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":1}`, arn.Attributes["QueueArn"]),
	}})
	if err != nil {
		t.Fatal(err)
	}
	f := &qfix{srv: dlq.srv, client: dlq.client, url: *q.QueueUrl}
	f.send(t, "", numbered(128)...)
	receive := func() types.Message {
		out, err := f.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &f.url})
		if err != nil || len(out.Messages) != 1 {
			t.Fatalf("probe receive: %v, %v", out, err)
		}
		return out.Messages[0]
	}
	// Delete 63 messages, then receive the 64th and make it visible again:
	// the next receive redrives it, the 64th deletion, which compacts the
	// queue's storage (at half deleted) in the middle of that receive.
	for range 63 {
		m := receive()
		if _, err := f.client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &f.url, ReceiptHandle: m.ReceiptHandle}); err != nil {
			t.Fatal(err)
		}
	}
	m := receive()
	if _, err := f.client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: &f.url, ReceiptHandle: m.ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	out, err := f.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &f.url})
	if err != nil {
		t.Fatal(err)
	}
	return len(out.Messages) == 0 // 64 messages are visible
}

// TestSoakUnderCombinedFaults runs three consumers on one queue, two with
// a handler.Handler and one with a handler.BatchHandler, with a 2 s visibility timeout,
// server-side faults on every operation at once (failed calls, calls that
// took effect and failed, failed entries, 1.5 s of latency), handlers that
// fail, panic, exit, outlive HandlerTimeout ignoring their ctx and outlive
// the visibility, and restarts every few seconds. Contracts: nothing is
// lost; nothing is deleted before a handler succeeded; on a standard queue
// no message is reported deleted twice (one delete only can have deleted
// it: a second report is a delete that landed after the lapse); InFlight
// never passes MaxInFlight and is 0 once Run returned; Run returns within
// ShutdownTimeout + 1 s of its ctx's end; on FIFO, each group's first
// successes keep send order. Written by a hostile review, it found the
// delete reported after the lapse, the unjoined HandlerTimeout and the
// handler.BatchHandler's lost lease that let a group-mate overtake. One seed per
// queue by default, two with SQSKIT_LONG=1 (as CI runs it);
// SQSKIT_SOAK_SEEDS=n runs n.
func TestSoakUnderCombinedFaults(t *testing.T) {
	seeds := []uint64{1}
	if os.Getenv("SQSKIT_LONG") != "" {
		seeds = append(seeds, 2)
	}
	if s := os.Getenv("SQSKIT_SOAK_SEEDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("SQSKIT_SOAK_SEEDS=%q: expect a count", s)
		}
		seeds = seeds[:0]
		for i := range n {
			seeds = append(seeds, uint64(100+i))
		}
	}
	for _, fifo := range []bool{false, true} {
		for _, seed := range seeds {
			t.Run(fmt.Sprintf("fifo %v seed %d", fifo, seed), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { soakCombined(t, seed, fifo) })
			})
		}
	}
}

// combinedLedger checks TestSoakUnderCombinedFaults' invariants as events
// happen, and keeps each message's history for the report.
type combinedLedger struct {
	mu         sync.Mutex
	handledOK  map[string]int      // body → successful handler returns
	deleted    map[string]int      // body → Deleted hooks
	sent       map[string][]string // FIFO: group → bodies in send order
	firstOK    map[string][]string // FIFO: group → bodies in order of first success
	timeline   map[string][]string // body → events
	violations []string
}

func (l *combinedLedger) note(body, format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.timeline[body] = append(l.timeline[body], time.Now().Format("15:04:05.000")+" "+fmt.Sprintf(format, args...))
}

func (l *combinedLedger) violate(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.violations) < 30 {
		l.violations = append(l.violations, fmt.Sprintf(format, args...))
	}
}

func (l *combinedLedger) watch(o *Options, c func() *Consumer, maxInFlight int, name string) {
	sample := func(ev string) {
		if cc := c(); cc != nil {
			if n := cc.Stats().InFlight; n > int64(maxInFlight) {
				l.violate("%s: InFlight %d above MaxInFlight %d at %s", name, n, maxInFlight, ev)
			}
		}
	}
	o.Hooks.Received = func(_ context.Context, m *handler.Message) {
		sample("received")
		l.note(m.Body, "%s received (count %d)", name, m.ReceiveCount())
	}
	o.Hooks.Extended = func(_ context.Context, m *handler.Message, d time.Duration) {
		l.note(m.Body, "%s extended %v", name, d)
	}
	o.Hooks.DeleteFailed = func(_ context.Context, m *handler.Message, err error) {
		l.note(m.Body, "%s delete failed: %v", name, err)
	}
	o.Hooks.Handled = func(_ context.Context, m *handler.Message, _ time.Duration) {
		sample("handled")
		l.note(m.Body, "%s handled", name)
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.handledOK[m.Body] == 0 {
			l.firstOK[m.GroupID()] = append(l.firstOK[m.GroupID()], m.Body)
		}
		l.handledOK[m.Body]++
	}
	o.Hooks.Deleted = func(_ context.Context, m *handler.Message) {
		sample("deleted")
		l.note(m.Body, "%s deleted", name)
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.handledOK[m.Body] == 0 {
			l.violations = append(l.violations, fmt.Sprintf("%s: %s deleted before any handler succeeded", name, m.Body))
		}
		l.deleted[m.Body]++
	}
	o.Hooks.Released = func(_ context.Context, m *handler.Message, d time.Duration) {
		sample("released")
		l.note(m.Body, "%s released %v", name, d)
	}
	o.Hooks.Failed = func(_ context.Context, m *handler.Message, err error) {
		sample("failed")
		l.note(m.Body, "%s failed: %v", name, err)
	}
	o.Hooks.LeaseLost = func(_ context.Context, m *handler.Message, err error) {
		sample("lease lost")
		l.note(m.Body, "%s lease lost: %v", name, err)
	}
}

func soakCombined(t *testing.T, seed uint64, fifo bool) {
	const messages, maxInFlight, groups = 1200, 10, 25
	const shutdown = 3 * time.Second
	name := "soak"
	if fifo {
		name = "soak.fifo"
	}
	f := newQueue(t, name, nil)
	l := &combinedLedger{handledOK: map[string]int{}, deleted: map[string]int{}, sent: map[string][]string{}, firstOK: map[string][]string{}, timeline: map[string][]string{}}
	for i := range messages {
		g, body := "", fmt.Sprintf("m%04d", i)
		if fifo {
			g = fmt.Sprintf("g%02d", i%groups)
			l.sent[g] = append(l.sent[g], body)
		}
		f.send(t, g, body)
	}
	var faultMu sync.Mutex
	faultRng := rand.New(rand.NewPCG(seed, 99))
	chance := func(p float64) bool { faultMu.Lock(); defer faultMu.Unlock(); return faultRng.Float64() < p }
	for _, op := range []string{"ReceiveMessage", "DeleteMessageBatch", "ChangeMessageVisibilityBatch"} {
		f.srv.Inject(sqsfake.Fault{Op: op, AfterApply: true, Match: func(string, any) bool { return chance(0.03) }})
		f.srv.Inject(sqsfake.Fault{Op: op, Match: func(string, any) bool { return chance(0.03) }})
		f.srv.Inject(sqsfake.Fault{Op: op, Latency: 1500 * time.Millisecond, Match: func(string, any) bool { return chance(0.05) }})
	}
	entries := &sqsfake.EntryFault{Match: func(int, string) bool { return chance(0.05) }}
	f.srv.Inject(sqsfake.Fault{Op: "DeleteMessageBatch", Entries: entries})
	f.srv.Inject(sqsfake.Fault{Op: "ChangeMessageVisibilityBatch", Entries: entries})

	var handlerMu sync.Mutex
	handlerRng := rand.New(rand.NewPCG(seed, 11))
	roll := func() (float64, time.Duration) {
		handlerMu.Lock()
		defer handlerMu.Unlock()
		return handlerRng.Float64(), time.Duration(handlerRng.IntN(1500)) * time.Millisecond
	}
	handle := func(ctx context.Context, m *handler.Message) error {
		x, d := roll()
		switch {
		case x < 0.01:
			panic("handler bug")
		case x < 0.015:
			runtime.Goexit()
		case x < 0.02:
			time.Sleep(4 * time.Second) // past HandlerTimeout, ignoring ctx
			return nil
		case x < 0.03:
			d = 7 * time.Second // past the 2 s visibility: the heartbeat must hold it
		}
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return ctx.Err()
		}
		if x < 0.10 {
			return errors.New("failure")
		}
		return nil
	}
	batchHandler := func(ctx context.Context, msgs []*handler.Message) []error {
		errs := make([]error, len(msgs))
		for i, m := range msgs {
			errs[i] = handle(ctx, m)
		}
		return errs
	}

	var wg sync.WaitGroup
	done := make(chan struct{})
	for i := range 3 {
		var c *Consumer
		var err error
		opts := func(o *Options) {
			o.Concurrency, o.MaxInFlight = 3, maxInFlight
			o.ReceiveConcurrency, o.MaxReceiveConcurrency = 1, 3
			o.DeleteConcurrency = 2
			o.VisibilityTimeout = 2 * time.Second
			o.HeartbeatInterval = 500 * time.Millisecond
			o.HandlerTimeout = 3 * time.Second
			o.OnFailure = ReleaseNow
			o.ShutdownTimeout = shutdown
			o.WaitTime = 2 * time.Second
			l.watch(o, func() *Consumer { return c }, maxInFlight, fmt.Sprint("consumer ", i))
		}
		if i == 2 {
			c, err = NewBatch(f.client, f.url, batchHandler, opts)
		} else {
			c, err = New(f.client, f.url, handle, opts)
		}
		if err != nil {
			t.Fatal(err)
		}
		runRestarting(&wg, c, fmt.Sprint("consumer ", i), rand.New(rand.NewPCG(seed, uint64(100+i))), 3, 30, done, shutdown+shutdownGrace, l.violate)
	}
	deadline := time.Now().Add(6 * time.Hour)
	for {
		time.Sleep(time.Second)
		if v, fl := f.counts(t); v+fl == 0 {
			break
		}
		if time.Now().After(deadline) {
			v, fl := f.counts(t)
			l.violate("not done after 6 h of fake time: %d visible, %d in flight", v, fl)
			break
		}
	}
	close(done)
	wg.Wait()
	time.Sleep(time.Minute) // handlers Run left behind, ignoring their ctx, return
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, v := range l.violations {
		t.Error(v)
	}
	for i := range messages {
		b := fmt.Sprintf("m%04d", i)
		if l.handledOK[b] == 0 {
			t.Errorf("%s left the queue without a successful handling", b)
		}
		if l.deleted[b] > 1 && !fifo {
			t.Errorf("%s reported deleted %d times: only one delete can have deleted it; its history:\n  %s", b, l.deleted[b], strings.Join(l.timeline[b], "\n  "))
		}
	}
	for g, want := range l.sent {
		if got := l.firstOK[g]; !slices.Equal(got, want) {
			i := 0
			for i < len(got) && i < len(want) && got[i] == want[i] {
				i++
			}
			t.Errorf("group %s: first successes out of send order from %d on:\n got  %v\n want %v", g, i, got[i:], want[i:])
			if i < len(want) {
				t.Errorf("%s:\n  %s", want[i], strings.Join(l.timeline[want[i]], "\n  "))
			}
		}
	}
}

// runRestarting runs c until done is closed, cancelling it and running it
// again every first + rng.IntN(span) seconds. Through violate it records a
// Run that fails, one that returns later than maxReturn after its cancel
// (when maxReturn > 0), and messages still held once Run returned.
func runRestarting(wg *sync.WaitGroup, c *Consumer, name string, rng *rand.Rand, first, span int, done <-chan struct{}, maxReturn time.Duration, violate func(string, ...any)) {
	wg.Go(func() {
		for {
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() { errc <- c.Run(ctx) }()
			select {
			case <-time.After(time.Duration(first+rng.IntN(span)) * time.Second):
			case <-done:
			}
			cancel()
			began := time.Now()
			if err := <-errc; err != nil {
				violate("%s: Run: %v", name, err)
			}
			if took := time.Since(began); maxReturn > 0 && took > maxReturn {
				violate("%s: Run returned %v after cancel, beyond %v", name, took, maxReturn)
			}
			if n := c.Stats().InFlight; n != 0 {
				violate("%s holds %d messages after Run returned", name, n)
			}
			select {
			case <-done:
				return
			default:
			}
		}
	})
}
