package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/smithy-go"

	"github.com/sqskit/sqskit/sqsfake"
)

// taskHandles hides task handles and start times, so outputs compare across
// runs.
var taskHandles = regexp.MustCompile(`"taskHandle": "[^"]+"|Task handle: \S+|\S{20,}\s*$`)

// redriveDLQ is a DLQ of five messages from orders.
func redriveDLQ(t *testing.T) *dlqWorld {
	t.Helper()
	w := newDLQWorld(t, false)
	w.deadLetter(t, dlqMsg{body: "a"}, dlqMsg{body: "b"}, dlqMsg{body: "c"}, dlqMsg{body: "d"}, dlqMsg{body: "e"})
	return w
}

func TestRedriveStartWaitMovesEverythingBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := redriveDLQ(t)
		got := invoke(t, w.srv, "", "redrive", "start", "orders-dlq", "--rate", "2", "--wait", "--yes")
		if got.code != exitOK {
			t.Fatalf("expect exit 0, got %d: %s", got.code, got.stderr)
		}
		if !strings.Contains(got.stdout, "COMPLETED") || !strings.Contains(got.stdout, "2/s") {
			t.Errorf("expect a completed task at 2/s, got\n%s", got.stdout)
		}
		if n := len(w.bodiesIn(t, w.main)); n != 5 {
			t.Errorf("expect 5 messages back in orders, got %d", n)
		}
		if n := w.count(t, w.dlq); n != 0 {
			t.Errorf("expect the DLQ empty, got %d", n)
		}
	})
}

func TestRedriveStartWaitJSON(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := redriveDLQ(t)
		got := invoke(t, w.srv, "", "redrive", "start", "orders-dlq", "--to", "spare", "--wait", "--yes", "-o", "json")
		if got.code != exitOK {
			t.Fatalf("expect exit 0, got %d: %s", got.code, got.stderr)
		}
		v := replayDecodeAll(t, got.stdout)[0]
		if v["status"] != "COMPLETED" || v["moved"] != 5.0 || !strings.HasSuffix(v["destinationArn"].(string), ":spare") {
			t.Errorf("expect 5 moved to spare, got %v", v)
		}
		if n := len(w.bodiesIn(t, w.spare)); n != 5 {
			t.Errorf("expect 5 messages in spare, got %d", n)
		}
	})
}

func TestRedriveListAndCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := redriveDLQ(t)
		got := invoke(t, w.srv, "", "redrive", "list", "orders-dlq")
		if got.code != exitOK || !strings.Contains(got.stdout, "No move tasks for orders-dlq") {
			t.Fatalf("expect no tasks, got %d %q %q", got.code, got.stdout, got.stderr)
		}
		got = invoke(t, w.srv, "", "redrive", "start", "orders-dlq", "--rate", "1", "--yes", "-o", "json")
		if got.code != exitOK {
			t.Fatalf("start: exit %d: %s", got.code, got.stderr)
		}
		handle, _ := replayDecodeAll(t, got.stdout)[0]["taskHandle"].(string)
		if handle == "" {
			t.Fatalf("expect a task handle, got %s", got.stdout)
		}
		time.Sleep(2 * time.Second)
		got = invoke(t, w.srv, "", "redrive", "list", "orders-dlq", "-o", "json")
		dec := replayDecodeList(t, got.stdout)
		if len(dec) != 1 || dec[0]["status"] != "RUNNING" || dec[0]["taskHandle"] != handle || dec[0]["moved"] != 2.0 {
			t.Fatalf("expect one running task with 2 moved, got %v", dec)
		}
		table := invoke(t, w.srv, "", "redrive", "list", "orders-dlq")
		golden(t, "redrive-list", taskHandles.ReplaceAllString(strings.ReplaceAll(table.stdout, handle, "HANDLE"), "HANDLE"))

		before := w.srv.Calls()
		if got := invoke(t, w.srv, "", "redrive", "cancel", handle); got.code != exitNotConfirmed {
			t.Fatalf("expect cancel without --yes to exit %d, got %d", exitNotConfirmed, got.code)
		}
		if m := replayMutations(before, w.srv.Calls()); len(m) != 0 {
			t.Fatalf("expect no change without --yes, got %v", m)
		}
		got = invoke(t, w.srv, "yes\n", "redrive", "cancel", handle)
		if got.code != exitOK || !strings.Contains(got.stdout, "Cancelled; 2 messages had been moved") {
			t.Fatalf("expect the cancel confirmed at the terminal, got %d %q %q", got.code, got.stdout, got.stderr)
		}
		time.Sleep(5 * time.Second)
		if n := w.count(t, w.dlq); n != 3 {
			t.Errorf("expect 3 messages left in the DLQ after the cancel, got %d", n)
		}
		got = invoke(t, w.srv, "", "redrive", "cancel", handle, "--yes")
		if got.code != exitUsage {
			t.Errorf("expect cancelling a finished task to be a usage error, got %d %q", got.code, got.stderr)
		}
	})
}

