package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqskit/sqskit/sqsfake"
)

// faultCase is a set of faults injected while a replay runs.
type faultCase struct {
	name   string
	faults func(w *dlqWorld) []sqsfake.Fault
	// lostSends: sends that took effect though the replay saw an error (a
	// standard target may receive those messages twice).
	lostSends bool
}

func replayFaultCases() []faultCase {
	return []faultCase{
		{name: "send fails once", faults: func(w *dlqWorld) []sqsfake.Fault {
			return []sqsfake.Fault{{Op: "SendMessageBatch", Times: 1}}
		}},
		{name: "send entries fail", faults: func(w *dlqWorld) []sqsfake.Fault {
			return []sqsfake.Fault{{Op: "SendMessageBatch", Times: 1, Entries: &sqsfake.EntryFault{Match: func(i int, _ string) bool { return i%2 == 0 }}}}
		}},
		{name: "send acknowledgement lost", lostSends: true, faults: func(w *dlqWorld) []sqsfake.Fault {
			return []sqsfake.Fault{{Op: "SendMessageBatch", Times: 1, AfterApply: true}}
		}},
		{name: "send throttled", faults: func(w *dlqWorld) []sqsfake.Fault {
			return []sqsfake.Fault{{Op: "SendMessageBatch", Times: 2, Err: sqsfake.ErrThrottled}}
		}},
		{name: "delete fails", faults: func(w *dlqWorld) []sqsfake.Fault {
			return []sqsfake.Fault{{Op: "DeleteMessageBatch", Times: 1}}
		}},
		{name: "delete acknowledgement lost", faults: func(w *dlqWorld) []sqsfake.Fault {
			return []sqsfake.Fault{{Op: "DeleteMessageBatch", Times: 1, AfterApply: true}}
		}},
		{name: "receive throttled", faults: func(w *dlqWorld) []sqsfake.Fault {
			return []sqsfake.Fault{{Op: "ReceiveMessage", Queue: w.dlqName, Times: 3, Err: sqsfake.ErrThrottled}}
		}},
		{name: "receive fails", faults: func(w *dlqWorld) []sqsfake.Fault {
			return []sqsfake.Fault{{Op: "ReceiveMessage", Queue: w.dlqName, Times: 2}}
		}},
		{name: "everything at once", lostSends: true, faults: func(w *dlqWorld) []sqsfake.Fault {
			return []sqsfake.Fault{
				{Op: "ReceiveMessage", Queue: w.dlqName, Times: 2, Err: sqsfake.ErrThrottled},
				{Op: "SendMessageBatch", Times: 1, AfterApply: true},
				{Op: "SendMessageBatch", Times: 1},
				{Op: "DeleteMessageBatch", Times: 1, AfterApply: true},
				{Op: "DeleteMessageBatch", Times: 1},
			}
		}},
	}
}

// seedGroups dead-letters groups × per messages, "g<i>-<n>".
func seedGroups(t *testing.T, w *dlqWorld, groups, per int) []string {
	t.Helper()
	var msgs []dlqMsg
	var all []string
	for n := range per {
		for g := range groups {
			body := fmt.Sprintf("g%d-%d", g, n)
			group := ""
			if w.fifo {
				group = fmt.Sprintf("g%d", g)
			}
			msgs = append(msgs, dlqMsg{body: body, group: group})
			all = append(all, body)
		}
	}
	w.deadLetter(t, msgs...)
	return all
}

// With faults on every call the replay makes: nothing is lost (every
// message is in the target or still in the DLQ), a FIFO target gets each
// message once and each group in order, a standard target at most one
// extra copy per lost send acknowledgement.
func TestReplayUnderFaultsLosesNothing(t *testing.T) {
	for _, fifo := range []bool{true, false} {
		for _, tc := range replayFaultCases() {
			t.Run(fmt.Sprintf("fifo=%v/%s", fifo, tc.name), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					w := newDLQWorld(t, fifo)
					all := seedGroups(t, w, 3, 3)
					var handles []*sqsfake.FaultHandle
					for _, f := range tc.faults(w) {
						handles = append(handles, w.srv.Inject(f))
					}
					got := invoke(t, w.srv, "", "replay", w.dlqName, "--all", "--yes", "-o", "json")
					if got.code != exitOK && got.code != exitFailed {
						t.Fatalf("expect exit 0 or 1, got %d: %s", got.code, got.stderr)
					}
					res := replayDecodeAll(t, got.stdout)[0]
					// Each fault is transient: the replay's later rounds move
					// everything.
					if got.code != exitOK || res["moved"] != float64(len(all)) {
						t.Errorf("expect exit 0 and all %d moved, got exit %d, %v (%s)", len(all), got.code, res, got.stderr)
					}
					for _, h := range handles {
						h.Remove()
					}
					fired, lostFired := 0, 0
					for i, h := range handles {
						fired += h.Fired()
						if f := tc.faults(w)[i]; f.AfterApply && f.Op == "SendMessageBatch" {
							lostFired += h.Fired()
						}
					}
					if fired == 0 {
						t.Fatalf("expect the faults to fire")
					}
					delivered := w.takeAll(t, w.main)
					left := bodies(w.takeAll(t, w.dlq))
					seen := map[string]int{}
					for _, b := range bodies(delivered) {
						seen[b]++
					}
					for _, b := range all {
						if seen[b] == 0 && !slices.Contains(left, b) {
							t.Errorf("lost %s: in neither the target nor the DLQ", b)
						}
					}
					extra := 0
					for b, n := range seen {
						if n > 1 {
							extra += n - 1
							if fifo || !tc.lostSends {
								t.Errorf("%s delivered %d times", b, n)
							}
						}
					}
					// A lost acknowledgement of a batch send duplicates at most
					// that batch: ten messages.
					if extra > 10*lostFired {
						t.Errorf("expect at most 10 duplicates per lost send acknowledgement (%d fired), got %d", lostFired, extra)
					}
					if res["moved"].(float64)+res["failed"].(float64) != float64(len(all)) {
						t.Errorf("expect moved + failed = %d, got %v", len(all), res)
					}
					if int(res["moved"].(float64)) != len(seen) {
						t.Errorf("expect moved %v to match the %d distinct messages in the target", res["moved"], len(seen))
					}
					if fifo {
						order := map[string][]string{}
						for _, m := range delivered {
							g := m.Attributes["MessageGroupId"]
							order[g] = append(order[g], aws.ToString(m.Body))
						}
						for g, bs := range order {
							if !slices.IsSorted(bs) {
								t.Errorf("group %s out of order at the target: %v", g, bs)
							}
						}
					}
				})
			})
		}
	}
}

