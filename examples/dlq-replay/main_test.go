package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/sqskit/sqskit/sqsfake"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The worked example of package replay's doc, to the second: the jitter is
// seeded by the DLQ message's id, which sqsfake assigns in order.
const transcript = `backend: in memory, on simulated time
    0s  sent order 42 to the main queue (maxReceiveCount 2, visibility timeout 30s)
    0s  handler failed (receive 1): unknown SKU
   30s  handler failed (receive 2): unknown SKU
  1m0s  dead-lettered by SQS; replay 1, back on the main queue in 48.3s
 1m49s  handler failed (receive 1): unknown SKU
 2m19s  handler failed (receive 2): unknown SKU
 2m49s  dead-lettered by SQS; replay 2, back on the main queue in 1m52.6s
 4m42s  handler failed (receive 1): unknown SKU
 5m12s  handler failed (receive 2): unknown SKU
 5m42s  dead-lettered by SQS; replay 3, back on the main queue in 3m27.1s
 9m10s  handler failed (receive 1): unknown SKU
 9m40s  handler failed (receive 2): unknown SKU
10m10s  dead-lettered by SQS; escalated: attempts-exhausted (replayed 3 times, the maximum is 3)
handled 8 times in all
operator queue: body {"order":42,"sku":"does-not-exist"}, tenant acme, reason attempts-exhausted, replays 3
`

func TestRunInMemory(t *testing.T) {
	t.Setenv("SQSKIT_ENDPOINT", "")
	t.Setenv("SQSKIT_AWS", "")
	var out, errs bytes.Buffer
	if err := run(context.Background(), &out, &errs); err != nil {
		t.Fatalf("run: %v\n%s", err, errs.String())
	}
	if out.String() != transcript {
		t.Errorf("expect:\n%s\ngot:\n%s", transcript, out.String())
	}
	if errs.Len() > 0 {
		t.Errorf("expect nothing logged, got:\n%s", errs.String())
	}
}

// Its ten minutes pass on simulated time: in a synctest bubble, whose clock
// moves only as far as the code waits, the run moves it less than a second
// (it slept through every delay once, 16 s in all).
func TestRunInMemoryWaitsOnSimulatedTimeOnly(t *testing.T) {
	t.Setenv("SQSKIT_ENDPOINT", "")
	t.Setenv("SQSKIT_AWS", "")
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var out, errs bytes.Buffer
		if err := run(context.Background(), &out, &errs); err != nil {
			t.Fatalf("run: %v\n%s", err, errs.String())
		}
		if waited := time.Since(start); waited > time.Second {
			t.Errorf("expect under a second of waiting on the machine's clock, got %v", waited)
		}
	})
}

// On an endpoint (sqsfake over HTTP here) it runs in real time, 15 s or so:
// with SQSKIT_LONG=1 only.
func TestRunOnEndpoint(t *testing.T) {
	if os.Getenv("SQSKIT_LONG") == "" {
		t.Skip("takes 15 s of real time; set SQSKIT_LONG=1")
	}
	srv := sqsfake.New()
	hs := sqsfake.StartHTTP(t, srv)
	t.Setenv("SQSKIT_ENDPOINT", hs.URL)
	var out, errs bytes.Buffer
	if err := run(context.Background(), &out, &errs); err != nil {
		t.Fatalf("run: %v\n%s", err, errs.String())
	}
	for _, want := range []string{"replay 3, back on the main queue in 4s", "escalated: attempts-exhausted", "handled 8 times in all", "tenant acme, reason attempts-exhausted"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("expect %q in:\n%s", want, out.String())
		}
	}
	if n := srv.Calls().Op["DeleteQueue"]; n != 3 {
		t.Errorf("expect the example's 3 queues deleted, got %d DeleteQueue calls", n)
	}
}
