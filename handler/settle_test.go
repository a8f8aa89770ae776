package handler

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// fakeParker records holds and parks; failWith fails every call.
type fakeParker struct {
	mu       sync.Mutex
	holds    map[string]time.Duration
	parked   map[string]string // body as received → reason
	failWith error
	panics   bool
}

func (p *fakeParker) Hold(_ context.Context, m *Message, d time.Duration) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.panics {
		panic("broken parker")
	}
	if p.failWith != nil {
		return p.failWith
	}
	if p.holds == nil {
		p.holds = map[string]time.Duration{}
	}
	p.holds[m.ID] = d
	return nil
}

func (p *fakeParker) Park(_ context.Context, m *Message, reason string, _ error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.panics {
		panic("broken parker")
	}
	if p.failWith != nil {
		return p.failWith
	}
	if p.parked == nil {
		p.parked = map[string]string{}
	}
	p.parked[m.Body] = reason
	return nil
}

// outcomes: "hold" holds a minute, "poison" escalates, "bad" fails; the
// handler rewrites every body it sees.
func outcomes(_ context.Context, m *Message) error {
	body := m.Body
	m.Body = "rewritten"
	switch body {
	case "hold":
		return Hold(time.Minute)
	case "poison":
		return Escalate("invalid-order", errors.New("no such customer"))
	case "bad":
		return errors.New("transient")
	}
	return nil
}

func TestLambdaHoldAndEscalateThroughTheParker(t *testing.T) {
	p := &fakeParker{}
	var held, parked, failed, handled int
	var mu sync.Mutex
	count := func(n *int) { mu.Lock(); *n++; mu.Unlock() }
	l := newLambda(t, outcomes, func(o *LambdaOptions) {
		o.Parker = p
		o.Concurrency = 4
		o.Hooks = Hooks{
			Handled: func(context.Context, *Message, time.Duration) { count(&handled) },
			Failed:  func(context.Context, *Message, error) { count(&failed) },
			Held:    func(context.Context, *Message, time.Duration) { count(&held) },
			Parked:  func(context.Context, *Message, string) { count(&parked) },
		}
	})
	resp, err := l.Handle(context.Background(), sqsEvent(stdArn, ":ok", ":hold", ":poison", ":bad"))
	if err != nil {
		t.Fatal(err)
	}
	// The held message stays (reported failed); the parked one is deleted.
	if got := failedIDs(resp); got != "id-1,id-3" {
		t.Fatalf("expect the held and the failed message reported, got %s", got)
	}
	if p.holds["id-1"] != time.Minute {
		t.Errorf("expect a one-minute hold through the Parker, got %v", p.holds)
	}
	if p.parked["poison"] != "invalid-order" || len(p.parked) != 1 {
		t.Errorf("expect the message parked as received with its reason, got %v", p.parked)
	}
	if handled != 1 || held != 1 || parked != 1 || failed != 1 {
		t.Errorf("expect one of each hook, got handled %d held %d parked %d failed %d", handled, held, parked, failed)
	}
}

func TestLambdaWithoutParkerHoldAndEscalateFail(t *testing.T) {
	resp, err := newLambda(t, outcomes).Handle(context.Background(), sqsEvent(stdArn, ":hold", ":poison"))
	if err != nil || failedIDs(resp) != "id-0,id-1" {
		t.Fatalf("expect both reported failed, got %s, %v", failedIDs(resp), err)
	}
}

func TestLambdaParkerFailureOrPanicIsAFailure(t *testing.T) {
	for _, p := range []*fakeParker{{failWith: errors.New("throttled")}, {panics: true}} {
		var errs []error
		var mu sync.Mutex
		l := newLambda(t, outcomes, func(o *LambdaOptions) {
			o.Parker = p
			o.Hooks.Failed = func(_ context.Context, _ *Message, err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() }
		})
		resp, err := l.Handle(context.Background(), sqsEvent(stdArn, ":hold", ":poison"))
		if err != nil || failedIDs(resp) != "id-0,id-1" {
			t.Fatalf("expect both reported failed, got %s, %v", failedIDs(resp), err)
		}
		if len(errs) != 2 {
			t.Fatalf("expect two Failed hooks, got %v", errs)
		}
	}
}

func TestBatchLambdaFIFOParkedHeadLetsItsGroupGoOn(t *testing.T) {
	p := &fakeParker{}
	l, err := NewBatchLambda(func(ctx context.Context, msgs []*Message) []error {
		errs := make([]error, len(msgs))
		for i, m := range msgs {
			errs[i] = outcomes(ctx, m)
		}
		return errs
	}, func(o *LambdaOptions) { o.Parker = p })
	if err != nil {
		t.Fatal(err)
	}
	// g: poison is parked, so ok behind it is deleted; h: hold keeps the
	// message, so ok behind it is held back.
	resp, err := l.Handle(context.Background(), sqsEvent(fifoArn, "g:poison", "g:ok", "h:hold", "h:ok"))
	if err != nil {
		t.Fatal(err)
	}
	if got := failedIDs(resp); got != "id-2,id-3" {
		t.Fatalf("expect only group h kept, got %s", got)
	}
	if p.parked["poison"] != "invalid-order" || p.holds["id-2"] != time.Minute {
		t.Fatalf("expect the park and the hold through the Parker, got %v %v", p.parked, p.holds)
	}
}
