package handler

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
)

func sqsEvent(arn string, groupedBodies ...string) Event {
	var e Event
	for i, gb := range groupedBodies {
		group, body, _ := strings.Cut(gb, ":")
		r := events.SQSMessage{MessageId: fmt.Sprintf("id-%d", i), Body: body, EventSourceARN: arn, Attributes: map[string]string{"ApproximateReceiveCount": "1"}}
		if group != "" {
			r.Attributes["MessageGroupId"] = group
		}
		e.Records = append(e.Records, r)
	}
	return e
}

const (
	stdArn  = "arn:aws:sqs:us-east-1:123456789012:orders"
	fifoArn = "arn:aws:sqs:us-east-1:123456789012:orders.fifo"
)

func failing(bodies ...string) (Handler, *[]string) {
	var mu sync.Mutex
	var seen []string
	fail := map[string]bool{}
	for _, b := range bodies {
		fail[b] = true
	}
	return func(_ context.Context, m *Message) error {
		mu.Lock()
		seen = append(seen, m.Body)
		mu.Unlock()
		if fail[m.Body] {
			return errors.New("boom " + m.Body)
		}
		return nil
	}, &seen
}

func failedIDs(r events.SQSEventResponse) string {
	var ids []string
	for _, f := range r.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	return strings.Join(ids, ",")
}

