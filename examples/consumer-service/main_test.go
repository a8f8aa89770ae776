package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/sqsfake"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func inMemory(t *testing.T) {
	t.Setenv("SQSKIT_ENDPOINT", "")
	t.Setenv("SQSKIT_AWS", "")
}

// The delays are the default RedeliveryBackoff's (equal jitter from 1 s),
// drawn from a seeded source, in whole seconds rounded up (3.4 s is 4 s);
// orders 0 to 19 but 13 are worth 10 × (190 − 13).
const transcript = `backend: in memory (sqsfake), in real time
    0s  sent 20 orders to jobs (dead-letter queue after 3 receives); order 13 is not JSON
    0s  order 13 failed (receive 1); back on the queue in 1s
    1s  order 13 failed (receive 2); back on the queue in 2s
    3s  order 13 failed (receive 3); back on the queue in 4s
    7s  SQS moved order 13 to the dead-letter queue
handled 19 orders worth 1770; 3 failures; in the dead-letter queue: not json
`

// failureLogged is what the consumer's Logger writes to standard error for
// each failure of order 13: the decode error, never the body.
const failureLogged = `msg="consumer: message failed"`

// sample runs the in-memory sample with the jitter's source seeded, in a
// synctest bubble: the run waits on the real clock, whose seconds pass
// there as soon as everything waits.
func sample(t *testing.T, out, errs *bytes.Buffer) {
	t.Helper()
	inMemory(t)
	synctest.Test(t, func(t *testing.T) {
		s := service{stdout: out, stderr: errs, rand: backoff.NewRandom(1)}
		if err := s.run(context.Background(), nil); err != nil {
			t.Fatalf("run: %v\n%s", err, errs.String())
		}
	})
}

func TestRunInMemory(t *testing.T) {
	var out, errs bytes.Buffer
	sample(t, &out, &errs)
	if out.String() != transcript {
		t.Errorf("expect:\n%s\ngot:\n%s", transcript, out.String())
	}
	if n := strings.Count(errs.String(), failureLogged); n != maxReceives {
		t.Errorf("expect %d failures logged on standard error, got %d:\n%s", maxReceives, n, errs.String())
	}
	if !strings.Contains(errs.String(), "handler: decode body") || strings.Contains(errs.String(), "not json") {
		t.Errorf("expect the decode error logged, and never the body, got:\n%s", errs.String())
	}
}

// In memory the sample waits on the real clock for the retries' delays,
// 1 + 2 + 4 s, and for nothing else: in a synctest bubble, whose clock
// moves only as far as the code waits, it moves 7 s.
func TestRunInMemoryWaitsForTheDelaysOnly(t *testing.T) {
	inMemory(t)
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var out, errs bytes.Buffer
		s := service{stdout: &out, stderr: &errs, rand: backoff.NewRandom(1)}
		if err := s.run(context.Background(), nil); err != nil {
			t.Fatalf("run: %v\n%s", err, errs.String())
		}
		if waited := time.Since(start); waited < 7*time.Second || waited >= 8*time.Second {
			t.Errorf("expect 7 s of waiting on the clock, the retries' delays, got %v", waited)
		}
	})
}

// cancelOn is an output that cancels the run's ctx, as SIGTERM does, when a
// line containing mark is written.
type cancelOn struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	mark   string
	cancel context.CancelFunc
}

func (w *cancelOn) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if bytes.Contains(p, []byte(w.mark)) {
		w.cancel()
	}
	return w.buf.Write(p)
}

// A signal in the middle ends the run cleanly: the consumer shuts down,
// the queues are deleted, and the run reports where it stopped.
func TestRunStopsOnSignal(t *testing.T) {
	inMemory(t)
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		out := &cancelOn{mark: "failed (receive 2)", cancel: cancel}
		var errs bytes.Buffer
		if err := (service{stdout: out, stderr: &errs}).run(ctx, nil); err != nil {
			t.Fatalf("expect a clean stop, got %v\n%s", err, errs.String())
		}
		if want := "stopped by a signal: 19 orders handled, 2 failures\n"; !strings.HasSuffix(out.buf.String(), want) {
			t.Errorf("expect the output to end with %q, got:\n%s", want, out.buf.String())
		}
	})
}

