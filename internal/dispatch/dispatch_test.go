package dispatch

import (
	"context"
	"errors"
	"slices"
	"testing"
)

type msg struct{ id, group string }

func (m *msg) GroupID() string { return m.group }

func TestHoldBackRule(t *testing.T) {
	msgs := []*msg{{"1", "a"}, {"2", "b"}, {"3", "a"}, {"4", "b"}}
	boom, held := errors.New("boom"), errors.New("held")
	for _, tc := range []struct {
		stopAll bool
		want    []bool // failed
	}{{false, []bool{true, false, true, false}}, {true, []bool{true, true, true, true}}} {
		errs := []error{boom, nil, nil, nil}
		HoldBack(msgs, errs, tc.stopAll, held)
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
	a1, a2, a3, b1 := &msg{"a1", "a"}, &msg{"a2", "a"}, &msg{"a3", "a"}, &msg{"b1", "b"}
	s := NewSequencer[*msg](true, false)
	var started []string
	for _, m := range []*msg{a1, a2, b1, a3} {
		if s.Admit(m) {
			started = append(started, m.id)
		}
	}
	if !slices.Equal(started, []string{"a1", "b1"}) {
		t.Fatalf("expect one message per group to start, got %v", started)
	}
	next, givenUp := s.Done(a1, false)
	if len(next) != 1 || next[0] != a2 || givenUp != nil {
		t.Fatalf("expect a2 next, got %v, %v", next, givenUp)
	}
	next, givenUp = s.Done(a2, true)
	if next != nil || len(givenUp) != 1 || givenUp[0] != a3 {
		t.Fatalf("expect a3 given up after a2 failed, got %v, %v", next, givenUp)
	}
	if s.Admit(&msg{"a4", "a"}) != true {
		t.Fatal("expect a new message of a finished group to start")
	}
	if std := NewSequencer[*msg](false, false); !std.Admit(a1) || !std.Admit(a2) {
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