func newLambda(t *testing.T, h Handler, fns ...func(*LambdaOptions)) *Lambda {
	t.Helper()
	l, err := NewLambda(h, fns...)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestLambdaReportsExactlyTheFailures(t *testing.T) {
	h, seen := failing("b", "d")
	resp, err := newLambda(t, h).Handle(context.Background(), sqsEvent(stdArn, ":a", ":b", ":c", ":d", ":e"))
	if err != nil {
		t.Fatal(err)
	}
	if got := failedIDs(resp); got != "id-1,id-3" {
		t.Fatalf("expect id-1,id-3, got %s", got)
	}
	if len(*seen) != 5 {
		t.Errorf("expect every message handled on a standard queue, got %v", *seen)
	}
	all, _ := newLambda(t, func(context.Context, *Message) error { return nil }).Handle(context.Background(), sqsEvent(stdArn, ":a"))
	if all.BatchItemFailures != nil {
		t.Errorf("expect no failures listed on success, got %v", all.BatchItemFailures)
	}
}

func TestLambdaResponseJSON(t *testing.T) {
	h, _ := failing("b")
	resp, _ := newLambda(t, h).Handle(context.Background(), sqsEvent(stdArn, ":a", ":b"))
	b, err := json.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"batchItemFailures":[{"itemIdentifier":"id-1"}]}` {
		t.Fatalf("unexpected JSON %s", b)
	}
}

func TestLambdaPanicIsThatMessagesFailure(t *testing.T) {
	var logs bytes.Buffer
	l := newLambda(t, func(_ context.Context, m *Message) error {
		if m.Body == "bad" {
			panic("nil map")
		}
		return nil
	}, func(o *LambdaOptions) { o.Logger = slog.New(slog.NewJSONHandler(&logs, nil)) })
	resp, err := l.Handle(context.Background(), sqsEvent(stdArn, ":ok", ":bad", ":ok2"))
	if err != nil || failedIDs(resp) != "id-1" {
		t.Fatalf("expect only the panicking message failed, got %v, %v", resp, err)
	}
	if !strings.Contains(logs.String(), "nil map") || !strings.Contains(logs.String(), "goroutine") {
		t.Errorf("expect the panic and its stack in the log, got %s", logs.String())
	}
	if strings.Contains(logs.String(), `"ok2"`) {
		t.Error("expect no bodies in the log")
	}
}

// nilDerefError is a typed nil a handler returns as its error: Error
// dereferences it.
type nilDerefError struct{ msg string }

func (e *nilDerefError) Error() string { return e.msg }

// A handler error the adapter cannot read (a typed nil whose Error panics)
// fails its message as a panic does, in the per-message and the batch
// adapter, and never crashes the invocation (logging it calls Error).
func TestLambdaBrokenErrorIsThatMessagesFailure(t *testing.T) {
	var failures []error
	hooks := func(o *LambdaOptions) {
		o.Logger = slog.New(slog.NewJSONHandler(io.Discard, nil))
		o.Hooks.Failed = func(_ context.Context, _ *Message, err error) { failures = append(failures, err) }
	}
	l := newLambda(t, func(_ context.Context, m *Message) error {
		if m.Body == "bad" {
			return (*nilDerefError)(nil)
		}
		return nil
	}, hooks)
	resp, err := l.Handle(context.Background(), sqsEvent(stdArn, ":ok", ":bad"))
	var p *PanicError
	if err != nil || failedIDs(resp) != "id-1" || len(failures) != 1 || !errors.As(failures[0], &p) {
		t.Fatalf("expect only the message with the broken error failed, as a panic, got %v, %v, %v", resp, err, failures)
	}
	failures = nil
	bl, err := NewBatchLambda(func(context.Context, []*Message) []error { return []error{nil, (*nilDerefError)(nil)} }, hooks)
	if err != nil {
		t.Fatal(err)
	}
	resp, err = bl.Handle(context.Background(), sqsEvent(stdArn, ":ok", ":bad"))
	if err != nil || failedIDs(resp) != "id-1" || len(failures) != 1 || !errors.As(failures[0], &p) {
		t.Fatalf("expect the batch's broken result failed as a panic, got %v, %v, %v", resp, err, failures)
	}
}

// A handler may write to every field of its Message: it gets its own copy,
// so the response names the messages by the ids Lambda sent (a rewritten ID
// never reports a failure Lambda does not know while the real message
// counts as done and is deleted), and FIFO order keys on the groups Lambda
// sent (a removed or forged MessageGroupId neither holds back another
// group nor leaves a group's next message waiting for the invocation's
// deadline). Each rewrite runs through every scenario.
func TestLambdaHandlerRewritingItsMessageChangesNothingReported(t *testing.T) {
	rewrites := map[string]func(*Message){
		"id and attributes removed": func(m *Message) { m.ID, m.Attributes = "rewritten", nil },
		"every field forged": func(m *Message) {
			m.ID, m.ReceiptHandle, m.Body = "forged", "forged", ""
			m.Attributes["MessageGroupId"] = "forged"
			m.Attributes["ApproximateReceiveCount"] = "999"
		},
	}
	scenarios := []struct {
		name   string
		batch  bool
		event  Event
		fail   string // the body whose message fails, read before the rewrite
		want   string
		expect string
	}{
		{"Lambda, FIFO, a failure in the second group", false, sqsEvent(fifoArn, "g:ok", "g:next", "h:bad", "h:after"), "bad", "id-2,id-3",
			"expect id-2 failed and id-3 behind it, group g done before the invocation ended"},
		{"Lambda, FIFO, a failure in the first group", false, sqsEvent(fifoArn, "g:first", "g:second", "h:other"), "first", "id-0,id-1",
			"expect the failed message and its group-mate reported"},
		{"batch Lambda, FIFO", true, sqsEvent(fifoArn, "g:bad", "g:held"), "bad", "id-0,id-1",
			"expect both reported by their ids, the second held back behind the first"},
		{"batch Lambda, standard", true, sqsEvent(stdArn, ":first", ":second"), "first", "id-0",
			"expect id-0 reported failed"},
	}
	for rname, rewrite := range rewrites {
		for _, sc := range scenarios {
			t.Run(rname+"/"+sc.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					var handle func(context.Context, Event) (events.SQSEventResponse, error)
					if sc.batch {
						l, err := NewBatchLambda(func(_ context.Context, msgs []*Message) []error {
							errs := make([]error, len(msgs))
							for i, m := range msgs {
								if m.Body == sc.fail {
									errs[i] = errors.New("failed")
								}
								rewrite(m)
							}
							return errs
						})
						if err != nil {
							t.Fatal(err)
						}
						handle = l.Handle
					} else {
						handle = newLambda(t, func(_ context.Context, m *Message) error {
							failed := m.Body == sc.fail
							rewrite(m)
							if failed {
								return errors.New("failed")
							}
							return nil
						}).Handle
					}
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					defer cancel()
					start := time.Now()
					resp, err := handle(ctx, sc.event)
					if err != nil {
						t.Fatal(err)
					}
					if ctx.Err() != nil || time.Since(start) != 0 {
						t.Fatalf("expect Handle to return at once, it waited %v, for the invocation's deadline", time.Since(start))
					}
					if got := failedIDs(resp); got != sc.want {
						t.Fatalf("%s (%s), got %s", sc.expect, sc.want, got)
					}
				})
			})
		}
	}
}

func TestLambdaFIFOStopsOnlyTheFailedGroup(t *testing.T) {
	h, seen := failing("a2")
	resp, err := newLambda(t, h).Handle(context.Background(), sqsEvent(fifoArn, "a:a1", "a:a2", "b:b1", "a:a3", "b:b2"))
	if err != nil {
		t.Fatal(err)
	}
	if got := failedIDs(resp); got != "id-1,id-3" {
		t.Fatalf("expect a2 and a3 reported, got %s", got)
	}
	if strings.Contains(strings.Join(*seen, ","), "a3") {
		t.Errorf("expect a3 never handled, handled %v", *seen)
	}
}

func TestLambdaFIFOStopOnFirstFailure(t *testing.T) {
	h, seen := failing("a2")
	l := newLambda(t, h, func(o *LambdaOptions) { o.StopOnFirstFailure = true })
	resp, _ := l.Handle(context.Background(), sqsEvent(fifoArn, "a:a1", "a:a2", "b:b1", "a:a3", "b:b2"))
	if got := failedIDs(resp); got != "id-1,id-2,id-3,id-4" {
		t.Fatalf("expect a2 and everything after it reported, got %s (handled %v)", got, *seen)
	}
}

// A group id on a standard queue is a fair-queue tenant: no ordering, no
// group stop.
func TestLambdaStandardQueueIgnoresGroups(t *testing.T) {
	h, seen := failing("a1")
	resp, _ := newLambda(t, h).Handle(context.Background(), sqsEvent(stdArn, "a:a1", "a:a2"))
	if got := failedIDs(resp); got != "id-0" || len(*seen) != 2 {
		t.Fatalf("expect only a1 failed and both handled, got %s, %v", got, *seen)
	}
}

func TestLambdaFIFOGroupsRunInParallelButEachInOrder(t *testing.T) {
	var running, maxRunning atomic.Int32
	var mu sync.Mutex
	perGroup := map[string][]string{}
	busy := map[string]bool{}
	h := func(_ context.Context, m *Message) error {
		mu.Lock()
		if busy[m.GroupID()] {
			mu.Unlock()
			return errors.New("two messages of one group at once")
		}
		busy[m.GroupID()] = true
		perGroup[m.GroupID()] = append(perGroup[m.GroupID()], m.Body)
		mu.Unlock()
		n := running.Add(1)
		for {
			old := maxRunning.Load()
			if n <= old || maxRunning.CompareAndSwap(old, n) {
				break
			}
		}
		time.Sleep(time.Millisecond)
		running.Add(-1)
		mu.Lock()
		busy[m.GroupID()] = false
		mu.Unlock()
		return nil
	}
	var bodies []string
	for i := range 40 {
		g := fmt.Sprintf("g%d", i%4)
		bodies = append(bodies, fmt.Sprintf("%s:%s-%02d", g, g, i))
	}
	synctest.Test(t, func(t *testing.T) {
		resp, err := newLambda(t, h, func(o *LambdaOptions) { o.Concurrency = 4 }).Handle(context.Background(), sqsEvent(fifoArn, bodies...))
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("expect all handled, got %v, %v", resp, err)
		}
	})
	for g, got := range perGroup {
		for i := 1; i < len(got); i++ {
			if got[i] < got[i-1] {
				t.Fatalf("group %s out of order: %v", g, got)
			}
		}
	}
	if maxRunning.Load() < 2 {
		t.Errorf("expect groups to run in parallel, max %d at once", maxRunning.Load())
	}
}

func TestLambdaDeadlineMargin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := func(context.Context, *Message) error { time.Sleep(2 * time.Second); return nil }
		l := newLambda(t, h, func(o *LambdaOptions) { o.DeadlineMargin = 3 * time.Second })
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := l.Handle(ctx, sqsEvent(stdArn, ":1", ":2", ":3", ":4", ":5"))
		if err != nil {
			t.Fatal(err)
		}
		// 1, 2, 3 start at 0, 2 and 4 s; at 6 s only 4 s remain, above the
		// 3 s margin, so 4 starts; at 8 s, 2 s remain: 5 does not.
		if got := failedIDs(resp); got != "id-4" {
			t.Fatalf("expect only the last message unstarted, got %s", got)
		}
	})
}

func TestLambdaConcurrentInvocations(t *testing.T) {
	h, _ := failing("x")
	l := newLambda(t, h, func(o *LambdaOptions) { o.Concurrency = 3 })
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := l.Handle(context.Background(), sqsEvent(fifoArn, "g:a", "g:x", "g:b", "h:c"))
			if err != nil || failedIDs(resp) != "id-1,id-2" {
				t.Errorf("invocation %d: %v, %v", i, failedIDs(resp), err)
			}
		}()
	}
	wg.Wait()
}

func TestLambdaMalformedEvents(t *testing.T) {
	l := newLambda(t, func(context.Context, *Message) error { return nil })
	resp, err := l.Handle(context.Background(), Event{})
	if err != nil || resp.BatchItemFailures != nil {
		t.Fatalf("expect an empty event to succeed, got %v, %v", resp, err)
	}
	bad := sqsEvent(stdArn, ":a", ":b")
	bad.Records[1].MessageId = ""
	var malformed *MalformedEventError
	if _, err := l.Handle(context.Background(), bad); !errors.As(err, &malformed) || malformed.Record != 1 {
		t.Fatalf("expect MalformedEventError for record 1, got %v", err)
	}
	h, seen := failing("a")
	dup := sqsEvent(stdArn, ":a", ":b")
	dup.Records[1].MessageId = dup.Records[0].MessageId
	resp, _ = newLambda(t, h).Handle(context.Background(), dup)
	if failedIDs(resp) != "id-0" || len(*seen) != 1 {
		t.Fatalf("expect a duplicate record handled and reported once, got %s, %v", failedIDs(resp), *seen)
	}
}

func TestLambdaFailWhenAllFail(t *testing.T) {
	h, _ := failing("a", "b")
	l := newLambda(t, h, func(o *LambdaOptions) { o.FailWhenAllFail = true })
	if _, err := l.Handle(context.Background(), sqsEvent(stdArn, ":a", ":b")); !errors.Is(err, ErrAllFailed) {
		t.Fatalf("expect ErrAllFailed, got %v", err)
	}
	if _, err := l.Handle(context.Background(), sqsEvent(stdArn, ":a", ":c")); err != nil {
		t.Fatalf("expect no error when some succeed, got %v", err)
	}
}

func TestLambdaOptions(t *testing.T) {
	for _, fn := range []func(*LambdaOptions){
		func(o *LambdaOptions) { o.Concurrency = -1 },
		func(o *LambdaOptions) { o.DeadlineMargin = -1 },
	} {
		if _, err := NewLambda(func(context.Context, *Message) error { return nil }, fn); !errors.Is(err, ErrConfig) {
			t.Errorf("expect ErrConfig, got %v", err)
		}
	}
	if _, err := NewLambda(nil); !errors.Is(err, ErrConfig) {
		t.Error("expect a nil handler to be refused")
	}
}

// A nil option function is skipped, never called: NewLambda and
// NewBatchLambda apply the options after it.
func TestLambdaNilOptionFuncIsSkipped(t *testing.T) {
	var unset func(*LambdaOptions)
	l, err := NewLambda(func(context.Context, *Message) error { return nil }, unset, func(o *LambdaOptions) { o.Concurrency = 3 })
	if err != nil || l.opts.Concurrency != 3 {
		t.Fatalf("expect the nil option skipped and the next applied, got %v", err)
	}
	if _, err := NewBatchLambda(func(context.Context, []*Message) []error { return nil }, unset); err != nil {
		t.Fatalf("expect the nil option skipped, got %v", err)
	}
}

func TestJSONHandler(t *testing.T) {
	type order struct{ ID int }
	var got order
	h := JSON(func(_ context.Context, o order, _ *Message) error { got = o; return nil })
	if err := h(context.Background(), &Message{Body: `{"ID":7}`}); err != nil || got.ID != 7 {
		t.Fatalf("expect the decoded body, got %v, %v", got, err)
	}
	if err := h(context.Background(), &Message{Body: `not json`}); err == nil {
		t.Fatal("expect a decode failure")
	}
}

func TestBatchLambda(t *testing.T) {
	l, err := NewBatchLambda(func(_ context.Context, msgs []*Message) []error {
		errs := make([]error, len(msgs)-1) // one short: the last gets no result
		errs[1] = errors.New("bad")
		return errs
	})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := l.Handle(context.Background(), sqsEvent(stdArn, ":a", ":b", ":c", ":d"))
	if err != nil || failedIDs(resp) != "id-1,id-3" {
		t.Fatalf("expect the failed and the unanswered message, got %s, %v", failedIDs(resp), err)
	}
	panicky, _ := NewBatchLambda(func(context.Context, []*Message) []error { panic("oops") })
	resp, err = panicky.Handle(context.Background(), sqsEvent(stdArn, ":a", ":b"))
	if err != nil || failedIDs(resp) != "id-0,id-1" {
		t.Fatalf("expect a panic to fail the batch's messages, got %s, %v", failedIDs(resp), err)
	}
	if _, err := NewBatchLambda(nil); !errors.Is(err, ErrConfig) {
		t.Fatal("expect a nil batch handler to be refused")
	}
}

// A handler that calls runtime.Goexit (t.FailNow does) fails its message,
// never reports it or the ones after it as done, and never hangs Handle:
// with one worker, a new worker handles the messages after it.
func TestLambdaHandlerGoexitFailsOnlyItsMessage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var handled []string
		l := newLambda(t, func(_ context.Context, m *Message) error {
			if m.Body == "b" {
				runtime.Goexit()
			}
			handled = append(handled, m.Body)
			return nil
		})
		resp, err := l.Handle(context.Background(), sqsEvent(stdArn, ":a", ":b", ":c"))
		if err != nil {
			t.Fatal(err)
		}
		if got := failedIDs(resp); got != "id-1" {
			t.Fatalf("expect only the exited message reported failed, got %q", got)
		}
		if !slices.Equal(handled, []string{"a", "c"}) {
			t.Fatalf("expect the messages after it handled by a new worker, got %v", handled)
		}
	})
}

// With several workers, each exit fails its message with ErrHandlerExited,
// and a FIFO message behind an exited one of its group is reported too.
func TestLambdaHandlerGoexitConcurrentFailsWithErrHandlerExited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var failures []error
		l := newLambda(t, func(_ context.Context, m *Message) error {
			if strings.HasPrefix(m.Body, "exit") {
				runtime.Goexit()
			}
			return nil
		}, func(o *LambdaOptions) {
			o.Concurrency = 2
			o.Hooks.Failed = func(_ context.Context, _ *Message, err error) { failures = append(failures, err) }
		})
		resp, err := l.Handle(context.Background(), sqsEvent(fifoArn, "a:exit-a", "a:a2", "b:exit-b", "c:c1"))
		if err != nil {
			t.Fatal(err)
		}
		if got := failedIDs(resp); got != "id-0,id-1,id-2" {
			t.Fatalf("expect both exits and the message behind one reported, got %q", got)
		}
		if len(failures) != 3 || !errors.Is(failures[0], ErrHandlerExited) {
			t.Fatalf("expect ErrHandlerExited, got %v", failures)
		}
	})
}

// A batch handler that calls runtime.Goexit fails its whole batch.
func TestBatchLambdaHandlerGoexitFailsTheBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, err := NewBatchLambda(func(context.Context, []*Message) []error { runtime.Goexit(); return nil })
		if err != nil {
			t.Fatal(err)
		}
		resp, err := l.Handle(context.Background(), sqsEvent(stdArn, ":a", ":b"))
		if err != nil || failedIDs(resp) != "id-0,id-1" {
			t.Fatalf("expect the whole batch reported failed, got %q, %v", failedIDs(resp), err)
		}
	})
}

// An invocation's event decodes in both shapes with the same response:
// the bare JSON array EventBridge Pipes passes and the event source
// mapping's object of Records; an event of neither shape is refused.
func TestLambdaAcceptsPipesArrayAndEventSourceMapping(t *testing.T) {
	h, seen := failing("b")
	l := newLambda(t, h)
	invoke := lambda.NewHandler(l.Handle)
	record := func(id, body string) map[string]any {
		return map[string]any{"messageId": id, "body": body, "eventSourceARN": stdArn, "attributes": map[string]string{"ApproximateReceiveCount": "1"}}
	}
	records := []map[string]any{record("m1", "a"), record("m2", "b")}
	for name, payload := range map[string]any{"pipes array": records, "event source mapping": map[string]any{"Records": records}} {
		t.Run(name, func(t *testing.T) {
			*seen = nil
			in, _ := json.Marshal(payload)
			out, err := invoke.Invoke(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != `{"batchItemFailures":[{"itemIdentifier":"m2"}]}` {
				t.Fatalf("unexpected response %s", out)
			}
			if len(*seen) != 2 {
				t.Fatalf("expect both records handled, got %v", *seen)
			}
		})
	}
	var e Event
	if err := json.Unmarshal([]byte(`{"Records": 5}`), &e); err == nil {
		t.Fatal("expect a malformed event refused")
	}
}

// Lambda with a handler that outlives the invocation: Handle returns when
// ctx ends and reports the unfinished messages, never as successes.
func TestLambdaReturnsWhenTheInvocationEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stuck := make(chan struct{})
		l := newLambda(t, func(_ context.Context, m *Message) error {
			if m.Body == "stuck" {
				<-stuck
			}
			return nil
		}, func(o *LambdaOptions) { o.Concurrency = 2 })
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := l.Handle(ctx, sqsEvent(stdArn, ":a", ":stuck", ":b"))
		if err != nil {
			t.Fatal(err)
		}
		if got := failedIDs(resp); got != "id-1" {
			t.Fatalf("expect the unfinished message reported, got %q", got)
		}
		close(stuck)
	})
}

// NewBatchLambda on a FIFO source: a message after a failure of its group
// is reported failed even if the handler said it was done.
func TestBatchLambdaFIFOHoldsBackAfterAFailure(t *testing.T) {
	l, err := NewBatchLambda(func(_ context.Context, msgs []*Message) []error {
		errs := make([]error, len(msgs))
		for i, m := range msgs {
			if m.Body == "a2" {
				errs[i] = errors.New("a2 fails")
			}
		}
		return errs
	})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := l.Handle(context.Background(), sqsEvent(fifoArn, "a:a1", "a:a2", "b:b1", "a:a3"))
	if err != nil || failedIDs(resp) != "id-1,id-3" {
		t.Fatalf("expect a2 and a3 reported, got %q, %v", failedIDs(resp), err)
	}
}
