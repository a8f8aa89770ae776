package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqskit/sqskit/sqsfake"
)

// The dry run (no --yes, no terminal) prints the plan, changes nothing but
// receive counts, leaves every message visible, and exits 3.
func TestReplayDryRunPrintsThePlanAndExitsThree(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := mixed(t, false)
		before := w.srv.Calls()
		got := invoke(t, w.srv, "", "replay", "orders-dlq", "--attr", "tenant=acme", "--older-than", "30m")
		if got.code != exitNotConfirmed || !strings.Contains(got.stderr, "not confirmed") {
			t.Fatalf("expect exit %d, got %d: %s", exitNotConfirmed, got.code, got.stderr)
		}
		golden(t, "replay-dry-run", w.normalize(got.stdout))
		m := replayMutations(before, w.srv.Calls())
		delete(m, "ReceiveMessage")
		delete(m, "ChangeMessageVisibilityBatch")
		if len(m) != 0 {
			t.Errorf("expect only receives and releases, got %v", m)
		}
		if v := w.visible(t, w.dlq); v != 6 {
			t.Errorf("expect all 6 messages visible again at once, got %d", v)
		}
		if n := w.count(t, w.main); n != 0 {
			t.Errorf("expect nothing moved, got %d in orders", n)
		}
	})
}

func TestReplayDryRunJSON(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := mixed(t, false)
		got := invoke(t, w.srv, "", "replay", "orders-dlq", "--body-regex", "^new-[0-9]", "--max", "3", "-o", "json")
		if got.code != exitNotConfirmed {
			t.Fatalf("expect exit %d, got %d: %s", exitNotConfirmed, got.code, got.stderr)
		}
		golden(t, "replay-dry-run-json", w.normalize(got.stdout))
		v := replayDecodeAll(t, got.stdout)[0]
		sel, _ := v["selected"].([]any)
		if v["mode"] != "DRY RUN" || len(sel) != 3 || v["overMax"] != 1.0 || v["notSelected"] != 2.0 || v["received"] != 6.0 {
			t.Fatalf("expect 3 selected, 1 over --max, 2 not selected, got %v", v)
		}
		first := sel[0].(map[string]any)
		if w.ids[first["id"].(string)] != "new-1" || first["target"] != "orders" {
			t.Errorf("expect new-1 first, to orders, got %v", first)
		}
	})
}

// At a terminal the plan is followed by a question: "yes" moves, anything
// else does not.
func TestReplayAsksAtATerminal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := mixed(t, false)
		got := invoke(t, w.srv, "no\n", "replay", "orders-dlq", "--body-contains", "refund")
		if got.code != exitNotConfirmed || w.count(t, w.main) != 0 {
			t.Fatalf("expect exit %d and nothing moved, got %d", exitNotConfirmed, got.code)
		}
		got = invoke(t, w.srv, "yes\n", "replay", "orders-dlq", "--body-contains", "refund")
		if got.code != exitOK {
			t.Fatalf("expect exit 0, got %d: %s", got.code, got.stderr)
		}
		if !strings.Contains(got.stdout, "DRY RUN") || !strings.Contains(got.stdout, "1 moved") {
			t.Errorf("expect the plan, then the result, got\n%s", got.stdout)
		}
		if b := w.bodiesIn(t, w.main); !slices.Equal(b, []string{"new-2 refund"}) {
			t.Errorf("expect the refund message in orders, got %v", b)
		}
		if n := w.count(t, w.dlq); n != 5 {
			t.Errorf("expect 5 left in the DLQ, got %d", n)
		}
	})
}

