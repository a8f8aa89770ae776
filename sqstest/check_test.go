package sqstest_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqskit/sqskit/sqsfake"
	"github.com/sqskit/sqskit/sqstest"
)

// verdictHarness is the harness both runs of the verdict comparison use,
// with one case skipped by the harness: sqsfake with its manual clock
// ("manual"), on real time ("real"), or on its manual clock behind a
// client that corrupts every received body ("broken").
func verdictHarness(mode string) sqstest.Harness {
	h := sqstest.Harness{Skip: map[string]string{"queue/create-and-get-url": "skipped to show a harness skip"}}
	if mode == "real" {
		h.Client = sqsfake.New().Client()
		return h
	}
	clock := sqsfake.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	h.Client, h.Clock = sqsfake.New(func(o *sqsfake.Options) { o.Clock = clock }).Client(), clock
	if mode == "broken" {
		h.Client = broken{h.Client}
	}
	return h
}

// runVerdictsEnv names the harness TestRunForCheckComparison runs Run on,
// in the test binary TestCheckVerdictsEqualRuns starts.
const runVerdictsEnv = "SQSTEST_RUN_FOR_CHECK"

// TestRunForCheckComparison is Run's side of TestCheckVerdictsEqualRuns: it
// runs only in the test binary that test starts.
func TestRunForCheckComparison(t *testing.T) {
	mode := os.Getenv(runVerdictsEnv)
	if mode == "" {
		t.Skip(runVerdictsEnv + " is not set: this is TestCheckVerdictsEqualRuns's helper")
	}
	sqstest.Run(t, verdictHarness(mode))
}

// Check gives every case the verdict Run gives it, and a skip the reason Run
// prints, on a backend that passes and on one that fails many cases: Run's verdicts are read from go test -v's output of this test
// binary run again (a failing subtest there must not fail this test).
func TestCheckVerdictsEqualRuns(t *testing.T) {
	for _, mode := range []string{"manual", "real", "broken"} {
		t.Run(mode, func(t *testing.T) {
			results, err := sqstest.Check(context.Background(), verdictHarness(mode), nil)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]sqstest.Result{}
			for _, r := range results {
				got[r.Case] = r
			}
			want := runVerdicts(t, mode)
			names := sqstest.Names()
			if len(results) != len(names) || len(want) != len(names) {
				t.Fatalf("expect %d cases from Check and Run, got %d and %d", len(names), len(results), len(want))
			}
			skipped, failed := 0, 0
			for i, name := range names {
				c, r := results[i], want[name]
				if c.Case != name {
					t.Errorf("result %d: expect case %s (the suite's order), got %s", i, name, c.Case)
				}
				if c.Verdict != r.Verdict {
					t.Errorf("%s: expect Run's verdict %s, got %s (%s)", name, r.Verdict, c.Verdict, c.Reason)
				}
				if c.Verdict == sqstest.Failed {
					failed++
				}
				if c.Verdict == sqstest.Skipped {
					skipped++
					if c.Reason != r.Reason {
						t.Errorf("%s: expect Run's skip reason %q, got %q", name, r.Reason, c.Reason)
					}
				}
			}
			if got["queue/create-and-get-url"].Reason != "SKIP queue/create-and-get-url: backend lacks this behaviour: skipped to show a harness skip" {
				t.Errorf("expect the harness's skip with its reason, got %+v", got["queue/create-and-get-url"])
			}
			t.Logf("%d cases, %d skipped, %d failed: the same verdicts from Check and Run", len(names), skipped, failed)
		})
	}
}

var (
	verdictLine = regexp.MustCompile(`^\s*--- (PASS|SKIP|FAIL): TestRunForCheckComparison/(\S+) \(`)
	headerLine  = regexp.MustCompile(`^=== (?:RUN|CONT|NAME|PAUSE)\s+TestRunForCheckComparison/(\S+)$`)
	logLine     = regexp.MustCompile(`^\s+\S+\.go:\d+: (.*)$`)
)

// runVerdicts runs Run on the harness of mode in this test binary (as
// many subtests at once as Check runs cases) and returns each case's
// verdict, and for a skip the reason it printed: go test -v prints a
// subtest's log under a header naming it, before its verdict.
func runVerdicts(t *testing.T, mode string) map[string]sqstest.Result {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestRunForCheckComparison$", "-test.v", "-test.count=1", "-test.parallel=8")
	cmd.Env = append(os.Environ(), runVerdictsEnv+"="+mode)
	out, err := cmd.Output()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("run the suite in %s: %v", os.Args[0], err)
	}
	verdicts := map[string]sqstest.Verdict{"PASS": sqstest.Passed, "SKIP": sqstest.Skipped, "FAIL": sqstest.Failed}
	got := map[string]sqstest.Result{}
	logged := map[string]string{} // each subtest's first log line
	current := ""
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if m := headerLine.FindStringSubmatch(line); m != nil {
			current = m[1]
		} else if m := verdictLine.FindStringSubmatch(line); m != nil {
			got[m[2]] = sqstest.Result{Case: m[2], Verdict: verdicts[m[1]]}
		} else if m := logLine.FindStringSubmatch(line); m != nil && current != "" {
			if _, ok := logged[current]; !ok {
				logged[current] = m[1]
			}
		}
	}
	for name, r := range got {
		if r.Verdict == sqstest.Skipped {
			r.Reason = logged[name]
			got[name] = r
		}
	}
	return got
}

