package dispatch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

type msg struct{ id, group string }

func TestHoldBackRule(t *testing.T) {
	msgs := []*msg{{"1", "a"}, {"2", "b"}, {"3", "a"}, {"4", "b"}}
	boom, held := errors.New("boom"), errors.New("held")
	for _, tc := range []struct {
		stopAll bool
		want    []bool // failed
	}{{false, []bool{true, false, true, false}}, {true, []bool{true, true, true, true}}} {
		errs := []error{boom, nil, nil, nil}
		HoldBack(errs, func(i int) string { return msgs[i].group }, tc.stopAll, held)
		var got []bool
		for _, err := range errs {
			got = append(got, err != nil)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("stopAll %v: expect %v, got %v", tc.stopAll, tc.want, got)
		}
		if errs[2] != held {
			t.Errorf("expect the held-back error, got %v", errs[2])
		}
	}
}

func TestSequencerFIFO(t *testing.T) {
	s := NewSequencer(true, false)
	var started []string
	for _, m := range []msg{{"a1", "a"}, {"a2", "a"}, {"b1", "b"}, {"a3", "a"}} {
		if s.Admit(m.id, m.group) {
			started = append(started, m.id)
		}
	}
	if !slices.Equal(started, []string{"a1", "b1"}) {
		t.Fatalf("expect one message per group to start, got %v", started)
	}
	next, givenUp := s.Done("a", false)
	if next != "a2" || givenUp != nil {
		t.Fatalf("expect a2 next, got %q, %v", next, givenUp)
	}
	next, givenUp = s.Done("a", true)
	if next != "" || !slices.Equal(givenUp, []string{"a3"}) {
		t.Fatalf("expect a3 given up after a2 failed, got %q, %v", next, givenUp)
	}
	if !s.Admit("a4", "a") {
		t.Fatal("expect a new message of a finished group to start")
	}
	if got := s.AdmitAll([]string{"a5", "c1", "c2"}, []string{"a", "c", "c"}); !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("expect a unit to take group c whole and leave a behind a4, got %v", got)
	}
	if got := s.Drain(); !slices.Equal(got, []string{"a5"}) {
		t.Fatalf("expect the waiting a5 drained, got %v", got)
	}
	if std := NewSequencer(false, false); !std.Admit("a1", "a") || !std.Admit("a2", "a") {
		t.Fatal("expect every message to start on a standard queue")
	}
}

func TestInvokeTurnsPanicIntoFailure(t *testing.T) {
	err := Invoke(context.Background(), func(context.Context, *msg) error { panic("boom") }, &msg{}, func(v any, stack []byte) error {
		if len(stack) == 0 {
			t.Error("expect a stack")
		}
		return errors.New(v.(string))
	})
	if err == nil || err.Error() != "boom" {
		t.Fatalf("expect the panic as the error, got %v", err)
	}
	noResult := errors.New("no result")
	errs := InvokeBatch(context.Background(), func(context.Context, []*msg) []error { return []error{nil} }, []*msg{{}, {}}, nil, noResult)
	if errs[0] != nil || errs[1] != noResult {
		t.Fatalf("expect a missing result to fail its message, got %v", errs)
	}
}

type derefError struct{ msg string }

func (e *derefError) Error() string { return e.msg }

type isError struct{ target error }

func (e *isError) Error() string        { return "is" }
func (e *isError) Is(target error) bool { return e.target == target }

type asError struct{ n int }

func (e *asError) Error() string { return "as" }
func (e *asError) As(any) bool   { return e.n > 0 }

// An error whose methods panic (a typed nil) is turned into a panic's
// failure; a readable one, typed nil or not, is returned as it is.
func TestInvokeTurnsAnUnreadableErrorIntoAPanic(t *testing.T) {
	panicked := func(v any, _ []byte) error { return fmt.Errorf("panic: %v", v) }
	err := Invoke(context.Background(), func(context.Context, *msg) error { return (*derefError)(nil) }, &msg{}, panicked)
	if err == nil || !strings.Contains(err.Error(), "*dispatch.derefError") {
		t.Fatalf("expect a panic's failure naming the type, got %v", err)
	}
	errs := InvokeBatch(context.Background(), func(context.Context, []*msg) []error { return []error{nil, (*derefError)(nil)} }, []*msg{{}, {}}, panicked, nil)
	if errs[0] != nil || errs[1] == nil || !strings.HasPrefix(errs[1].Error(), "panic:") {
		t.Fatalf("expect the broken result alone turned into a panic's failure, got %v", errs)
	}
	for _, broken := range []error{(*isError)(nil), fmt.Errorf("wrapped: %w", (*asError)(nil))} {
		if err := Invoke(context.Background(), func(context.Context, *msg) error { return broken }, &msg{}, panicked); err == nil || !strings.HasPrefix(err.Error(), "panic:") {
			t.Fatalf("expect an error whose Is or As panics turned into a panic's failure, got %v", err)
		}
	}
	fine := &derefError{msg: "fine"}
	if err := Invoke(context.Background(), func(context.Context, *msg) error { return fine }, &msg{}, panicked); err != fine {
		t.Fatalf("expect a readable error returned as it is, got %v", err)
	}
}
