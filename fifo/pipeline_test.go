package fifo_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/fifo"
	"github.com/sqskit/sqskit/sqsfake"
)

// flightRecorder wraps the API: it counts the SendMessageBatch calls in
// flight, notes any FIFO group carried by two calls at once, holds each
// call for latency (on the bubble's clock, in a synctest test), and can
// inject an sqsfake fault aimed at one call: calls reach sqsfake one at a
// time, so the fault faultFor returns applies to that call and no other.
type flightRecorder struct {
	fifo.API
	srv      *sqsfake.Server
	latency  time.Duration
	faultFor func(call int, in *sqs.SendMessageBatchInput) *sqsfake.Fault
	// failFrom, when set, fails entries of a call as SQS may: the entry of
	// each body it returns a failure for, and with it every later entry
	// of its group in the call (retryable InternalError); the call's other
	// entries go on to sqsfake. A batch carries a group's consecutive
	// messages together, so this is how a test fails one of them without
	// SQS storing the later ones ahead of it.
	failFrom func(body string) *types.BatchResultErrorEntry

	mu             sync.Mutex
	calls          int
	inFlight, peak int
	groups         map[string]bool
	shared         []string // groups found in two calls at once
	stored         []string // bodies SQS accepted, in the order it did
	sends          []send

	// apply serialises the calls into sqsfake. A channel made in the bubble,
	// not a mutex: synctest advances its clock only while every goroutine
	// is durably blocked, and waiting on a mutex is not.
	apply chan struct{}
}

// send is one call as the recorder saw it.
type send struct {
	at     time.Time // when it reached SQS
	bodies []string
}

func newRecorder(f *fixture, latency time.Duration) *flightRecorder {
	return &flightRecorder{API: f.client, srv: f.srv, latency: latency, groups: map[string]bool{}, apply: make(chan struct{}, 1)}
}

func (r *flightRecorder) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	r.mu.Lock()
	r.calls++
	call := r.calls
	r.inFlight++
	r.peak = max(r.peak, r.inFlight)
	var groups []string
	for _, e := range in.Entries {
		g := aws.ToString(e.MessageGroupId)
		if g == "" || slices.Contains(groups, g) {
			continue
		}
		if r.groups[g] {
			r.shared = append(r.shared, g)
		}
		r.groups[g] = true
		groups = append(groups, g)
	}
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.inFlight--
		for _, g := range groups {
			delete(r.groups, g)
		}
		r.mu.Unlock()
	}()

	if r.latency > 0 {
		t := time.NewTimer(r.latency)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
	}
	r.apply <- struct{}{}
	defer func() { <-r.apply }()
	if r.faultFor != nil {
		if f := r.faultFor(call, in); f != nil {
			f.Times = 1
			r.srv.Inject(*f)
		}
	}
	forward, refused := in, []types.BatchResultErrorEntry(nil)
	if r.failFrom != nil {
		forward, refused = r.split(in)
	}
	var out *sqs.SendMessageBatchOutput
	var err error
	if len(forward.Entries) > 0 {
		out, err = r.API.SendMessageBatch(ctx, forward, optFns...)
	} else {
		out = &sqs.SendMessageBatchOutput{}
	}
	if out != nil {
		out.Failed = append(out.Failed, refused...)
	}
	r.mu.Lock()
	s := send{at: time.Now()}
	for _, e := range in.Entries {
		s.bodies = append(s.bodies, aws.ToString(e.MessageBody))
	}
	r.sends = append(r.sends, s)
	if out != nil {
		for _, ok := range out.Successful {
			var i int
			fmt.Sscan(aws.ToString(ok.Id), &i)
			r.stored = append(r.stored, aws.ToString(in.Entries[i].MessageBody))
		}
	}
	r.mu.Unlock()
	return out, err
}

