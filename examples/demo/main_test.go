package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"go.uber.org/goleak"

	"github.com/sqskit/sqskit/sqsfake"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// inMemory clears the environment that would point the demo at an endpoint.
func inMemory(t *testing.T) {
	t.Setenv("SQSKIT_ENDPOINT", "")
	t.Setenv("SQSKIT_AWS", "")
}

var countsLine = regexp.MustCompile(`Counts: (\d+) orders sent; (\d+) delivered .*; (\d+) in the operator queue .*; (\d+) delivered twice\.`)

// checkSummary checks the summary of a run of n orders: every order
// accounted for, the check passed, and the fate table complete.
func checkSummary(t *testing.T, out string, n int) {
	t.Helper()
	m := countsLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no counts line in:\n%s", out)
	}
	sent, _ := strconv.Atoi(m[1])
	delivered, _ := strconv.Atoi(m[2])
	escalated, _ := strconv.Atoi(m[3])
	if sent != n || delivered+escalated != n {
		t.Errorf("expect %d orders sent and each delivered or escalated, got sent %d, delivered %d, escalated %d", n, sent, delivered, escalated)
	}
	if want := "Nothing lost: each of the " + strconv.Itoa(n) + " orders"; !strings.Contains(out, want) {
		t.Errorf("expect %q in:\n%s", want, out)
	}
	if strings.Contains(out, "LOST") {
		t.Errorf("expect no lost order, got:\n%s", out)
	}
}

// The README's first command: the whole story in memory, on simulated time.
func TestInMemory(t *testing.T) {
	inMemory(t)
	var out, errs bytes.Buffer
	if err := run(context.Background(), nil, &out, &errs); err != nil {
		t.Fatalf("run: %v\n%s\n%s", err, out.String(), errs.String())
	}
	got := out.String()
	checkSummary(t, got, 20)
	for _, want := range []string{
		"in memory (sqsfake), on simulated time",
		"producer     sent 10 orders to orders.fifo in 1 SendMessageBatch call",
		"delivered at the first call",
		"failed (call 1, receive 1): payment gateway timed out",
		"not started behind a failed order of their FIFO group",
		"held in the DLQ (FIFO queues take no per-message delay)",
		"replay 1 of 3: back on orders in",
		"escalated to the operator queue: attempts-exhausted (replayed 3 times, the maximum is 3)",
		"escalated to the operator queue: invalid-counter (counter sqs-dlq-replay-nb is negative)",
		"operator queue: attempts-exhausted",
		"operator queue: invalid-counter",
		"delivered after 1 replay",
		"Time: ", "of simulated time",
		"API calls: ",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("expect %q in:\n%s", want, got)
		}
	}
	if errs.Len() > 0 {
		t.Errorf("expect no errors logged, got:\n%s", errs.String())
	}
}

// Other sizes, seeds and shapes of the story all end with nothing lost;
// past 60 orders the timeline gives way to a status line per minute.
func TestStories(t *testing.T) {
	inMemory(t)
	for _, c := range []struct {
		args []string
		n    int
		want string
	}{
		{[]string{"-n", "1"}, 1, "#1 "},
		{[]string{"-n", "9", "-fifo", "-seed", "7"}, 9, "orders.fifo"},
		{[]string{"-n", "12", "-standard", "-replays", "0"}, 12, "the backoff strategy stopped after 0 replays"},
		{[]string{"-n", "8", "-replays", "5", "-seed", "3"}, 8, "replay 5 of 5"},
		{[]string{"-n", "80", "-seed", "42"}, 80, "pending 0"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			var out, errs bytes.Buffer
			if err := run(context.Background(), c.args, &out, &errs); err != nil {
				t.Fatalf("run: %v\n%s\n%s", err, out.String(), errs.String())
			}
			checkSummary(t, out.String(), c.n)
			if !strings.Contains(out.String(), c.want) {
				t.Errorf("expect %q in:\n%s", c.want, out.String())
			}
		})
	}
}

