package handler

import (
	"context"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestLambdaTypedRoutedIdempotent runs the message features in the Lambda
// adapter: envelopes unwrapped, types routed, bad messages parked through
// the Parker and reported done, an SNS duplicate done without running, and
// the in-progress record bounded by the invocation's deadline.
func TestLambdaTypedRoutedIdempotent(t *testing.T) {
	var mu sync.Mutex
	var ran []string
	var leases []time.Time
	note := func(ctx context.Context, s string) {
		mu.Lock()
		defer mu.Unlock()
		ran = append(ran, s)
		if l := LeaseFrom(ctx); l != nil {
			leases = append(leases, l.Until())
		}
	}
	router, err := NewRouter(FirstType(TypeSubject(), TypeDetailType()),
		On("order.placed", func(ctx context.Context, o order, _ *Message) error { note(ctx, "placed "+o.ID); return nil }),
		On("order.cancelled", func(ctx context.Context, o order, _ *Message) error { note(ctx, "cancelled "+o.ID); return nil }),
	)
	if err != nil {
		t.Fatal(err)
	}
	idem, err := Idempotent(&MemoryStore{})
	if err != nil {
		t.Fatal(err)
	}
	p := &fakeParker{}
	l := newLambda(t, router, func(o *LambdaOptions) {
		o.Parker = p
		o.Middleware = []Middleware{Envelopes(), idem}
	})
	lost := strings.Replace(snsFixture, `"Subject" : "order.placed"`, `"Subject" : "order.lost"`, 1)
	lost = strings.Replace(lost, "22b80b92", "44da2d14", 1) // another notification
	undecodable := strings.Replace(snsFixture, `\"total\":3`, `\"total\":\"three\"`, 1)
	undecodable = strings.Replace(undecodable, "22b80b92", "33c91c03", 1) // another notification
	ev := sqsEvent(stdArn, ":"+snsFixture, ":"+eventBridgeFixture, ":"+snsFixture, ":"+lost, ":"+undecodable, `:{"Type":"Notification","TopicArn":"t"}`)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	deadline, _ := ctx.Deadline()
	resp, err := l.Handle(ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	if got := failedIDs(resp); got != "" {
		t.Errorf("expect nothing reported failed (parked ones are done), got %s", got)
	}
	sort.Strings(ran)
	if strings.Join(ran, ",") != "cancelled o-2,placed o-1" {
		t.Errorf("expect each order once, got %v", ran)
	}
	for _, u := range leases {
		if !u.Equal(deadline) {
			t.Errorf("expect the lease to be the invocation's deadline %v, got %v", deadline, u)
		}
	}
	reasons := map[string]int{}
	for _, r := range p.parked {
		reasons[r]++
	}
	if reasons[ReasonUnknownType] != 1 || reasons[ReasonDecode] != 1 || reasons[ReasonEnvelope] != 1 || len(p.parked) != 3 {
		t.Errorf("expect one park per reason, got %v", p.parked)
	}
	if _, ok := p.parked[lost]; !ok {
		t.Errorf("expect the message parked as received (wrapped), got %v", p.parked)
	}
}
