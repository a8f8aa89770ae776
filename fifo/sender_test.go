package fifo_test

import (
	"context"
	"errors"
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

func TestSendBatchKeepsGroupOrderAndBatchesFully(t *testing.T) {
	f := newFixture(t, "q.fifo", nil)
	msgs := messages(100, 7)
	results := f.sender(t).SendBatch(context.Background(), msgs)
	for i, r := range results {
		if r.Err != nil || r.MessageID == "" || r.SequenceNumber == "" || r.DeduplicationID == "" || r.Attempts != 1 || r.Unconfirmed != 0 {
			t.Fatalf("message %d: %+v", i, r)
		}
	}
	if calls := f.srv.Calls().Op["SendMessageBatch"]; calls != 10 {
		t.Errorf("expect 10 batch calls for 100 messages, got %d", calls)
	}
	wantOrder(t, f.drain(t), msgs)
}

func TestSendBatchRetriesOnlyRetryableEntriesInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newBubbleFixture(t, "q.fifo", nil)
		msgs := messages(30, 3)
		// The first calls with g0-03 and g1-07 fail them as throttled; the
		// later entries of those groups in those batches fail too, as SQS
		// may.
		rec := newRecorder(f, 0)
		var mu sync.Mutex
		failedOnce := map[string]bool{}
		rec.failFrom = func(body string) *types.BatchResultErrorEntry {
			mu.Lock()
			defer mu.Unlock()
			if (body == "g0-03" || body == "g1-07") && !failedOnce[body] {
				failedOnce[body] = true
				return &types.BatchResultErrorEntry{Code: aws.String("ThrottlingException")}
			}
			return nil
		}
		s, err := fifo.NewSender(rec, f.url)
		if err != nil {
			t.Fatal(err)
		}
		results := s.SendBatch(context.Background(), msgs)
		for i, r := range results {
			if r.Err != nil {
				t.Fatalf("message %d: %v", i, r.Err)
			}
			if r.Reordered {
				t.Errorf("message %d: expect no reordering when later group entries failed too", i)
			}
			if r.Unconfirmed != 0 {
				t.Errorf("message %d: expect entries SQS reported failed to count as not stored, got %d unconfirmed", i, r.Unconfirmed)
			}
		}
		if results[3].Attempts != 2 || results[0].Attempts != 1 {
			t.Errorf("expect 2 attempts for a retried entry and 1 for the others, got %d and %d", results[3].Attempts, results[0].Attempts)
		}
		wantOrder(t, f.drain(t), msgs)
	})
}

// SQS may accept a later entry of a group while an earlier one fails. The
// failed one is still delivered (after it), and its result says so.
func TestSendBatchReportsReorderWhenSQSAcceptedLaterEntry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newBubbleFixture(t, "q.fifo", nil)
		msgs := []fifo.Message{{Body: "a1", GroupID: "a"}, {Body: "a2", GroupID: "a"}, {Body: "b1", GroupID: "b"}}
		f.srv.Inject(sqsfake.Fault{Op: "SendMessageBatch", Times: 1, Entries: &sqsfake.EntryFault{
			Code: "InternalError", Match: func(i int, _ string) bool { return i == 0 },
		}})
		results := f.sender(t).SendBatch(context.Background(), msgs)
		if results[0].Err != nil || !results[0].Reordered || results[1].Reordered {
			t.Fatalf("expect a1 sent and marked reordered, got %+v", results)
		}
		got := f.drain(t)
		if strings.Join(got["a"], ",") != "a2,a1" || strings.Join(got["b"], ",") != "b1" {
			t.Fatalf("expect a2,a1 and b1 (nothing lost), got %v", got)
		}
	})
}

func TestSendBatchRetriesThrottledCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newBubbleFixture(t, "q.fifo", nil)
		msgs := messages(25, 4)
		// The first three calls that carry message 0 are throttled.
		throttle := f.srv.Inject(sqsfake.Fault{Op: "SendMessageBatch", Times: 3, Err: &types.RequestThrottled{Message: aws.String("slow down")},
			Match: func(_ string, in any) bool { return entryIndex(in.(*sqs.SendMessageBatchInput), msgs[0].Body) >= 0 }})
		start := time.Now()
		results := f.sender(t).SendBatch(context.Background(), msgs)
		for i, r := range results {
			if r.Err != nil {
				t.Fatalf("message %d: %v", i, r.Err)
			}
		}
		if throttle.Fired() != 3 || time.Since(start) == 0 {
			t.Errorf("expect 3 throttled calls with waits between, fired %d", throttle.Fired())
		}
		if results[0].Attempts != 4 || results[0].Unconfirmed != 0 {
			t.Errorf("expect 4 attempts and none unconfirmed (a throttled call stores nothing), got %+v", results[0])
		}
		wantOrder(t, f.drain(t), msgs)
	})
}

// A response lost after SQS stored the messages: the retry carries the same
// deduplication ids, so exactly one copy of each is delivered.
func TestLostResponseDeliversOneCopy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newBubbleFixture(t, "q.fifo", nil)
		s := f.sender(t)
		f.srv.Inject(sqsfake.Fault{Op: "SendMessage", Times: 1, AfterApply: true})
		res, err := s.Send(context.Background(), fifo.Message{Body: "once", GroupID: "g"})
		if err != nil || res.Attempts != 2 || res.Unconfirmed != 1 {
			t.Fatalf("expect success on attempt 2 after 1 unconfirmed, got %+v, %v", res, err)
		}
		f.srv.Inject(sqsfake.Fault{Op: "SendMessageBatch", Times: 1, AfterApply: true})
		msgs := messages(5, 1)
		for i, r := range s.SendBatch(context.Background(), msgs) {
			if r.Err != nil || r.Unconfirmed != 1 {
				t.Fatalf("message %d: %+v", i, r)
			}
		}
		got := f.drain(t)
		if strings.Join(got["g"], ",") != "once" || len(got["g0"]) != 5 {
			t.Fatalf("expect exactly one copy of each, got %v", got)
		}
		if calls := f.srv.Calls(); calls.Op["SendMessage"] != 2 || calls.Op["SendMessageBatch"] != 2 {
			t.Errorf("expect one retry each, got %v", calls.Op)
		}
	})
}

// On a standard queue every retry after a lost acknowledgement enqueues a
// copy, so the attempts are bounded (3 by default) and Unconfirmed tells the
// caller how many copies may exist; the queue holds exactly that many here,
// because sqsfake applies every attempt.
func TestStandardLostAcknowledgementsBoundedAndCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newBubbleFixture(t, "std", nil)
		s := f.sender(t)
		lost := f.srv.Inject(sqsfake.Fault{Op: "SendMessage", AfterApply: true}) // every acknowledgement lost
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		res, err := s.Send(ctx, fifo.Message{Body: "always-lost"})
		if err == nil || errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("expect the lost acknowledgement's error after the last attempt, got %v", err)
		}
		lost.Remove()
		f.srv.Inject(sqsfake.Fault{Op: "SendMessage", Times: 2, AfterApply: true})
		res2, err := s.Send(ctx, fifo.Message{Body: "twice-lost"})
		if err != nil {
			t.Fatal(err)
		}
		f.srv.Inject(sqsfake.Fault{Op: "SendMessageBatch", Times: 1, AfterApply: true})
		batch := s.SendBatch(ctx, []fifo.Message{{Body: "batch-1"}, {Body: "batch-2"}})

		copies := map[string]int{}
		for _, body := range f.drain(t)[""] {
			copies[body]++
		}
		if res.Attempts != 3 || res.Unconfirmed != 3 || copies["always-lost"] != 3 {
			t.Errorf("failed send: expect 3 attempts, 3 unconfirmed, 3 copies; got %d, %d, %d", res.Attempts, res.Unconfirmed, copies["always-lost"])
		}
		if res2.Attempts != 3 || res2.Unconfirmed != 2 || copies["twice-lost"] != 1+res2.Unconfirmed {
			t.Errorf("sent: expect 3 attempts, 2 unconfirmed, 3 copies; got %d, %d, %d", res2.Attempts, res2.Unconfirmed, copies["twice-lost"])
		}
		for i, r := range batch {
			body := []string{"batch-1", "batch-2"}[i]
			if r.Err != nil || r.Unconfirmed != 1 || copies[body] != 2 {
				t.Errorf("%s: expect sent with 1 unconfirmed and 2 copies, got %+v and %d copies", body, r, copies[body])
			}
		}
	})
}