// A send that always fails: the replay gives up after its rounds, exits 1,
// names each message not moved, and leaves every one in the DLQ, visible.
func TestReplayPersistentFailureKeepsEverything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newDLQWorld(t, true)
		all := seedGroups(t, w, 2, 2)
		w.srv.Inject(sqsfake.Fault{Op: "SendMessageBatch"})
		got := invoke(t, w.srv, "", "replay", w.dlqName, "--all", "--yes")
		if got.code != exitFailed {
			t.Fatalf("expect exit 1, got %d: %s", got.code, got.stderr)
		}
		golden(t, "replay-failed", w.normalize(got.stdout))
		if v := w.visible(t, w.dlq); v != len(all) {
			t.Errorf("expect all %d messages visible in the DLQ, got %d", len(all), v)
		}
	})
}

// A receive whose answer is lost leaves its messages in flight unseen: they
// are neither planned nor moved, and come back to the DLQ after the
// visibility timeout; nothing is lost.
func TestReplayLostReceiveAnswerLosesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newDLQWorld(t, false)
		all := seedGroups(t, w, 2, 2)
		w.srv.Inject(sqsfake.Fault{Op: "ReceiveMessage", Queue: w.dlqName, Times: 1, AfterApply: true})
		got := invoke(t, w.srv, "", "replay", w.dlqName, "--all", "--yes", "-o", "json")
		if got.code != exitOK {
			t.Fatalf("expect exit 0, got %d: %s", got.code, got.stderr)
		}
		res := replayDecodeAll(t, got.stdout)[0]
		time.Sleep(2 * time.Minute)
		moved, left := len(w.takeAll(t, w.main)), len(w.takeAll(t, w.dlq))
		if moved+left != len(all) || float64(moved) != res["moved"] {
			t.Fatalf("expect the %d messages in orders (%v reported moved) or back in the DLQ, got %d and %d", len(all), res["moved"], moved, left)
		}
	})
}

// A message SQS refuses as replayed (a sender fault on its entry) is not
// escalated anywhere: it stays in the DLQ, and the result says why.
func TestReplayRefusedMessageStays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newDLQWorld(t, false)
		seedGroups(t, w, 2, 1)
		w.srv.Inject(sqsfake.Fault{Op: "SendMessageBatch", Entries: &sqsfake.EntryFault{Code: "InvalidParameterValue", SenderFault: true,
			Match: func(i int, _ string) bool { return i == 0 }}})
		got := invoke(t, w.srv, "", "replay", w.dlqName, "--all", "--yes")
		if got.code != exitFailed || !strings.Contains(got.stdout, "SQS refused the replay (unsendable)") {
			t.Fatalf("expect exit 1 and the refusal named, got %d\n%s%s", got.code, got.stdout, got.stderr)
		}
		moved, left := w.takeAll(t, w.main), w.takeAll(t, w.dlq)
		if len(moved) != 1 || len(left) != 1 {
			t.Errorf("expect one moved and the refused one in the DLQ, got %v and %v", bodies(moved), bodies(left))
		}
	})
}