// split takes the entries failFrom fails, and the later entries of their
// groups, out of in, and returns the rest and their failures.
func (r *flightRecorder) split(in *sqs.SendMessageBatchInput) (*sqs.SendMessageBatchInput, []types.BatchResultErrorEntry) {
	rest := *in
	rest.Entries = nil
	var refused []types.BatchResultErrorEntry
	failed := map[string]bool{}
	for _, e := range in.Entries {
		g := aws.ToString(e.MessageGroupId)
		if f := r.failFrom(aws.ToString(e.MessageBody)); f != nil {
			f.Id = e.Id
			refused = append(refused, *f)
			failed[g] = true
			continue
		}
		if failed[g] {
			refused = append(refused, types.BatchResultErrorEntry{Id: e.Id, Code: aws.String("InternalError"), Message: aws.String("an earlier entry of its group failed")})
			continue
		}
		rest.Entries = append(rest.Entries, e)
	}
	return &rest, refused
}

// entryIndex returns the position of the entry with body in in, or -1.
func entryIndex(in *sqs.SendMessageBatchInput, body string) int {
	for i, e := range in.Entries {
		if aws.ToString(e.MessageBody) == body {
			return i
		}
	}
	return -1
}

// Batches of different groups are in flight together, up to
// SendConcurrency (10 by default); no group is ever in two of them; on a
// standard queue any batches overlap. One SendBatch call of 200 messages in
// 200 groups makes 20 calls. Before the pipeline, every row peaked at 1.
func TestSendBatchOverlapsBatchesOfDisjointGroups(t *testing.T) {
	cases := []struct {
		queue       string
		groups      int
		concurrency int
		peak        int
	}{
		{"q.fifo", 200, 0, 10},
		{"q.fifo", 200, 3, 3},
		{"q.fifo", 20, 0, 10}, // each batch holds one group's ten messages: ten batches of disjoint groups fly (two did, of one message of ten groups each)
		{"q.fifo", 30, 0, 10}, // a group's 6 or 7 messages and a piece of another's
		{"std", 0, 0, 10},
	}
	for _, c := range cases {
		synctest.Test(t, func(t *testing.T) {
			f := newBubbleFixture(t, c.queue, nil)
			f.srv.Inject(sqsfake.Fault{Op: "SendMessageBatch", Latency: 10 * time.Millisecond})
			rec := newRecorder(f, 0)
			s, err := fifo.NewSender(rec, f.url, func(o *fifo.SenderOptions) { o.SendConcurrency = c.concurrency })
			if err != nil {
				t.Fatal(err)
			}
			msgs := messages(200, max(c.groups, 1))
			if c.groups == 0 {
				for i := range msgs {
					msgs[i].GroupID = ""
				}
			}
			for i, r := range s.SendBatch(context.Background(), msgs) {
				if r.Err != nil || r.Attempts != 1 {
					t.Fatalf("message %d: %+v", i, r)
				}
			}
			if rec.peak != c.peak || rec.calls != 20 || len(rec.shared) > 0 {
				t.Errorf("%s, %d groups, SendConcurrency %d: expect a peak of %d calls in flight over 20 calls, no group in two; got %d over %d, shared %v",
					c.queue, c.groups, c.concurrency, c.peak, rec.peak, rec.calls, rec.shared)
			}
			if c.groups > 0 {
				wantOrder(t, f.drain(t), msgs)
			}
		})
	}
}

// One group is one batch at a time, in order, however many slots are free.
func TestSendBatchOneGroupOneCallAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newBubbleFixture(t, "q.fifo", nil)
		f.srv.Inject(sqsfake.Fault{Op: "SendMessageBatch", Latency: 10 * time.Millisecond})
		rec := newRecorder(f, 0)
		s, err := fifo.NewSender(rec, f.url, func(o *fifo.SenderOptions) { o.SendConcurrency = 50 })
		if err != nil {
			t.Fatal(err)
		}
		msgs := messages(95, 1)
		for i, r := range s.SendBatch(context.Background(), msgs) {
			if r.Err != nil {
				t.Fatalf("message %d: %v", i, r.Err)
			}
		}
		if rec.peak != 1 || rec.calls != 10 {
			t.Errorf("expect 10 calls one at a time, got %d calls and a peak of %d", rec.calls, rec.peak)
		}
		wantOrder(t, f.drain(t), msgs)
	})
}