// The check that nothing was lost looks at the queues: an escalated order
// that is not in the operator queue when the story ends is reported lost,
// and the run fails.
func TestLostOrderIsReported(t *testing.T) {
	inMemory(t)
	cfg, _, err := parse([]string{"-n", "10", "-standard"}, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	ctx := context.Background()
	s, err := newStory(ctx, cfg, &out, discard())
	if err != nil {
		t.Fatal(err)
	}
	s.beforeCheck = func(ctx context.Context, s *story) {
		if _, err := s.api.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(s.operator)}); err != nil {
			t.Fatal(err)
		}
	}
	err = s.run(ctx)
	if !errors.Is(err, errLost) {
		t.Fatalf("expect errLost, got %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "\nLOST: #") || strings.Contains(out.String(), "Nothing lost") {
		t.Errorf("expect the lost orders named, got:\n%s", out.String())
	}
}

// The endpoint mode, over HTTP against sqsfake's server: the same story in
// real time, on queues of its own that it deletes at the end. The standard
// queue alone keeps it short; SQSKIT_LONG=1 runs both queues.
func TestEndpoint(t *testing.T) {
	args := []string{"-standard", "-n", "6", "-replays", "1", "-seed", "2"}
	n := 6
	if os.Getenv("SQSKIT_LONG") != "" {
		args, n = []string{"-n", "10"}, 10
	}
	srv := sqsfake.New()
	hs := sqsfake.StartHTTP(t, srv)
	var out, errs bytes.Buffer
	if err := run(context.Background(), append([]string{"-endpoint", hs.URL}, args...), &out, &errs); err != nil {
		t.Fatalf("run: %v\n%s\n%s", err, out.String(), errs.String())
	}
	checkSummary(t, out.String(), n)
	if want := "against " + hs.URL + ", in real time"; !strings.Contains(out.String(), want) {
		t.Errorf("expect %q in:\n%s", want, out.String())
	}
	if calls := srv.Calls().Op["CreateQueue"]; calls == 0 {
		t.Errorf("expect the queues created on the endpoint, got %d CreateQueue calls", calls)
	}
	list, err := hs.SDKClient().ListQueues(context.Background(), &sqs.ListQueuesInput{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.QueueUrls) != 0 {
		t.Errorf("expect the demo's queues deleted, got %v", list.QueueUrls)
	}
}

func TestFlags(t *testing.T) {
	inMemory(t)
	for _, args := range [][]string{{"-n", "0"}, {"-n", "1001"}, {"-replays", "11"}, {"-replays", "-1"}, {"extra"}, {"-log", "loud"}} {
		var out, errs bytes.Buffer
		if err := run(context.Background(), args, &out, &errs); err == nil {
			t.Errorf("%v: expect an error, got none", args)
		}
		if out.Len() > 0 {
			t.Errorf("%v: expect nothing run, got:\n%s", args, out.String())
		}
	}
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// In memory the story spans minutes of queue time and waits for none of
// them on the machine's clock: in a synctest bubble, where the clock moves
// only as far as the code waits, the whole run moves it less than a second.
func TestInMemoryWaitsOnSimulatedTimeOnly(t *testing.T) {
	inMemory(t)
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var out, errs bytes.Buffer
		if err := run(context.Background(), nil, &out, &errs); err != nil {
			t.Fatalf("run: %v\n%s\n%s", err, out.String(), errs.String())
		}
		checkSummary(t, out.String(), 20)
		if waited := time.Since(start); waited > time.Second {
			t.Errorf("expect under a second of waiting on the machine's clock, got %v", waited)
		}
	})
}

// tell runs the demo in memory with args and returns what it printed.
func tell(t *testing.T, args ...string) string {
	t.Helper()
	var out, errs bytes.Buffer
	if err := run(context.Background(), args, &out, &errs); err != nil {
		t.Fatalf("run %v: %v\n%s\n%s", args, err, out.String(), errs.String())
	}
	if errs.Len() > 0 {
		t.Errorf("run %v: expect nothing on standard error, got:\n%s", args, errs.String())
	}
	return out.String()
}