// A persistent server error is retried SendMaxAttempts times (3 by default
// on a standard queue, 10 on FIFO), not until ctx ends: on a standard queue
// each attempt may leave a copy, and a caller with a long ctx would
// otherwise wait, and duplicate, without bound.
func TestPersistentServerErrorIsRetriedBoundedly(t *testing.T) {
	cases := []struct {
		queue string
		opts  func(*fifo.SenderOptions)
		fault error
		calls int
		// unconfirmed: a 5xx may have stored the message, a throttle did not
		unconfirmed int
	}{
		{"std", nil, nil, 3, 3},
		{"std", nil, &types.RequestThrottled{Message: aws.String("slow down")}, 3, 0},
		{"std", func(o *fifo.SenderOptions) { o.SendMaxAttempts = 5 }, nil, 5, 5},
		{"q.fifo", nil, nil, 10, 10},
		{"q.fifo", func(o *fifo.SenderOptions) { o.SendMaxAttempts = 1 }, nil, 1, 1},
	}
	for _, c := range cases {
		synctest.Test(t, func(t *testing.T) {
			f := newBubbleFixture(t, c.queue, nil)
			var fns []func(*fifo.SenderOptions)
			if c.opts != nil {
				fns = append(fns, c.opts)
			}
			s := f.sender(t, fns...)
			f.srv.Inject(sqsfake.Fault{Err: c.fault})
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			res, err := s.Send(ctx, fifo.Message{Body: "x", GroupID: "g"})
			if err == nil || errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("%s: expect the server's error, got %v", c.queue, err)
			}
			if n := f.srv.Calls().Op["SendMessage"]; n != c.calls || res.Attempts != c.calls || res.Unconfirmed != c.unconfirmed {
				t.Errorf("%s: expect %d calls and %d unconfirmed, got %d calls, %+v", c.queue, c.calls, c.unconfirmed, n, res)
			}
			f.srv.ClearFaults()
			f.srv.ResetCalls()
			if results := s.SendBatch(ctx, []fifo.Message{{Body: "y", GroupID: "g"}}); results[0].Err != nil {
				t.Fatalf("%s: expect a send without faults to succeed, got %v", c.queue, results[0].Err)
			}
			f.srv.Inject(sqsfake.Fault{Err: c.fault})
			results := s.SendBatch(ctx, []fifo.Message{{Body: "z", GroupID: "g"}})
			if n := f.srv.Calls().Op["SendMessageBatch"]; n != 1+c.calls || results[0].Err == nil {
				t.Errorf("%s: SendBatch: expect %d calls and an error, got %d calls, %+v", c.queue, c.calls, n-1, results[0])
			}
		})
	}
}

