package throttle_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/internal/throttle"
	"github.com/sqskit/sqskit/sqsfake"
)

// Until a call is throttled the window grows by one per call (doubling
// per round trip) to its max; a throttle halves it and pauses new calls,
// once per round trip; then it grows by Increase per round trip.
func TestWindowHalvesOncePerRoundTripAndGrowsBackSlowly(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w := throttle.NewWindow(1, 24, 1)
	for range 7 {
		w.Grow()
	}
	if w.Limit() != 8 || w.Throttled() {
		t.Fatalf("expect 8 after seven calls, never throttled, got %d", w.Limit())
	}
	var tickets []uint64
	for range 8 {
		tickets = append(tickets, w.Start())
	}
	if !w.Cut(tickets[3], now) || w.Limit() != 4 || !w.Throttled() {
		t.Fatalf("expect a throttle to halve 8 to 4, got %d", w.Limit())
	}
	if d := w.Paused(now.Add(5 * time.Millisecond)); d != throttle.Pause-5*time.Millisecond {
		t.Errorf("expect new calls paused for %v after a throttle, got %v left after 5 ms", throttle.Pause, d)
	}
	if w.Paused(now.Add(throttle.Pause)) != 0 {
		t.Error("expect the pause over after Pause")
	}
	// The other calls sent through the wider window come back throttled
	// too: old news.
	for _, ticket := range tickets[4:] {
		if w.Cut(ticket, now) {
			t.Fatalf("expect a call started before the cut not to cut again, got %d", w.Limit())
		}
	}
	// A call started after the cut that is throttled cuts again.
	if !w.Cut(w.Start(), now) || w.Limit() != 2 {
		t.Fatalf("expect 4 halved to 2 by a call sent after the cut, got %d", w.Limit())
	}
	// Back up by Increase per round trip: a round trip is Limit calls.
	calls := 0
	for w.Limit() < 3 {
		w.Grow()
		calls++
	}
	if lo, hi := int(2/throttle.Increase), int(3/throttle.Increase); calls < lo || calls > hi {
		t.Errorf("expect %v round trips of 2 to 3 calls (%d to %d calls) to grow from 2 to 3, got %d", 1/throttle.Increase, lo, hi, calls)
	}
	w.Shrink()
	w.Shrink()
	w.Shrink()
	if w.Limit() != 1 {
		t.Errorf("expect the floor, 1, got %d", w.Limit())
	}
}

// Carry hands a throttled window's size to the next run, and a window
// never throttled starts at its max.
func TestWindowCarry(t *testing.T) {
	var zero throttle.Window
	if n := zero.Carry(1, 10); n.Limit() != 10 || n.Throttled() {
		t.Errorf("expect a fresh window at its max, got %d", n.Limit())
	}
	w := throttle.NewWindow(1, 10, 10)
	w.Cut(w.Start(), time.Now())
	n := w.Carry(1, 8)
	if n.Limit() != 5 || !n.Throttled() {
		t.Errorf("expect 5, still growing slowly, got %d", n.Limit())
	}
	if n := w.Carry(1, 3); n.Limit() != 3 {
		t.Errorf("expect the new max, 3, got %d", n.Limit())
	}
}

// With SDKOption the SDK's standard retryer gives a throttled call back at
// once, and still retries a server error.
func TestSDKOptionLeavesThrottlesToTheCaller(t *testing.T) {
	ctx := context.Background()
	srv := sqsfake.New()
	client := srv.Client(func(o *sqs.Options) {
		o.Retryer = retry.NewStandard(func(o *retry.StandardOptions) {
			o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
		})
	})
	q, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("q")})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		err      error
		requests int
	}{
		{"throttled", &types.RequestThrottled{Message: aws.String("slow down")}, 1},
		{"ThrottlingException", sqsfake.ErrThrottled, 1},
		{"server error", sqsfake.ErrInternal, 2},
	}
	for _, c := range cases {
		srv.ResetCalls()
		srv.Inject(sqsfake.Fault{Op: "ReceiveMessage", Times: 1, Err: c.err})
		_, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl}, throttle.SDKOption)
		if n := srv.Calls().Op["ReceiveMessage"]; n != c.requests {
			t.Errorf("%s: expect %d requests, got %d (%v)", c.name, c.requests, n, err)
		}
		if c.requests == 1 && err == nil {
			t.Errorf("%s: expect the throttle back, got nil", c.name)
		}
	}
	// Without it, the SDK retries the throttle itself.
	srv.ResetCalls()
	srv.Inject(sqsfake.Fault{Op: "ReceiveMessage", Times: 1, Err: sqsfake.ErrThrottled})
	if _, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl}); err != nil || srv.Calls().Op["ReceiveMessage"] != 2 {
		t.Errorf("expect the SDK to retry a throttle on its own, got %d requests, %v", srv.Calls().Op["ReceiveMessage"], err)
	}
}
