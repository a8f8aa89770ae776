package main

import (
	"testing"
	"testing/synctest"
)

func TestReplaySmoke(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newDLQWorld(t, false)
		w.deadLetter(t, dlqMsg{body: "a"}, dlqMsg{body: "b"}, dlqMsg{body: "c"})
		got := invoke(t, w.srv, "", "replay", "orders-dlq", "--body-contains", "a")
		t.Logf("code %d\n%s\n%s", got.code, w.normalize(got.stdout), got.stderr)
		got = invoke(t, w.srv, "", "replay", "orders-dlq", "--all", "--yes")
		t.Logf("code %d\n%s\n%s", got.code, w.normalize(got.stdout), got.stderr)
		t.Logf("main %v dlq %v", w.bodiesIn(t, w.main), w.bodiesIn(t, w.dlq))
	})
}