func TestWindowExceeded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newBubbleFixture(t, "q.fifo", nil)
		f.srv.Inject(sqsfake.Fault{Op: "SendMessage", Err: &types.RequestThrottled{}})
		s := f.sender(t, func(o *fifo.SenderOptions) { o.SendMaxAttempts = 1000 })
		start := time.Now()
		_, err := s.Send(context.Background(), fifo.Message{Body: "x", GroupID: "g", DeduplicationID: "d-1"})
		var w *fifo.WindowExceededError
		if !errors.As(err, &w) {
			t.Fatalf("expect WindowExceededError, got %v", err)
		}
		if w.DeduplicationID != "d-1" || !w.FirstAttempt.Equal(start) || !strings.Contains(err.Error(), "duplicated if sent again") {
			t.Errorf("unexpected error %+v", w)
		}
		var throttled *types.RequestThrottled
		if !errors.As(err, &throttled) {
			t.Error("expect the last failure to stay matchable")
		}
		if elapsed := time.Since(start); elapsed >= 4*time.Minute+30*time.Second || elapsed < 4*time.Minute {
			t.Errorf("expect retries until just before the 4m30s window, last at %v", elapsed)
		}
	})
}

func TestValidationErrorsBeforeAnyCall(t *testing.T) {
	fifoQ := newFixture(t, "q.fifo", nil)
	std := newFixture(t, "std", nil)
	many := map[string]types.MessageAttributeValue{}
	for _, n := range strings.Split("a b c d e f g h i j k", " ") {
		many[n] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("v")}
	}
	cases := []struct {
		name  string
		f     *fixture
		opts  func(*fifo.SenderOptions)
		msg   fifo.Message
		field string
	}{
		{"missing group", fifoQ, nil, fifo.Message{Body: "x"}, "MessageGroupId"},
		{"group with space", fifoQ, nil, fifo.Message{Body: "x", GroupID: "a b"}, "MessageGroupId"},
		{"group too long", fifoQ, nil, fifo.Message{Body: "x", GroupID: strings.Repeat("g", 129)}, "MessageGroupId"},
		{"dedup too long", fifoQ, nil, fifo.Message{Body: "x", GroupID: "g", DeduplicationID: strings.Repeat("d", 129)}, "MessageDeduplicationId"},
		{"dedup bad char", fifoQ, nil, fifo.Message{Body: "x", GroupID: "g", DeduplicationID: "é"}, "MessageDeduplicationId"},
		{"empty body", fifoQ, nil, fifo.Message{GroupID: "g"}, "MessageBody"},
		{"body characters", fifoQ, nil, fifo.Message{Body: "\x00", GroupID: "g"}, "MessageBody"},
		{"too large", fifoQ, nil, fifo.Message{Body: strings.Repeat("x", 1<<20+1), GroupID: "g"}, "MessageBody"},
		{"too large with attributes", fifoQ, func(o *fifo.SenderOptions) { o.MaxMessageBytes = 1024 }, fifo.Message{Body: strings.Repeat("x", 1010), GroupID: "g",
			Attributes: map[string]types.MessageAttributeValue{"name": {DataType: aws.String("String"), StringValue: aws.String("value")}}}, "MessageBody"},
		{"eleven attributes", fifoQ, nil, fifo.Message{Body: "x", GroupID: "g", Attributes: many}, "MessageAttributes"},
		{"reserved attribute name", fifoQ, nil, fifo.Message{Body: "x", GroupID: "g", Attributes: map[string]types.MessageAttributeValue{"AWS.x": {DataType: aws.String("String"), StringValue: aws.String("v")}}}, "MessageAttributes"},
		{"bad attribute type", fifoQ, nil, fifo.Message{Body: "x", GroupID: "g", Attributes: map[string]types.MessageAttributeValue{"a": {DataType: aws.String("Text"), StringValue: aws.String("v")}}}, "MessageAttributes"},
		{"delay on FIFO", fifoQ, nil, fifo.Message{Body: "x", GroupID: "g", DelaySeconds: 5}, "DelaySeconds"},
		{"key dedup without key", fifoQ, func(o *fifo.SenderOptions) { o.Dedup = fifo.KeyDedup("orders") }, fifo.Message{Body: "x", GroupID: "g"}, "MessageDeduplicationId"},
		{"provided dedup without id", fifoQ, func(o *fifo.SenderOptions) { o.Dedup = fifo.ProvidedDedup() }, fifo.Message{Body: "x", GroupID: "g"}, "MessageDeduplicationId"},
		{"dedup id on standard", std, nil, fifo.Message{Body: "x", DeduplicationID: "d"}, "MessageDeduplicationId"},
		{"delay out of range", std, nil, fifo.Message{Body: "x", DelaySeconds: 901}, "DelaySeconds"},
	}
	for _, c := range cases {
		var fns []func(*fifo.SenderOptions)
		if c.opts != nil {
			fns = append(fns, c.opts)
		}
		s := c.f.sender(t, fns...)
		res, err := s.Send(context.Background(), c.msg)
		var v *fifo.ValidationError
		if !errors.As(err, &v) || !errors.Is(err, fifo.ErrInvalid) || v.Field != c.field || res.Attempts != 0 {
			t.Errorf("%s: expect a ValidationError on %s, got %v", c.name, c.field, err)
		}
		results := s.SendBatch(context.Background(), []fifo.Message{c.msg})
		if !errors.As(results[0].Err, &v) {
			t.Errorf("%s: expect SendBatch to report the ValidationError, got %v", c.name, results[0].Err)
		}
	}
	if n := fifoQ.srv.Calls().Total() + std.srv.Calls().Total(); n != 0 {
		t.Errorf("expect no call to SQS, got %d", n)
	}
}