// With --yes the selected messages move, each reported with its target;
// the rest are visible again at once.
func TestReplayYesMovesTheSelection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := mixed(t, false)
		got := invoke(t, w.srv, "", "replay", "orders-dlq", "--attr", "tenant=acme", "--yes")
		if got.code != exitOK {
			t.Fatalf("expect exit 0, got %d: %s", got.code, got.stderr)
		}
		golden(t, "replay-moved", w.normalize(got.stdout))
		b := w.bodiesIn(t, w.main)
		slices.Sort(b)
		if !slices.Equal(b, []string{"new-1", "new-3", "old-1"}) {
			t.Errorf("expect the acme messages in orders, got %v", b)
		}
		if v := w.visible(t, w.dlq); v != 3 {
			t.Errorf("expect the 3 others visible in the DLQ at once, got %d", v)
		}
	})
}

func TestReplayYesJSON(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := mixed(t, false)
		got := invoke(t, w.srv, "", "replay", "orders-dlq", "--newer-than", "30m", "--to", "spare", "--yes", "-o", "json")
		if got.code != exitOK {
			t.Fatalf("expect exit 0, got %d: %s", got.code, got.stderr)
		}
		golden(t, "replay-moved-json", w.normalize(got.stdout))
		docs := replayDecodeAll(t, got.stdout)
		if len(docs) != 1 {
			t.Fatalf("expect one JSON document with --yes, got %d", len(docs))
		}
		v := docs[0]
		msgs, _ := v["messages"].([]any)
		if v["moved"] != 4.0 || v["failed"] != 0.0 || v["skipped"] != 2.0 || len(msgs) != 4 {
			t.Fatalf("expect 4 moved, 2 skipped, got %v", v)
		}
		for _, m := range msgs {
			if m.(map[string]any)["target"] != "spare" {
				t.Errorf("expect every message to spare, got %v", m)
			}
		}
		if n := w.count(t, w.spare); n != 4 {
			t.Errorf("expect 4 in spare, got %d", n)
		}
	})
}

// Every bad argument is a usage error (exit 2) before any call that
// changes a queue, receives included.
func TestReplayBadArgumentsChangeNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := mixed(t, false)
		before := w.srv.Calls()
		for _, args := range [][]string{
			{"replay"},
			{"replay", "orders-dlq", "extra", "--all"},
			{"replay", "orders-dlq"}, // no selection
			{"replay", "orders-dlq", "--all", "--reason", "x"},
			{"replay", "orders-dlq", "--older-than", "soon"},
			{"replay", "orders-dlq", "--older-than", "-1h"},
			{"replay", "orders-dlq", "--older-than", "2h", "--newer-than", "1h"},
			{"replay", "orders-dlq", "--all", "--max", "-1"},
			{"replay", "orders-dlq", "--attr", "tenant"},
			{"replay", "orders-dlq", "--attr", "=x"},
			{"replay", "orders-dlq", "--body-regex", "("},
			{"replay", "orders-dlq", "--id", " "},
			{"replay", "orders-dlq", "--all", "--sample", "3"},
			{"replay", "orders-dlq", "--all", "--rehearse", "--sample", "0"},
			{"replay", "orders-dlq", "--all", "--counter-attribute", "sqskit-replay"},
			{"replay", "orders-dlq", "--all", "--counter-attribute", "bad name!", "--yes"},
			{"replay", "orders-dlq", "--all", "--counter-attribute", "AWS.count", "--yes"},
			{"replay", "orders-dlq", "--all", "--to", "orders-dlq", "--yes"},
			{"replay", "orders-dlq", "--all", "--to", "https://sqs.us-east-1.amazonaws.com/123456789012/orders-dlq", "--yes"},
			{"replay", "orders-dlq", "--all", "--to", "nowhere", "--yes"},
			{"replay", "no-such-queue", "--all", "--yes"},
			{"replay", "https://sqs.us-east-1.amazonaws.com/123456789012/gone", "--all", "--yes"},
			{"replay", "orders", "--all", "--yes"}, // has a redrive policy: a receive would count toward it
		} {
			got := invoke(t, w.srv, "", args...)
			if got.code != exitUsage || got.stderr == "" {
				t.Errorf("sqskit %q: exit %d, stderr %q; want exit %d and a reason", args, got.code, got.stderr, exitUsage)
			}
		}
		if m := replayMutations(before, w.srv.Calls()); len(m) != 0 {
			t.Errorf("bad arguments changed queues: %v", m)
		}
		if v := w.visible(t, w.dlq); v != 6 {
			t.Errorf("expect the DLQ untouched, got %d visible", v)
		}
	})
}