// Interrupted (Ctrl-C) while a send is under way: the command stops with
// an error, and every message is in the target or back in the DLQ, visible.
func TestReplayInterruptedLosesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newDLQWorld(t, true)
		all := seedGroups(t, w, 3, 2)
		w.srv.Inject(sqsfake.Fault{Op: "SendMessageBatch", Times: 1, Latency: 10 * time.Second})
		ctx, cancel := context.WithCancel(t.Context())
		go func() {
			time.Sleep(5 * time.Second)
			cancel()
		}()
		var out, errOut bytes.Buffer
		a := &app{
			term:      terminal{in: strings.NewReader(""), out: &out, err: &errOut},
			newClient: func(context.Context) (*sqs.Client, error) { return w.srv.Client(), nil },
		}
		code := runApp(ctx, []string{"replay", w.dlqName, "--all", "--yes"}, a)
		if code == exitOK {
			t.Fatalf("expect an interrupted replay to fail, got exit 0\n%s", out.String())
		}
		time.Sleep(2 * time.Minute) // anything left in flight comes back
		moved, left := w.takeAll(t, w.main), w.takeAll(t, w.dlq)
		seen := map[string]int{}
		for _, b := range append(bodies(moved), bodies(left)...) {
			seen[b]++
		}
		for _, b := range all {
			if seen[b] == 0 {
				t.Errorf("lost %s", b)
			}
		}
		for _, b := range bodies(moved) {
			if seen[b] > 1 {
				t.Errorf("%s is in both queues", b)
			}
		}
	})
}

// cancelInFlight is the network as Ctrl-C meets it: once armed (by the
// plan's release, the first ChangeMessageVisibilityBatch), the next
// ReceiveMessage that takes messages runs on the server, then the command's
// context is cancelled and the caller gets the cancellation, not the answer,
// as when a connection is dropped while the answer is on its way. The
// messages that receive took are in flight, and only the client can release
// them.
type cancelInFlight struct {
	next   sqs.HTTPClient
	cancel context.CancelFunc
	mu     sync.Mutex
	armed  bool
	fired  int
}

func (c *cancelInFlight) Do(req *http.Request) (*http.Response, error) {
	op := req.Header.Get("X-Amz-Target")
	resp, err := c.next.Do(req.WithContext(context.WithoutCancel(req.Context())))
	took := false
	if err == nil && strings.HasSuffix(op, ".ReceiveMessage") {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
		took = bytes.Contains(body, []byte("ReceiptHandle"))
	}
	c.mu.Lock()
	fire := c.armed && took
	if strings.HasSuffix(op, ".ChangeMessageVisibilityBatch") && c.fired == 0 {
		c.armed = true
	}
	if fire {
		c.armed = false
		c.fired++
	}
	c.mu.Unlock()
	if fire {
		c.cancel()
	}
	if err := req.Context().Err(); err != nil {
		if resp != nil {
			resp.Body.Close()
		}
		return nil, err
	}
	return resp, err
}

// Ctrl-C while a receive of the replay is under way: the messages that
// receive took are made visible again before the command exits, not left
// invisible for the replay's visibility timeout; nothing is lost or sent
// twice, and the exit code says the replay did not finish.
func TestReplayInterruptedReleasesWhatItReceived(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newDLQWorld(t, false)
		all := seedGroups(t, w, 1, 40)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		net := &cancelInFlight{cancel: cancel}
		client := w.srv.Client(func(o *sqs.Options) { net.next, o.HTTPClient = o.HTTPClient, net })
		var out, errOut bytes.Buffer
		a := &app{
			term:      terminal{in: strings.NewReader(""), out: &out, err: &errOut},
			newClient: func(context.Context) (*sqs.Client, error) { return client, nil },
		}
		code := runApp(ctx, []string{"replay", w.dlqName, "--all", "--yes"}, a)
		if net.fired != 1 {
			t.Fatalf("expect the interrupt to meet a receive once, got %d", net.fired)
		}
		if code != exitFailed {
			t.Errorf("expect exit 1 for an interrupted replay, got %d\n%s%s", code, out.String(), errOut.String())
		}
		moved := w.count(t, w.main)
		if visible := w.visible(t, w.dlq); moved+visible != len(all) {
			t.Errorf("expect each of the %d messages moved or visible in the DLQ at once, got %d moved and %d visible (the rest left invisible)", len(all), moved, visible)
		}
		if n := len(w.takeAll(t, w.main)) + len(w.takeAll(t, w.dlq)); n != len(all) {
			t.Errorf("expect %d messages in all, got %d", len(all), n)
		}
	})
}

// Ctrl-C while peek's receive is under way: what it took is made visible
// again before it exits.
func TestPeekInterruptedReleasesWhatItReceived(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newDLQWorld(t, false)
		all := seedGroups(t, w, 1, 5)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		net := &cancelInFlight{cancel: cancel, armed: true}
		client := w.srv.Client(func(o *sqs.Options) { net.next, o.HTTPClient = o.HTTPClient, net })
		var out, errOut bytes.Buffer
		a := &app{
			term:      terminal{in: strings.NewReader(""), out: &out, err: &errOut},
			newClient: func(context.Context) (*sqs.Client, error) { return client, nil },
			shortPoll: true,
		}
		code := runApp(ctx, []string{"peek", w.dlqName}, a)
		if net.fired != 1 || code != exitFailed {
			t.Fatalf("expect one interrupted receive and exit 1, got %d and exit %d", net.fired, code)
		}
		if v := w.visible(t, w.dlq); v != len(all) {
			t.Errorf("expect the %d messages visible again at once, got %d\n%s", len(all), v, errOut.String())
		}
	})
}