// The Dedup strategy's sentinel survives in the ValidationError's chain,
// beside ErrInvalid, so a caller can tell why the strategy refused a message
// (no key, no id, its own error) with errors.Is.
func TestDedupErrorsKeepTheirSentinel(t *testing.T) {
	f := newFixture(t, "q.fifo", nil)
	custom := errors.New("no order id")
	cases := []struct {
		dedup fifo.Dedup
		want  error
	}{
		{fifo.KeyDedup("orders"), fifo.ErrNoDedupKey},
		{fifo.ProvidedDedup(), fifo.ErrNoDedupID},
		{func(*fifo.Message, string) (string, error) { return "", custom }, custom},
	}
	for _, c := range cases {
		s := f.sender(t, func(o *fifo.SenderOptions) { o.Dedup = c.dedup })
		_, err := s.Send(context.Background(), fifo.Message{Body: "x", GroupID: "g"})
		if !errors.Is(err, c.want) || !errors.Is(err, fifo.ErrInvalid) {
			t.Errorf("Send: expect %v and ErrInvalid in the chain, got %v", c.want, err)
		}
		if r := s.SendBatch(context.Background(), []fifo.Message{{Body: "x", GroupID: "g"}}); !errors.Is(r[0].Err, c.want) {
			t.Errorf("SendBatch: expect %v in the chain, got %v", c.want, r[0].Err)
		}
	}
	if n := f.srv.Calls().Total(); n != 0 {
		t.Errorf("expect no call to SQS, got %d", n)
	}
}

// An invalid message in a FIFO batch blocks only the messages of its group
// that come after it, and their error names it; earlier messages of the
// group and other groups are sent. Sending the later ones would break the
// group's order; holding back the rest would fail messages that are fine.
func TestSendBatchInvalidMessageBlocksOnlyLaterMessages(t *testing.T) {
	f := newFixture(t, "q.fifo", nil)
	msgs := []fifo.Message{
		{Body: "a1", GroupID: "a"}, {Body: "b1", GroupID: "b"}, {Body: "a2", GroupID: "a"},
		{Body: "\x00", GroupID: "a"}, // invalid, index 3
		{Body: "a4", GroupID: "a"}, {Body: "b2", GroupID: "b"}, {Body: "a5", GroupID: "a"},
	}
	results := f.sender(t).SendBatch(context.Background(), msgs)
	for _, i := range []int{0, 1, 2, 5} {
		if results[i].Err != nil {
			t.Errorf("message %d (%s): expect sent, got %v", i, msgs[i].Body, results[i].Err)
		}
	}
	if !errors.Is(results[3].Err, fifo.ErrInvalid) {
		t.Errorf("expect message 3 invalid, got %v", results[3].Err)
	}
	for _, i := range []int{4, 6} {
		var blocked *fifo.GroupBlockedError
		var cause *fifo.ValidationError
		if !errors.As(results[i].Err, &blocked) || blocked.GroupID != "a" || blocked.Index != 3 ||
			!errors.As(blocked.Cause, &cause) || cause.Index != 3 || !strings.Contains(blocked.Error(), "message 3 of group \"a\"") {
			t.Errorf("message %d: expect blocked by message 3, got %v", i, results[i].Err)
		}
	}
	got := f.drain(t)
	if strings.Join(got["a"], ",") != "a1,a2" || strings.Join(got["b"], ",") != "b1,b2" {
		t.Errorf("expect a1,a2 and b1,b2 on the queue, got %v", got)
	}
}