// The counter goes on by default, and --reset-counter sends the messages
// without it.
func TestReplayKeepsOrResetsTheCounter(t *testing.T) {
	for _, tc := range []struct {
		flag string
		want string
	}{{"", "3"}, {"--reset-counter", ""}} {
		synctest.Test(t, func(t *testing.T) {
			w := mixed(t, false)
			args := []string{"replay", "orders-dlq", "--body-contains", "refund", "--yes"}
			if tc.flag != "" {
				args = append(args, tc.flag)
			}
			if got := invoke(t, w.srv, "", args...); got.code != exitOK {
				t.Fatalf("expect exit 0, got %d: %s", got.code, got.stderr)
			}
			got := w.takeAll(t, w.main)
			if len(got) != 1 {
				t.Fatalf("expect one message, got %d", len(got))
			}
			counter := ""
			if v, ok := got[0].MessageAttributes["sqs-dlq-replay-nb"]; ok {
				counter = *v.StringValue
			}
			if counter != tc.want || got[0].MessageAttributes["tenant"].StringValue == nil {
				t.Errorf("%q: expect counter %q and the tenant attribute, got %q, %v", tc.flag, tc.want, counter, got[0].MessageAttributes)
			}
		})
	}
}

// A selection that matches nothing says so and exits 0.
func TestReplayNothingSelected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := mixed(t, false)
		got := invoke(t, w.srv, "", "replay", "orders-dlq", "--id", "not-an-id")
		if got.code != exitOK || !strings.Contains(got.stdout, "0 selected to replay") {
			t.Fatalf("expect exit 0 and nothing selected, got %d %q %q", got.code, got.stdout, got.stderr)
		}
	})
}

// --id selects by MessageId, several times over.
func TestReplaySelectsByID(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := mixed(t, false)
		var pick []string
		for id, body := range w.ids {
			if body == "old-2" || body == "new-4" {
				pick = append(pick, "--id", id)
			}
		}
		got := invoke(t, w.srv, "", append([]string{"replay", "orders-dlq", "--yes"}, pick...)...)
		if got.code != exitOK {
			t.Fatalf("expect exit 0, got %d: %s", got.code, got.stderr)
		}
		b := w.bodiesIn(t, w.main)
		slices.Sort(b)
		if !slices.Equal(b, []string{"new-4", "old-2"}) {
			t.Errorf("expect old-2 and new-4 moved, got %v", b)
		}
	})
}

// At a terminal the replay draws its progress on standard error; the
// output for scripts stays clean.
func TestReplayDrawsProgressAtATerminal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := mixed(t, false)
		var out, errOut bytes.Buffer
		a := &app{
			term:      terminal{in: strings.NewReader(""), out: &out, err: &errOut, progressVisible: true},
			newClient: func(context.Context) (*sqs.Client, error) { return w.srv.Client(), nil },
		}
		if code := runApp(t.Context(), []string{"replay", "orders-dlq", "--all", "--yes"}, a); code != exitOK {
			t.Fatalf("expect exit 0, got %d: %s", code, errOut.String())
		}
		if !strings.Contains(errOut.String(), "replay [") || !strings.Contains(errOut.String(), "6/6") {
			t.Errorf("expect a progress bar to 6/6 on stderr, got %q", errOut.String())
		}
		if strings.Contains(out.String(), "\r") {
			t.Errorf("expect no progress in the output, got %q", out.String())
		}
	})
}