// broken answers every receive with the wrong bodies, after the SDK has
// checked them: a backend that gets one operation wrong.
type broken struct{ sqsfake.API }

func (b broken) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	out, err := b.API.ReceiveMessage(ctx, in, optFns...)
	if out != nil {
		for i := range out.Messages {
			out.Messages[i].Body = new(string)
			*out.Messages[i].Body = "corrupted"
		}
	}
	return out, err
}

// A backend that gets an operation wrong fails the cases that use it, each
// with its messages, and Check goes on to the others.
func TestCheckReportsABrokenBackendsFailures(t *testing.T) {
	results, err := sqstest.Check(context.Background(), verdictHarness("broken"), nil)
	if err != nil {
		t.Fatal(err)
	}
	count := map[sqstest.Verdict]int{}
	for _, r := range results {
		count[r.Verdict]++
		if r.Verdict == sqstest.Failed && !strings.Contains(r.Reason, ".go:") {
			t.Errorf("%s: expect its failure's messages, each with its line, got %q", r.Case, r.Reason)
		}
		if r.Case == "delay/per-message" && !(strings.HasPrefix(r.Reason, "cases_delay.go:") && strings.Contains(r.Reason, "before the delay: expect [now], got [corrupted]")) {
			t.Errorf("delay/per-message: expect the case's own message from its own line, got %q", r.Reason)
		}
	}
	if len(results) != len(sqstest.Names()) || count[sqstest.Failed] == 0 || count[sqstest.Passed] == 0 {
		t.Errorf("expect a result for each of %d cases, some failed and some passed, got %v", len(sqstest.Names()), count)
	}
}

// panicky panics in GetQueueUrl, and in the long polls of 20 s that a case
// starts on a goroutine of its own.
type panicky struct{ sqsfake.API }

func (p panicky) GetQueueUrl(context.Context, *sqs.GetQueueUrlInput, ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error) {
	panic("sqstest test: GetQueueUrl panics")
}

func (p panicky) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	if in.WaitTimeSeconds == 20 {
		panic("sqstest test: a long poll panics")
	}
	return p.API.ReceiveMessage(ctx, in, optFns...)
}

// A backend call that panics fails its case with the panic, and the process
// goes on: Check runs in a command. On real time, so that the case whose
// long poll panics does not wait out the clock for it to park.
func TestCheckFailsTheCasesOfAPanickingBackend(t *testing.T) {
	h := verdictHarness("real")
	h.Client = panicky{h.Client}
	results, err := sqstest.Check(context.Background(), h, nil)
	if err != nil {
		t.Fatal(err)
	}
	failed := map[string]string{}
	for _, r := range results {
		if r.Verdict == sqstest.Failed {
			failed[r.Case] = r.Reason
		}
	}
	if !strings.Contains(failed["poll/cancelled-by-context"], "panic: sqstest test: a long poll panics") {
		t.Errorf("poll/cancelled-by-context: expect a failure with the long poll's panic, got %q", failed["poll/cancelled-by-context"])
	}
	panics := 0
	for _, reason := range failed {
		if strings.Contains(reason, "panic: sqstest test: GetQueueUrl panics") {
			panics++
		}
	}
	if panics == 0 || len(results) != len(sqstest.Names()) {
		t.Errorf("expect a result for each of %d cases, the ones calling GetQueueUrl failed with its panic; got %d results, failures %v", len(sqstest.Names()), len(results), failed)
	}
}

// Cancelling Check's context starts no more cases and ends the running
// ones; Check returns the results so far with the context's error.
func TestCheckStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	results, err := sqstest.Check(ctx, verdictHarness("real"), nil)
	if !errors.Is(err, context.Canceled) || len(results) != 0 {
		t.Errorf("cancelled before: expect no results and context.Canceled, got %d and %v", len(results), err)
	}

	for _, mode := range []string{"manual", "real"} {
		ctx, cancel := context.WithCancel(context.Background())
		reported := 0
		start := time.Now()
		results, err := sqstest.Check(ctx, verdictHarness(mode), func(sqstest.Result) {
			if reported++; reported == 3 {
				cancel()
			}
		})
		cancel()
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("%s: expect Check to end promptly once cancelled, took %v", mode, took)
		}
		if !errors.Is(err, context.Canceled) || len(results) < 3 || len(results) >= len(sqstest.Names()) || len(results) != reported {
			t.Errorf("%s: expect the %d reported results of the cases that ended (at least 3, not all) and context.Canceled, got %d and %v", mode, reported, len(results), err)
		}
	}
}

// A harness that cannot run is an error, as Run reports it.
func TestCheckRefusesAHarnessThatCannotRun(t *testing.T) {
	if _, err := sqstest.Check(context.Background(), sqstest.Harness{}, nil); err == nil || err.Error() != "sqstest: Harness.Client is nil" {
		t.Errorf("nil Client: expect an error, got %v", err)
	}
	h := verdictHarness("manual")
	h.Skip = map[string]string{"queue/gone": "renamed"}
	_, err := sqstest.Check(context.Background(), h, nil)
	if err == nil || err.Error() != `sqstest: Harness.Skip names "queue/gone", which is no case of this suite (sqstest.Names lists them)` {
		t.Errorf("a Skip naming no case: expect an error, got %v", err)
	}
}