// One seed, one story: the same flags print the same bytes, run after run.
//
// The runs are on the machine's clock, as go run's are, not in a synctest
// bubble: the library reads that clock in two places (the consumer's FIFO
// guard, the replayer's holds), and in a bubble it does not move at all
// between two readings, which the FIFO guard rounds differently from any
// real interval. What the story needs of the machine's clock is that a run
// take seconds, not minutes: the guard forgets a failure after a few.
func TestSameSeedSameStory(t *testing.T) {
	inMemory(t)
	for _, args := range [][]string{
		nil,
		{"-seed", "7", "-n", "40"},
		{"-seed", "3", "-standard", "-n", "12", "-replays", "6"},
		{"-seed", "9", "-fifo", "-n", "25"},
	} {
		t.Run(fmt.Sprint(args), func(t *testing.T) {
			var runs [3]string
			for i := range runs {
				runs[i] = tell(t, args...)
			}
			for i := 1; i < len(runs); i++ {
				if runs[i] != runs[0] {
					t.Errorf("expect run %d to print run 1's story, got a diff:\n%s", i+1, lineDiff(runs[0], runs[i]))
				}
			}
		})
	}
}

// lineDiff returns the first lines where a and b differ.
func lineDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < max(len(al), len(bl)); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\n- %s\n+ %s", i+1, x, y)
		}
	}
	return "(none)"
}

// Another seed fails other orders, with other delays.
func TestSeedsTellDifferentStories(t *testing.T) {
	inMemory(t)
	if tell(t, "-seed", "1") == tell(t, "-seed", "2") {
		t.Error("expect -seed 1 and -seed 2 to tell different stories")
	}
}

var (
	timelineRE = regexp.MustCompile(`^ +(\d+):(\d\d\.\d) {2}(\S+) +((?:#\d+ )+)(.*)$`)
	backInRE   = regexp.MustCompile(`back (?:on orders )?in (\d+(?:\.\d)?)s$`)
)

// On the standard queue every delay the timeline states is the time to
// the order's next event: a release "back in 2s" is received again 2 s
// later, a replay "back on orders in 36.4s" 37 s later (SQS counts
// DelaySeconds in whole seconds). The clock moves to each moment something
// is due, no sooner and no later.
func TestTimelineKeepsItsDelays(t *testing.T) {
	inMemory(t)
	for _, seed := range []string{"1", "2", "3"} {
		out := tell(t, "-standard", "-seed", seed)
		due := map[string]time.Duration{} // by order: when its next event is due
		checked := 0
		for _, l := range strings.Split(out, "\n") {
			m := timelineRE.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			mins, _ := strconv.Atoi(m[1])
			secs, _ := strconv.ParseFloat(m[2], 64)
			at := time.Duration(mins)*time.Minute + time.Duration(secs*float64(time.Second))
			for _, id := range strings.Fields(m[4]) {
				if want, ok := due[id]; ok {
					checked++
					if at != want {
						t.Errorf("seed %s: expect %s's next event at %v, got %v: %s", seed, id, want, at, l)
					}
					delete(due, id)
				}
				if d := backInRE.FindStringSubmatch(m[5]); d != nil {
					s, _ := strconv.ParseFloat(d[1], 64)
					due[id] = at + time.Duration(math.Ceil(s))*time.Second
				}
			}
		}
		if checked < 10 {
			t.Errorf("seed %s: expect at least 10 delays checked, got %d:\n%s", seed, checked, out)
		}
	}
}

// A replay whose delay is longer than SQS delays a message waits in the
// DLQ, and the timeline says which limit: 900 s on a standard queue, none
// at all on a FIFO one.
func TestHeldReplaysSayWhy(t *testing.T) {
	inMemory(t)
	out := tell(t, "-seed", "3", "-standard", "-n", "12", "-replays", "6")
	for _, want := range []string{
		"replay 5 of 6 due in 15m27s: held in the DLQ (longer than the 900 s SQS can delay a message it is sent)",
		"replay 5 of 6 is due: sent back to orders",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("expect %q in:\n%s", want, out)
		}
	}
	for _, c := range []struct {
		fifo  bool
		delay time.Duration
		want  string
	}{
		{true, time.Minute, "FIFO queues take no per-message delay"},
		{false, 901 * time.Second, "longer than the 900 s SQS can delay a message it is sent"},
		{false, 12 * time.Hour, "longer than the 900 s SQS can delay a message it is sent; the delay is cut to the policy's MaxBackoff, 12h"},
		{true, 12 * time.Hour, "FIFO queues take no per-message delay; the delay is cut to the policy's MaxBackoff, 12h"},
	} {
		if got := whyHeld(&flow{fifo: c.fifo}, c.delay, 12*time.Hour); got != c.want {
			t.Errorf("whyHeld(fifo %v, %v): expect %q, got %q", c.fifo, c.delay, c.want, got)
		}
	}
}