// Under concurrency, with entries failed by SQS and acknowledgements lost
// after SQS stored a batch, each group arrives in order: every message is
// on the queue once, and a message delivered after a later one of its
// group is one whose Result says Reordered (SQS accepted the later one from
// the same batch while failing it). Groups come in runs of three, so
// batches carry several messages of a group.
func TestSendBatchKeepsGroupOrderUnderConcurrencyAndFaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newBubbleFixture(t, "q.fifo", nil)
		rec := newRecorder(f, 10*time.Millisecond)
		faults := map[string]int{}
		rec.faultFor = func(call int, in *sqs.SendMessageBatchInput) *sqsfake.Fault {
			switch {
			case call%7 == 3: // stored, then the answer is lost
				faults["lost"]++
				return &sqsfake.Fault{Op: "SendMessageBatch", AfterApply: true}
			case call%3 == 1:
				faults["entries"]++
				return &sqsfake.Fault{Op: "SendMessageBatch", Entries: &sqsfake.EntryFault{
					Code: "InternalError", Match: func(i int, _ string) bool { return (i+call)%4 == 0 },
				}}
			}
			return nil
		}
		s, err := fifo.NewSender(rec, f.url, func(o *fifo.SenderOptions) { o.SendBackoff = backoff.Constant{D: 50 * time.Millisecond} })
		if err != nil {
			t.Fatal(err)
		}
		const n, groups = 360, 24
		msgs := make([]fifo.Message, n)
		for i := range msgs {
			g := fmt.Sprintf("g%02d", (i/3)%groups)
			msgs[i] = fifo.Message{Body: fmt.Sprintf("%s-%03d", g, i), GroupID: g}
		}
		results := s.SendBatch(context.Background(), msgs)
		reordered := map[string]bool{}
		retried := 0
		for i, r := range results {
			if r.Err != nil {
				t.Fatalf("message %d: %v", i, r.Err)
			}
			if r.Reordered {
				reordered[msgs[i].Body] = true
			}
			if r.Attempts > 1 {
				retried++
			}
		}
		got := f.drain(t)
		for g, bodies := range got {
			var want []string
			for _, m := range msgs {
				if m.GroupID == g {
					want = append(want, m.Body)
				}
			}
			sorted := slices.Sorted(slices.Values(bodies))
			if !slices.Equal(sorted, want) {
				t.Fatalf("group %s: expect each message once, got %v", g, bodies)
			}
			// bodies sort in send order: an inversion is a body delivered
			// after a later one; the earlier must say Reordered.
			for i, b := range bodies {
				for _, later := range bodies[i+1:] {
					if later < b && !reordered[later] {
						t.Errorf("group %s: %s delivered after %s without Reordered", g, later, b)
					}
				}
			}
		}
		if len(got) != groups {
			t.Errorf("expect %d groups on the queue, got %d", groups, len(got))
		}
		if rec.peak < 2 || len(rec.shared) > 0 {
			t.Errorf("expect calls in flight together with no group in two, got a peak of %d, shared %v", rec.peak, rec.shared)
		}
		if faults["lost"] == 0 || faults["entries"] == 0 || retried == 0 {
			t.Errorf("expect both kinds of fault and retries, got %v and %d retried", faults, retried)
		}
		t.Logf("%d calls, peak %d in flight, faults %v, %d messages retried, %d reordered", rec.calls, rec.peak, faults, retried, len(reordered))
	})
}

