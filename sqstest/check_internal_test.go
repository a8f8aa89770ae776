package sqstest

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// checkOne runs fn as a case under Check's recorder.
func checkOne(fn func(t caseT, e *env)) Result {
	e := &env{seq: new(atomic.Int64)}
	return checkCase(context.Background(), testCase{name: "x/y", test: fn}, e)
}

// Under Check, Fatal ends the case as under go test; the cleanups run last
// registered first, a failing or panicking cleanup leaves the others to run,
// and each message names the line of the case, past its helpers.
func TestCheckRecorderEndsTheCaseAndRunsCleanups(t *testing.T) {
	var order []string
	fatal := func(t caseT) {
		t.Helper()
		t.Fatalf("stop %d", 1)
	}
	r := checkOne(func(t caseT, e *env) {
		t.Cleanup(func() { order = append(order, "first") })
		t.Cleanup(func() { panic("cleanup panics") })
		t.Cleanup(func() { order = append(order, "second") })
		t.Errorf("goes on")
		fatal(t) // the line the message names
		order = append(order, "after Fatal")
	})
	if want := []string{"second", "first"}; !slices.Equal(want, order) {
		t.Errorf("expect %q, got %q", want, order)
	}
	equal(t, "verdict", Failed, r.Verdict)
	lines := strings.Split(r.Reason, "\n")
	equal(t, "first message", "check_internal_test.go:30: goes on", lines[0])
	equal(t, "second message", "check_internal_test.go:31: stop 1", lines[1])
	if !strings.Contains(r.Reason, "panic: cleanup panics") {
		t.Errorf("expect the cleanup's panic in the reason, got %q", r.Reason)
	}
}

func TestCheckRecorderVerdicts(t *testing.T) {
	equal(t, "a case that returns", Passed, checkOne(func(t caseT, e *env) { t.Logf("not kept") }).Verdict)
	r := checkOne(func(t caseT, e *env) { panic("boom") })
	equal(t, "a panicking case", Failed, r.Verdict)
	if !strings.HasPrefix(r.Reason, "panic: boom\n") || !strings.Contains(r.Reason, "check_internal_test.go") {
		t.Errorf("expect the panic and its stack, got %q", r.Reason)
	}
	r = checkOne(func(t caseT, e *env) { t.Fatal("a", 1) })
	equal(t, "Fatal's message", "check_internal_test.go:53: a 1", r.Reason)
}