func replayDecodeList(t *testing.T, s string) []map[string]any {
	t.Helper()
	var v []map[string]any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("output is not a JSON list: %v\n%s", err, s)
	}
	return v
}

func TestRedriveNeedsConfirmation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := redriveDLQ(t)
		before := w.srv.Calls()
		got := invoke(t, w.srv, "", "redrive", "start", "orders-dlq")
		if got.code != exitNotConfirmed || !strings.Contains(got.stderr, "not confirmed") {
			t.Fatalf("expect exit %d without --yes, got %d %q", exitNotConfirmed, got.code, got.stderr)
		}
		got = invoke(t, w.srv, "no\n", "redrive", "start", "orders-dlq")
		if got.code != exitNotConfirmed {
			t.Fatalf("expect exit %d when the person types no, got %d", exitNotConfirmed, got.code)
		}
		if m := replayMutations(before, w.srv.Calls()); len(m) != 0 {
			t.Fatalf("expect nothing changed, got %v", m)
		}
	})
}

func TestRedriveBadArgumentsChangeNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := redriveDLQ(t)
		before := w.srv.Calls()
		for _, args := range [][]string{
			{"redrive", "start"},
			{"redrive", "start", "orders-dlq", "extra"},
			{"redrive", "start", "orders-dlq", "--rate", "0", "--yes"},
			{"redrive", "start", "orders-dlq", "--rate", "501", "--yes"},
			{"redrive", "start", "orders-dlq", "--rate", "many", "--yes"},
			{"redrive", "start", "no-such-queue", "--yes"},
			{"redrive", "start", "https://sqs.us-east-1.amazonaws.com/123456789012/gone", "--yes"},
			{"redrive", "start", "orders-dlq", "--to", "orders-dlq", "--yes"},
			{"redrive", "start", "orders-dlq", "--to", "nowhere", "--yes"},
			{"redrive", "start", "spare", "--yes"}, // not a DLQ
			{"redrive", "list"},
			{"redrive", "list", "no-such-queue"},
			{"redrive", "cancel"},
			{"redrive", "cancel", " ", "--yes"},
			{"redrive", "bogus"},
		} {
			got := invoke(t, w.srv, "", args...)
			if got.code != exitUsage || got.stderr == "" {
				t.Errorf("sqskit %q: exit %d, stderr %q; want exit %d and a reason", args, got.code, got.stderr, exitUsage)
			}
		}
		if m := replayMutations(before, w.srv.Calls()); len(m) != 0 {
			t.Errorf("bad arguments changed queues: %v", m)
		}
	})
}

// An endpoint without move tasks (fauxqs answers InvalidAction) gets a
// clear message, not a raw API error.
func TestRedriveSaysWhenTheEndpointHasNoMoveTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := redriveDLQ(t)
		invalid := &smithy.GenericAPIError{Code: "InvalidAction", Message: "The action or operation requested is invalid.", Fault: smithy.FaultClient}
		for _, op := range []string{"StartMessageMoveTask", "ListMessageMoveTasks"} {
			w.srv.Inject(sqsfake.Fault{Op: op, Err: invalid})
		}
		for _, args := range [][]string{{"redrive", "start", "orders-dlq", "--yes"}, {"redrive", "list", "orders-dlq"}} {
			got := invoke(t, w.srv, "", args...)
			if got.code != exitFailed || !strings.Contains(got.stderr, "this endpoint has no message move tasks") {
				t.Errorf("sqskit %q: expect exit 1 and a clear message, got %d %q", args, got.code, got.stderr)
			}
		}
	})
}