func TestPermanentEntryFailureBlocksItsGroup(t *testing.T) {
	for _, cont := range []bool{false, true} {
		f := newFixture(t, "q.fifo", nil)
		msgs := []fifo.Message{{Body: "a1", GroupID: "a"}, {Body: "b1", GroupID: "b"}, {Body: "a2", GroupID: "a"}, {Body: "b2", GroupID: "b"}}
		f.srv.Inject(sqsfake.Fault{Op: "SendMessageBatch", Times: 1, Entries: &sqsfake.EntryFault{
			Code: "InvalidParameterValue", SenderFault: true, Match: func(i int, _ string) bool { return i == 0 },
		}})
		// a2 travels in the same batch; with the group blocked it must not be
		// sent in a later batch either, so force one entry per batch. The
		// fault fails the first call, so calls go one at a time here;
		// TestSendBatchPermanentFailureBlocksOnlyItsGroupUnderConcurrency
		// covers the same with calls in flight together.
		results := f.sender(t, func(o *fifo.SenderOptions) {
			o.ContinueGroupAfterFailure = cont
			o.MaxBatchBytes = 2
			o.SendConcurrency = 1
		}).SendBatch(context.Background(), msgs)
		var entry *fifo.EntryError
		if !errors.As(results[0].Err, &entry) || !entry.SenderFault {
			t.Fatalf("continue=%v: expect a1 to fail with an EntryError, got %v", cont, results[0].Err)
		}
		var blocked *fifo.GroupBlockedError
		if cont {
			if results[2].Err != nil {
				t.Errorf("continue=true: expect a2 sent, got %v", results[2].Err)
			}
		} else if !errors.As(results[2].Err, &blocked) || blocked.GroupID != "a" || blocked.Index != 0 || !errors.As(blocked.Cause, &entry) {
			t.Errorf("continue=false: expect a2 blocked by message 0, got %v", results[2].Err)
		}
		if results[1].Err != nil || results[3].Err != nil {
			t.Errorf("expect group b unaffected, got %v and %v", results[1].Err, results[3].Err)
		}
	}
}

// On a standard queue SQS keeps no order: a fair-queue tenant whose message
// failed is not blocked.
func TestStandardQueueDoesNotBlockTenants(t *testing.T) {
	f := newFixture(t, "std", nil)
	msgs := []fifo.Message{{Body: "t1", GroupID: "tenant"}, {Body: "\x00", GroupID: "tenant"}, {Body: "t3", GroupID: "tenant"}}
	results := f.sender(t).SendBatch(context.Background(), msgs)
	if results[0].Err != nil || !errors.Is(results[1].Err, fifo.ErrInvalid) || results[2].Err != nil {
		t.Fatalf("expect only the invalid message to fail, got %v, %v, %v", results[0].Err, results[1].Err, results[2].Err)
	}
}

