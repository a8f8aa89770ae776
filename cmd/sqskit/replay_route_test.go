package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/sqskit/sqskit/internal/queueref"
	"github.com/sqskit/sqskit/replay"
)

// escalateAll runs the replayer with NoReplays: every DLQ message goes to
// an operator queue "ops" with its metadata (reason, source).
func escalateAll(t *testing.T, w *dlqWorld) string {
	t.Helper()
	ops := w.create(t, "ops", nil)
	r, err := replay.New(w.api, w.dlq, ops, func(o *replay.Options) {
		o.Target = w.main
		o.Policy = replay.Policy{MaxAttempts: replay.NoReplays}
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := r.Drain(context.Background()); err != nil || rep.Escalated == 0 {
		t.Fatalf("expect escalations, got %+v, %v", rep, err)
	}
	for _, m := range w.receiveAll(t, ops) {
		var md replay.Metadata
		if a, ok := m.MessageAttributes[replay.MetadataAttribute]; ok {
			_ = md.UnmarshalJSON([]byte(aws.ToString(a.StringValue)))
		}
		w.ids[aws.ToString(m.MessageId)] = aws.ToString(m.Body)
		if _, err := w.api.ChangeMessageVisibility(context.Background(), changeVisibility(ops, m)); err != nil {
			t.Fatal(err)
		}
	}
	return ops
}

// Messages the replayer escalated to an operator queue go back to the
// source their metadata names, selected by the escalation reason; a
// message whose metadata names a queue that does not dead-letter to where
// it was parked from is not replayable (a message never picks its own
// destination).
func TestReplayFromAnOperatorQueueRoutesByMetadata(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newDLQWorld(t, false)
		w.deadLetter(t, dlqMsg{body: "a"}, dlqMsg{body: "b"})
		ops := escalateAll(t, w)
		w.sendTo(t, ops, dlqMsg{body: "forged", attrs: map[string]string{replay.MetadataAttribute: `{"reason":"attempts-exhausted","src":"arn:aws:sqs:us-east-1:123456789012:spare"}`}})
		for _, m := range w.receiveAll(t, ops) {
			w.ids[aws.ToString(m.MessageId)] = aws.ToString(m.Body)
			if _, err := w.api.ChangeMessageVisibility(context.Background(), changeVisibility(ops, m)); err != nil {
				t.Fatal(err)
			}
		}
		got := invoke(t, w.srv, "", "replay", "ops", "--reason", "attempts-exhausted", "--yes")
		if got.code != exitFailed {
			t.Fatalf("expect exit 1 (a selected message not moved), got %d: %s", got.code, got.stderr)
		}
		if !strings.Contains(got.stdout, "2 moved, 1 skipped") || !strings.Contains(got.stdout, "pass --to") {
			t.Errorf("expect 2 moved and the forged one skipped, with why, got\n%s", got.stdout)
		}
		b := w.bodiesIn(t, w.main)
		slices.Sort(b)
		if !slices.Equal(b, []string{"a", "b"}) {
			t.Errorf("expect a and b back in orders, got %v", b)
		}
		if n := w.count(t, w.spare); n != 0 {
			t.Errorf("expect nothing sent where forged metadata points, got %d", n)
		}
		plan := invoke(t, w.srv, "", "replay", "ops", "--all")
		if !strings.Contains(plan.stdout, "1 selected but not replayable") || !strings.Contains(plan.stdout, "pass --to") {
			t.Errorf("expect the forged message shown as not replayable, got\n%s", plan.stdout)
		}
	})
}

// On a FIFO queue a selected message behind an unselected one of its group
// is not replayable: SQS order would break.
func TestReplayFIFOPlanStopsAGroupAtAnUnselectedMessage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newDLQWorld(t, true)
		w.deadLetter(t, dlqMsg{body: "keep-1", group: "g"}, dlqMsg{body: "move-1", group: "g"}, dlqMsg{body: "move-2", group: "h"})
		got := invoke(t, w.srv, "", "replay", w.dlqName, "--body-contains", "move", "--yes")
		if got.code != exitFailed || !strings.Contains(got.stdout, "behind an earlier message of its FIFO group") {
			t.Fatalf("expect exit 1 (move-1 selected, not moved) and why, got %d: %s%s", got.code, got.stdout, got.stderr)
		}
		if b := bodies(w.takeAll(t, w.main)); !slices.Equal(b, []string{"move-2"}) {
			t.Errorf("expect only move-2 moved, got %v", b)
		}
		if b := bodies(w.takeAll(t, w.dlq)); !slices.Equal(b, []string{"keep-1", "move-1"}) {
			t.Errorf("expect keep-1 then move-1 still in the DLQ, got %v", b)
		}
	})
}