// With -queue it consumes that queue, as a service does, until a signal.
func TestRunConsumesAQueueUntilASignal(t *testing.T) {
	srv := sqsfake.New()
	hs := sqsfake.StartHTTP(t, srv)
	t.Setenv("SQSKIT_ENDPOINT", "")
	api := hs.SDKClient()
	ctx := context.Background()
	jobs, _, err := createQueues(ctx, api, "service-")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := send(ctx, api, jobs); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopped := make(chan error, 1)
	var out, errs bytes.Buffer
	go func() {
		stopped <- (service{stdout: &out, stderr: &errs}).run(ctx, []string{"-endpoint", hs.URL, "-queue", jobs})
	}()
	for srv.Calls().Op["DeleteMessageBatch"] == 0 { // the first deletes: it consumes
		time.Sleep(time.Millisecond)
	}
	cancel() // SIGTERM
	if err := <-stopped; err != nil {
		t.Fatalf("expect a clean stop, got %v\n%s", err, errs.String())
	}
	if !strings.HasPrefix(out.String(), "stopped: ") || !strings.HasSuffix(out.String(), " failures\n") {
		t.Errorf("expect the counts it stopped with, got:\n%s", out.String())
	}
	if n := srv.Calls().Op["CreateQueue"]; n != 2 {
		t.Errorf("expect no queue of its own with -queue, got %d CreateQueue calls in all", n)
	}
}

func TestFlags(t *testing.T) {
	inMemory(t)
	for _, args := range [][]string{{"extra"}, {"-queue", "https://sqs.us-east-1.amazonaws.com/123456789012/jobs"}, {"-log", "loud"}, {"-help"}} {
		var out, errs bytes.Buffer
		err := (service{stdout: &out, stderr: &errs}).run(context.Background(), args)
		if err == nil {
			t.Errorf("%v: expect an error, got none", args)
		}
		if args[0] == "-help" && !errors.Is(err, flag.ErrHelp) {
			t.Errorf("-help: expect flag.ErrHelp, got %v", err)
		}
		if out.Len() > 0 {
			t.Errorf("%v: expect nothing run, got:\n%s", args, out.String())
		}
	}
}

// Against an endpoint (sqsfake over HTTP) the same sample runs in real
// time, about three seconds with -retry-cap 1s, on queues of its own that it
// deletes at the end.
func TestRunOnEndpoint(t *testing.T) {
	if os.Getenv("SQSKIT_LONG") == "" {
		t.Skip("takes 3 s of real time; set SQSKIT_LONG=1 (CI does)")
	}
	srv := sqsfake.New()
	hs := sqsfake.StartHTTP(t, srv)
	t.Setenv("SQSKIT_ENDPOINT", hs.URL)
	var out, errs bytes.Buffer
	if err := (service{stdout: &out, stderr: &errs}).run(context.Background(), []string{"-retry-cap", "1s"}); err != nil {
		t.Fatalf("run: %v\n%s", err, errs.String())
	}
	for _, want := range []string{
		"backend: " + hs.URL + ", in real time",
		"order 13 failed (receive 3); back on the queue in 1s",
		"SQS moved order 13 to the dead-letter queue",
		"handled 19 orders worth 1770; 3 failures; in the dead-letter queue: not json\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("expect %q in:\n%s", want, out.String())
		}
	}
	if n := strings.Count(errs.String(), failureLogged); n != maxReceives {
		t.Errorf("expect %d failures logged on standard error, got %d:\n%s", maxReceives, n, errs.String())
	}
	if n := srv.Calls().Op["DeleteQueue"]; n != 2 {
		t.Errorf("expect the example's 2 queues deleted, got %d DeleteQueue calls", n)
	}
}
