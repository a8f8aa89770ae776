package fifo_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/fifo"
	"github.com/sqskit/sqskit/sqsfake"
)

func TestSendBatchKeepsGroupOrderAndBatchesFully(t *testing.T) {
	f := newFixture(t, "q.fifo", nil)
	msgs := messages(100, 7)
	results := f.sender(t).SendBatch(context.Background(), msgs)
	for i, r := range results {
		if r.Err != nil || r.MessageID == "" || r.SequenceNumber == "" || r.DeduplicationID == "" {
			t.Fatalf("message %d: %+v", i, r)
		}
	}
	if calls := f.srv.Calls().Op["SendMessageBatch"]; calls != 10 {
		t.Errorf("expect 10 batch calls for 100 messages, got %d", calls)
	}
	wantOrder(t, f.drain(t), msgs)
}

func TestSendBatchRetriesOnlyRetryableEntriesInOrder(t *testing.T) {
	f := newFixture(t, "q.fifo", nil)
	msgs := messages(30, 3)
	// The first call fails entries 3 and 7 (groups g0 and g1) as throttled;
	// the later entries of those groups in that batch fail too, as SQS may.
	f.srv.Inject(sqsfake.Fault{Op: "SendMessageBatch", Times: 1, Entries: &sqsfake.EntryFault{
		Code: "ThrottlingException", Match: func(i int, _ string) bool { return i == 3 || i == 6 || i == 9 || i == 7 },
	}})
	results := f.sender(t).SendBatch(context.Background(), msgs)
	for i, r := range results {
		if r.Err != nil {
			t.Fatalf("message %d: %v", i, r.Err)
		}
		if r.Reordered {
			t.Errorf("message %d: expect no reordering when later group entries failed too", i)
		}
	}
	wantOrder(t, f.drain(t), msgs)
}

// SQS may accept a later entry of a group while an earlier one fails. The
// failed one is still delivered (after it), and its result says so.
func TestSendBatchReportsReorderWhenSQSAcceptedLaterEntry(t *testing.T) {
	f := newFixture(t, "q.fifo", nil)
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
}

func TestSendBatchRetriesThrottledCalls(t *testing.T) {
	f := newFixture(t, "q.fifo", nil)
	msgs := messages(25, 4)
	throttle := f.srv.Inject(sqsfake.Fault{Op: "SendMessageBatch", Times: 3, Err: &types.RequestThrottled{Message: aws.String("slow down")}})
	start := f.clock.Now()
	results := f.sender(t).SendBatch(context.Background(), msgs)
	for i, r := range results {
		if r.Err != nil {
			t.Fatalf("message %d: %v", i, r.Err)
		}
	}
	if throttle.Fired() != 3 || f.clock.Now() == start {
		t.Errorf("expect 3 throttled calls with waits between, fired %d", throttle.Fired())
	}
	wantOrder(t, f.drain(t), msgs)
}

// A response lost after SQS stored the messages: the retry carries the same
// deduplication ids, so exactly one copy of each is delivered.
func TestLostResponseDeliversOneCopy(t *testing.T) {
	f := newFixture(t, "q.fifo", nil)
	s := f.sender(t)
	f.srv.Inject(sqsfake.Fault{Op: "SendMessage", Times: 1, AfterApply: true})
	if _, err := s.Send(context.Background(), fifo.Message{Body: "once", GroupID: "g"}); err != nil {
		t.Fatal(err)
	}
	f.srv.Inject(sqsfake.Fault{Op: "SendMessageBatch", Times: 1, AfterApply: true})
	msgs := messages(5, 1)
	for i, r := range s.SendBatch(context.Background(), msgs) {
		if r.Err != nil {
			t.Fatalf("message %d: %v", i, r.Err)
		}
	}
	got := f.drain(t)
	if strings.Join(got["g"], ",") != "once" || len(got["g0"]) != 5 {
		t.Fatalf("expect exactly one copy of each, got %v", got)
	}
	if calls := f.srv.Calls(); calls.Op["SendMessage"] != 2 || calls.Op["SendMessageBatch"] != 2 {
		t.Errorf("expect one retry each, got %v", calls.Op)
	}
}