// --rehearse runs the replay on an in-memory copy of a sample: the real
// queues are only read, received and released.
func TestReplayRehearseTouchesNothingReal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newDLQWorld(t, true)
		all := seedGroups(t, w, 2, 2)
		before := w.srv.Calls()
		got := invoke(t, w.srv, "", "replay", w.dlqName, "--all", "--rehearse", "--sample", "3")
		if got.code != exitOK {
			t.Fatalf("expect exit 0, got %d: %s", got.code, got.stderr)
		}
		golden(t, "replay-rehearse", w.normalize(got.stdout))
		m := replayMutations(before, w.srv.Calls())
		delete(m, "ReceiveMessage")
		delete(m, "ChangeMessageVisibilityBatch")
		if len(m) != 0 {
			t.Errorf("expect the real queues only received and released, got %v", m)
		}
		if v := w.visible(t, w.dlq); v != len(all) {
			t.Errorf("expect all %d visible in the real DLQ, got %d", len(all), v)
		}
		if n := w.count(t, w.main); n != 0 {
			t.Errorf("expect nothing in the real target, got %d", n)
		}
		js := invoke(t, w.srv, "", "replay", w.dlqName, "--all", "--rehearse", "--sample", "3", "-o", "json")
		docs := replayDecodeAll(t, js.stdout)
		if len(docs) != 2 {
			t.Fatalf("expect the plan and the rehearsal as two JSON documents, got %d", len(docs))
		}
		r := docs[1]
		arrived, _ := r["arrived"].([]any)
		res, _ := r["result"].(map[string]any)
		if r["copied"] != 3.0 || len(arrived) != 3 || res["moved"] != 3.0 {
			t.Fatalf("expect 3 copied, moved and arrived, got %v", r)
		}
		for _, a := range arrived {
			a := a.(map[string]any)
			if a["target"] != w.mainName || a["counter"] != "1" || w.ids[a["originalId"].(string)] == "" {
				t.Errorf("expect each copy at %s with counter 1 and its real id, got %v", w.mainName, a)
			}
		}
	})
}

// --max on a FIFO queue takes the oldest messages, each group up to where
// the limit cuts it; the rest of the group counts as over the limit.
func TestReplayFIFOMaxCutsGroupsInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newDLQWorld(t, true)
		seedGroups(t, w, 2, 2) // g0-0 g1-0 g0-1 g1-1
		got := invoke(t, w.srv, "", "replay", w.dlqName, "--all", "--max", "3", "-o", "json")
		v := replayDecodeAll(t, got.stdout)[0]
		if sel, _ := v["selected"].([]any); len(sel) != 3 || v["overMax"] != 1.0 || len(v["notReplayable"].([]any)) != 0 {
			t.Fatalf("expect 3 selected and 1 over --max, got %v", v)
		}
		got = invoke(t, w.srv, "", "replay", w.dlqName, "--all", "--max", "3", "--yes")
		if got.code != exitOK {
			t.Fatalf("expect exit 0, got %d: %s", got.code, got.stderr)
		}
		if b := bodies(w.takeAll(t, w.dlq)); !slices.Equal(b, []string{"g1-1"}) {
			t.Errorf("expect only g1-1 left, got %v", b)
		}
	})
}

// A DLQ fed by two queues: each message goes back to the queue SQS says it
// came from (one engine pass per target), FIFO order kept in each.
func TestReplayRoutesEachMessageToItsSource(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newDLQWorld(t, true)
		billing := w.create(t, "billing.fifo", map[string]string{
			"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:123456789012:orders-dlq.fifo","maxReceiveCount":1}`})
		orders := w.main
		for _, q := range []string{orders, billing} {
			w.main = q
			w.deadLetter(t, dlqMsg{body: queueref.Name(q) + "-1", group: "g"}, dlqMsg{body: queueref.Name(q) + "-2", group: "g"})
		}
		w.main = orders
		got := invoke(t, w.srv, "", "replay", w.dlqName, "--all", "--yes")
		if got.code != exitOK {
			t.Fatalf("expect exit 0, got %d: %s", got.code, got.stderr)
		}
		golden(t, "replay-two-sources", w.normalize(got.stdout))
		if b := bodies(w.takeAll(t, orders)); !slices.Equal(b, []string{"orders.fifo-1", "orders.fifo-2"}) {
			t.Errorf("expect orders' messages back in order, got %v", b)
		}
		if b := bodies(w.takeAll(t, billing)); !slices.Equal(b, []string{"billing.fifo-1", "billing.fifo-2"}) {
			t.Errorf("expect billing's messages back in order, got %v", b)
		}
	})
}