// A permanent failure in one group blocks only that group's later messages;
// a message that keeps failing and waits between retries holds back only
// its own group: every other group is on the queue before its second
// attempt. Before the pipeline, SendBatch slept through each retry with
// every group waiting behind it.
func TestSendBatchPermanentFailureBlocksOnlyItsGroupUnderConcurrency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newBubbleFixture(t, "q.fifo", nil)
		rec := newRecorder(f, 10*time.Millisecond)
		// 20 groups, 3 messages each, interleaved: a batch holds the three
		// messages of some groups, and several batches are in flight at
		// once. c-1 is refused; n-0 fails at once and on every retry; SQS
		// fails the later messages of their groups in their batch too.
		const refused, flaky = "c-1", "n-0"
		rec.failFrom = func(body string) *types.BatchResultErrorEntry {
			switch body {
			case refused:
				return &types.BatchResultErrorEntry{Code: aws.String("InvalidParameterValue"), SenderFault: true}
			case flaky:
				return &types.BatchResultErrorEntry{Code: aws.String("InternalError")}
			}
			return nil
		}
		s, err := fifo.NewSender(rec, f.url, func(o *fifo.SenderOptions) {
			o.SendBackoff = backoff.Constant{D: time.Second}
			o.SendMaxAttempts = 3
		})
		if err != nil {
			t.Fatal(err)
		}
		var msgs []fifo.Message
		for i := range 60 {
			g := string(rune('a' + i%20))
			msgs = append(msgs, fifo.Message{Body: fmt.Sprintf("%s-%d", g, i/20), GroupID: g})
		}
		results := s.SendBatch(context.Background(), msgs)
		index := map[string]int{}
		for i, m := range msgs {
			index[m.Body] = i
		}
		var entry *fifo.EntryError
		if r := results[index[refused]]; !errors.As(r.Err, &entry) || !entry.SenderFault {
			t.Fatalf("%s: expect a permanent EntryError, got %v", refused, r.Err)
		}
		if r := results[index[flaky]]; !errors.As(r.Err, &entry) || entry.SenderFault || r.Attempts != 3 {
			t.Fatalf("%s: expect a retryable EntryError after 3 attempts, got %+v", flaky, r)
		}
		for i, m := range msgs {
			var blocked *fifo.GroupBlockedError
			switch {
			case m.Body == refused || m.Body == flaky:
			case m.GroupID == "c" && m.Body > refused, m.GroupID == "n" && m.Body > flaky:
				failed := map[string]string{"c": refused, "n": flaky}[m.GroupID]
				if !errors.As(results[i].Err, &blocked) || blocked.GroupID != m.GroupID || blocked.Index != index[failed] {
					t.Errorf("%s: expect blocked by message %d, got %v", m.Body, index[failed], results[i].Err)
				}
			default:
				if results[i].Err != nil {
					t.Errorf("%s: expect sent, got %v", m.Body, results[i].Err)
				}
			}
		}
		got := f.drain(t)
		if strings.Join(got["c"], ",") != "c-0" || len(got["n"]) != 0 || len(got) != 20-1 {
			t.Errorf("expect c-0 alone of group c, nothing of group n and every other group, got %v, %v and %d groups", got["c"], got["n"], len(got))
		}
		// Every message of the other groups reached SQS before d-2's second
		// attempt: its waits held back nothing but its own group.
		var second time.Time
		attempts := 0
		for _, call := range rec.sends {
			if slices.Contains(call.bodies, flaky) {
				if attempts++; attempts == 2 {
					second = call.at
				}
			}
		}
		for _, call := range rec.sends {
			for _, b := range call.bodies {
				if b[0] != 'c' && b[0] != 'n' && call.at.After(second) {
					t.Errorf("%s was sent at %v, after %s's second attempt at %v", b, call.at, flaky, second)
				}
			}
		}
		if rec.peak < 2 || len(rec.shared) > 0 {
			t.Errorf("expect calls in flight together with no group in two, got a peak of %d, shared %v", rec.peak, rec.shared)
		}
	})
}

// A Batcher's message waiting to be retried holds back its own group only:
// a message of another group, sent in the same batch, is acknowledged, and
// that group's next message goes at once. Before the pipeline, the batch's
// goroutine slept through the retry with both groups held.
func TestBatcherRetryHoldsOnlyItsGroup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newBubbleFixture(t, "q.fifo", nil)
		rec := newRecorder(f, 10*time.Millisecond)
		rec.faultFor = func(call int, in *sqs.SendMessageBatchInput) *sqsfake.Fault {
			if i := entryIndex(in, "a1"); i >= 0 && call == 1 {
				return &sqsfake.Fault{Op: "SendMessageBatch", Entries: &sqsfake.EntryFault{Match: func(j int, _ string) bool { return j == i }}}
			}
			return nil
		}
		s, err := fifo.NewSender(rec, f.url, func(o *fifo.SenderOptions) { o.SendBackoff = backoff.Constant{D: time.Second} })
		if err != nil {
			t.Fatal(err)
		}
		b := newBatcher(t, s)
		defer b.Close(context.Background())
		type done struct {
			body string
			at   time.Time
			err  error
		}
		results := make(chan done, 3)
		send := func(body, group string) {
			_, err := b.Send(context.Background(), fifo.Message{Body: body, GroupID: group})
			results <- done{body, time.Now(), err}
		}
		go send("a1", "a")
		go send("b1", "b")
		first := <-results // b1: a1 waits a second to be retried
		go send("b2", "b")
		second, third := <-results, <-results
		if first.body != "b1" || second.body != "b2" || third.body != "a1" {
			t.Fatalf("expect b1, b2, then a1 after its retry; got %s, %s, %s", first.body, second.body, third.body)
		}
		for _, d := range []done{first, second, third} {
			if d.err != nil {
				t.Fatalf("%s: %v", d.body, d.err)
			}
		}
		if !second.at.Before(third.at) {
			t.Errorf("expect b2 acknowledged before a1's retry, got %v and %v", second.at, third.at)
		}
		if got := f.drain(t); fmt.Sprint(got["a"], got["b"]) != "[a1] [b1 b2]" {
			t.Errorf("expect a1 and b1, b2 on the queue, got %v", got)
		}
	})
}