func TestNonTransientCallErrorIsNotRetried(t *testing.T) {
	f := newFixture(t, "q.fifo", nil)
	s := f.sender(t)
	if _, err := f.client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(f.url)}); err != nil {
		t.Fatal(err)
	}
	results := s.SendBatch(context.Background(), messages(3, 1))
	var missing *types.QueueDoesNotExist
	for i, r := range results {
		if !errors.As(r.Err, &missing) && !errors.As(r.Err, new(*fifo.GroupBlockedError)) {
			t.Errorf("message %d: expect QueueDoesNotExist, got %v", i, r.Err)
		}
		if r.Unconfirmed != 0 {
			t.Errorf("message %d: expect a client error to count as not stored, got %d", i, r.Unconfirmed)
		}
	}
	if n := f.srv.Calls().Op["SendMessageBatch"]; n != 1 {
		t.Errorf("expect one call, got %d", n)
	}
}

func TestCancelledContextMakesNoCall(t *testing.T) {
	f := newFixture(t, "std", nil)
	s := f.sender(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := s.Send(ctx, fifo.Message{Body: "x"})
	results := s.SendBatch(ctx, []fifo.Message{{Body: "y"}})
	if !errors.Is(err, context.Canceled) || !errors.Is(results[0].Err, context.Canceled) || res.Attempts != 0 || results[0].Attempts != 0 {
		t.Fatalf("expect context.Canceled without an attempt, got %+v and %+v", res, results[0])
	}
	if n := f.srv.Calls().Total(); n != 0 {
		t.Errorf("expect no call, got %d", n)
	}
}

func TestStandardQueueFairGroups(t *testing.T) {
	f := newFixture(t, "std", nil)
	s := f.sender(t, func(o *fifo.SenderOptions) {
		o.GroupID = func(m *fifo.Message) string { return "tenant-" + m.Body[:1] }
	})
	res, err := s.Send(context.Background(), fifo.Message{Body: "a-order", DelaySeconds: 0})
	if err != nil || res.DeduplicationID != "" || res.SequenceNumber != "" {
		t.Fatalf("expect a plain send without dedup id, got %+v, %v", res, err)
	}
	got := f.drain(t)
	if len(got["tenant-a"]) != 1 {
		t.Fatalf("expect the tenant's group id on the message, got %v", got)
	}
}

func TestOptionsValidation(t *testing.T) {
	f := newFixture(t, "q.fifo", nil)
	bad := []func(*fifo.SenderOptions){
		func(o *fifo.SenderOptions) { o.DedupWindow = 6 * time.Minute },
		func(o *fifo.SenderOptions) { o.DedupWindow = -1 },
		func(o *fifo.SenderOptions) { o.MaxBatchBytes = 1<<20 + 1 },
		func(o *fifo.SenderOptions) { o.MaxMessageBytes = -1 },
		func(o *fifo.SenderOptions) { o.SendMaxAttempts = -1 },
		func(o *fifo.SenderOptions) { o.SendConcurrency = -1 },
		func(o *fifo.SenderOptions) { o.SendBackoff = backoff.FullJitter{Base: -time.Second} },
	}
	for i, fn := range bad {
		if _, err := fifo.NewSender(f.client, f.url, fn); !errors.Is(err, fifo.ErrConfig) {
			t.Errorf("case %d: expect ErrConfig, got %v", i, err)
		}
	}
	if _, err := fifo.NewSender(nil, f.url); !errors.Is(err, fifo.ErrConfig) {
		t.Error("expect a nil client to be refused")
	}
	if _, err := fifo.NewSender(f.client, ""); !errors.Is(err, fifo.ErrConfig) {
		t.Error("expect an empty queue URL to be refused")
	}
}

// A nil option function is skipped, as in every sqskit constructor: an
// option left unset by a condition must not panic.
func TestConstructorsSkipNilOptionFuncs(t *testing.T) {
	f := newFixture(t, "q.fifo", nil)
	s, err := fifo.NewSender(f.client, f.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.NewBatcher(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}