// With --yes, selected messages the replay cannot move (here: a standard
// DLQ's messages, which have no group, to a FIFO queue) and --id values
// that match no message are listed, and the replay exits 1: an operator
// who asked for them must not read "0 moved, 6 skipped", exit 0.
func TestReplayYesSaysWhatItCouldNotMove(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := mixed(t, false)
		w.create(t, "other.fifo", map[string]string{"FifoQueue": "true"})
		got := invoke(t, w.srv, "", "replay", "orders-dlq", "--all", "--to", "other.fifo", "--yes")
		if got.code != exitFailed || !strings.Contains(got.stdout, "needs a valid MessageGroupId") || !strings.Contains(got.stderr, "6 selected messages not replayable") {
			t.Errorf("expect exit 1 and each message's reason, got %d\nstdout:\n%s\nstderr:\n%s", got.code, got.stdout, got.stderr)
		}
		got = invoke(t, w.srv, "", "replay", "orders-dlq", "--all", "--to", "other.fifo", "--yes", "-o", "json")
		var res replayResult
		parseJSON(t, got.stdout, &res)
		if got.code != exitFailed || len(res.NotReplayable) != 6 || res.Moved != 0 {
			t.Errorf("expect exit 1 and 6 not replayable in the JSON, got %d: %+v", got.code, res)
		}
		if v := w.visible(t, w.dlq); v != 6 {
			t.Errorf("expect the 6 messages visible in the DLQ, got %d", v)
		}

		got = invoke(t, w.srv, "", "replay", "orders-dlq", "--id", "not-an-id", "--yes")
		if got.code != exitFailed || !strings.Contains(got.stdout, "not-an-id") || !strings.Contains(got.stderr, "not found") {
			t.Errorf("expect exit 1 naming the id not found, got %d\nstdout:\n%s\nstderr:\n%s", got.code, got.stdout, got.stderr)
		}
		got = invoke(t, w.srv, "", "replay", "orders-dlq", "--id", "not-an-id")
		if got.code != exitOK || !strings.Contains(got.stdout, "not-an-id") {
			t.Errorf("expect the dry run to name the id not found, exit 0, got %d\n%s", got.code, got.stdout)
		}
	})
}

// A dry run whose release fails does not claim the messages are visible
// again: the note says how many are held, and until when, so the operator
// does not run --yes into messages it cannot see.
func TestReplayDryRunSaysWhatItCouldNotRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := mixed(t, false)
		w.srv.Inject(sqsfake.Fault{Op: "ChangeMessageVisibilityBatch"})
		w.srv.Inject(sqsfake.Fault{Op: "ChangeMessageVisibility"})
		got := invoke(t, w.srv, "", "replay", "orders-dlq", "--all", "-o", "json")
		var plan struct {
			Mode string `json:"mode"`
			replayPlan
		}
		parseJSON(t, got.stdout, &plan)
		if plan.Received != 6 || plan.Released != 0 || strings.Contains(plan.Note, "are visible again") || !strings.Contains(plan.Note, "6 of the 6") {
			t.Errorf("expect 6 received, none released, and the note saying so, got %d, %d, %q", plan.Received, plan.Released, plan.Note)
		}
		time.Sleep(2 * time.Minute) // they come back
		got = invoke(t, w.srv, "", "replay", "orders-dlq", "--all")
		if !strings.Contains(got.stdout, "6 of the 6") {
			t.Errorf("expect the table to say 6 of the 6 are held, got\n%s", got.stdout)
		}
	})
}

// The same with --yes: the result's note says the messages are held, not
// visible again.
func TestReplayYesSaysWhatItCouldNotRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := mixed(t, false)
		w.srv.Inject(sqsfake.Fault{Op: "ChangeMessageVisibilityBatch"})
		w.srv.Inject(sqsfake.Fault{Op: "ChangeMessageVisibility"})
		got := invoke(t, w.srv, "", "replay", "orders-dlq", "--all", "--yes", "-o", "json")
		var res replayResult
		parseJSON(t, got.stdout, &res)
		if got.code != exitFailed || strings.Contains(res.Note, "are visible again") || !strings.Contains(res.Note, "could not be made visible again") {
			t.Errorf("expect exit 1 and the note saying the messages are held, got %d, %q", got.code, res.Note)
		}
	})
}