func TestWindowExceeded(t *testing.T) {
	f := newFixture(t, "q.fifo", nil)
	f.srv.Inject(sqsfake.Fault{Op: "SendMessage", Err: &types.RequestThrottled{}})
	s := f.sender(t)
	start := f.clock.Now()
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
	if elapsed := f.clock.Now().Sub(start); elapsed >= 4*time.Minute+30*time.Second {
		t.Errorf("expect no attempt past the 4m30s window, last at %v", elapsed)
	}
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
		opts  func(*fifo.Options)
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
		{"too large with attributes", fifoQ, func(o *fifo.Options) { o.MaxMessageBytes = 1024 }, fifo.Message{Body: strings.Repeat("x", 1010), GroupID: "g",
			Attributes: map[string]types.MessageAttributeValue{"name": {DataType: aws.String("String"), StringValue: aws.String("value")}}}, "MessageBody"},
		{"eleven attributes", fifoQ, nil, fifo.Message{Body: "x", GroupID: "g", Attributes: many}, "MessageAttributes"},
		{"reserved attribute name", fifoQ, nil, fifo.Message{Body: "x", GroupID: "g", Attributes: map[string]types.MessageAttributeValue{"AWS.x": {DataType: aws.String("String"), StringValue: aws.String("v")}}}, "MessageAttributes"},
		{"bad attribute type", fifoQ, nil, fifo.Message{Body: "x", GroupID: "g", Attributes: map[string]types.MessageAttributeValue{"a": {DataType: aws.String("Text"), StringValue: aws.String("v")}}}, "MessageAttributes"},
		{"delay on FIFO", fifoQ, nil, fifo.Message{Body: "x", GroupID: "g", DelaySeconds: 5}, "DelaySeconds"},
		{"key dedup without key", fifoQ, func(o *fifo.Options) { o.Dedup = fifo.KeyDedup("orders") }, fifo.Message{Body: "x", GroupID: "g"}, "MessageDeduplicationId"},
		{"provided dedup without id", fifoQ, func(o *fifo.Options) { o.Dedup = fifo.ProvidedDedup() }, fifo.Message{Body: "x", GroupID: "g"}, "MessageDeduplicationId"},
		{"dedup id on standard", std, nil, fifo.Message{Body: "x", DeduplicationID: "d"}, "MessageDeduplicationId"},
		{"delay out of range", std, nil, fifo.Message{Body: "x", DelaySeconds: 901}, "DelaySeconds"},
	}
	for _, c := range cases {
		var fns []func(*fifo.Options)
		if c.opts != nil {
			fns = append(fns, c.opts)
		}
		s := c.f.sender(t, fns...)
		_, err := s.Send(context.Background(), c.msg)
		var v *fifo.ValidationError
		if !errors.As(err, &v) || !errors.Is(err, fifo.ErrInvalid) || v.Field != c.field {
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

func TestPermanentEntryFailureBlocksItsGroup(t *testing.T) {
	for _, cont := range []bool{false, true} {
		f := newFixture(t, "q.fifo", nil)
		msgs := []fifo.Message{{Body: "a1", GroupID: "a"}, {Body: "b1", GroupID: "b"}, {Body: "a2", GroupID: "a"}, {Body: "b2", GroupID: "b"}}
		f.srv.Inject(sqsfake.Fault{Op: "SendMessageBatch", Times: 1, Entries: &sqsfake.EntryFault{
			Code: "InvalidParameterValue", SenderFault: true, Match: func(i int, _ string) bool { return i == 0 },
		}})
		// a2 travels in the same batch; with the group blocked it must not be
		// sent in a later batch either, so force one entry per batch.
		results := f.sender(t, func(o *fifo.Options) { o.ContinueGroupAfterFailure = cont; o.MaxBatchBytes = 2 }).SendBatch(context.Background(), msgs)
		var entry *fifo.EntryError
		if !errors.As(results[0].Err, &entry) || !entry.SenderFault {
			t.Fatalf("continue=%v: expect a1 to fail with an EntryError, got %v", cont, results[0].Err)
		}
		var blocked *fifo.GroupBlockedError
		if cont {
			if results[2].Err != nil {
				t.Errorf("continue=true: expect a2 sent, got %v", results[2].Err)
			}
		} else if !errors.As(results[2].Err, &blocked) || blocked.GroupID != "a" {
			t.Errorf("continue=false: expect a2 blocked, got %v", results[2].Err)
		}
		if results[1].Err != nil || results[3].Err != nil {
			t.Errorf("expect group b unaffected, got %v and %v", results[1].Err, results[3].Err)
		}
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
	}
	if n := f.srv.Calls().Op["SendMessageBatch"]; n != 1 {
		t.Errorf("expect one call, got %d", n)
	}
}

func TestStandardQueueFairGroups(t *testing.T) {
	f := newFixture(t, "std", nil)
	s := f.sender(t, func(o *fifo.Options) { o.GroupID = func(m *fifo.Message) string { return "tenant-" + m.Body[:1] } })
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
	bad := []func(*fifo.Options){
		func(o *fifo.Options) { o.DedupWindow = 6 * time.Minute },
		func(o *fifo.Options) { o.DedupWindow = -1 },
		func(o *fifo.Options) { o.MaxBatchBytes = 1<<20 + 1 },
		func(o *fifo.Options) { o.MaxMessageBytes = -1 },
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