// A message larger than MaxBatchBytes (but within MaxMessageBytes) goes in
// a batch of its own. Before, SendBatch spun forever forming empty batches,
// and the Batcher held the message until Close, which then never returned.
func TestMessageLargerThanMaxBatchBytesGoesAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newBubbleFixture(t, "q.fifo", nil)
		rec := newRecorder(f, 0)
		s, err := fifo.NewSender(rec, f.url, func(o *fifo.SenderOptions) { o.MaxBatchBytes = 64 })
		if err != nil {
			t.Fatal(err)
		}
		big := strings.Repeat("x", 100)
		msgs := []fifo.Message{{Body: "small-1", GroupID: "g"}, {Body: big, GroupID: "g"}, {Body: "small-2", GroupID: "g"}}
		for i, r := range s.SendBatch(context.Background(), msgs) {
			if r.Err != nil {
				t.Fatalf("message %d: %v", i, r.Err)
			}
		}
		b := newBatcher(t, s)
		if _, err := b.Send(context.Background(), fifo.Message{Body: big + "-batcher", GroupID: "g"}); err != nil {
			t.Fatal(err)
		}
		if err := b.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if rec.calls != 4 {
			t.Errorf("expect each message in a call of its own, got %d calls", rec.calls)
		}
		if got := f.drain(t); len(got["g"]) != 4 || got["g"][1] != big {
			t.Errorf("expect the four messages in order, got %d: %.20v", len(got["g"]), got["g"])
		}
	})
}

// When ctx ends with calls in flight, no call starts after it; messages not
// sent fail with ctx's error, those in flight with their call's failure
// joined with it, and SendBatch returns once the calls came back.
func TestSendBatchStopsAtContextEndWithCallsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newBubbleFixture(t, "q.fifo", nil)
		rec := newRecorder(f, 10*time.Millisecond)
		s, err := fifo.NewSender(rec, f.url, func(o *fifo.SenderOptions) { o.SendConcurrency = 4 })
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Millisecond)
		defer cancel()
		deadline, _ := ctx.Deadline()
		msgs := messages(200, 200)
		results := s.SendBatch(ctx, msgs)
		sent, failed := 0, 0
		for i, r := range results {
			switch {
			case r.Err == nil:
				sent++
			case errors.Is(r.Err, context.DeadlineExceeded):
				failed++
			default:
				t.Errorf("message %d: expect sent or the deadline, got %v", i, r.Err)
			}
		}
		// Four calls went at 0 ms and four at 10 ms; the second four were cut
		// by the deadline at 15 ms.
		if sent != 40 || failed != 160 || rec.calls != 8 {
			t.Errorf("expect 40 sent, 160 failed in 8 calls, got %d, %d in %d", sent, failed, rec.calls)
		}
		for _, call := range rec.sends {
			if call.at.After(deadline) {
				t.Errorf("expect no call after the deadline, got one at %v", call.at)
			}
		}
		if got := f.drain(t); len(got) != 40 {
			t.Errorf("expect the 40 sent messages' groups on the queue, got %d", len(got))
		}
	})
}
