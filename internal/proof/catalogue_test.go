package proof

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/sqsfake"
)

// The bad-input catalogue: one row per bad input a user or a hostile message
// can give sqskit, each checking the typed error it gets (errors.Is or
// errors.As), that no SQS call was made before it (sqsfake's call counts),
// and that nothing was lost, panicked or hung. Rows whose defence, if it
// failed, would crash the process (a panic on a goroutine the library
// started) run in a child process: the test binary re-executed for that row
// alone.

// The categories, as the README's reliability section lists them.
const (
	catOptions = "constructors and options"
	catSend    = "send paths"
	catLambda  = "Lambda events"
	catForged  = "forged replay counters and metadata"
	catHandler = "hostile handlers"
	catWire    = "sqsfake wire requests"
)

var catalogueOrder = []string{catOptions, catSend, catLambda, catForged, catHandler, catWire, catMessages}

// catalogueRowEnv names the one row a child process runs.
const catalogueRowEnv = "SQSKIT_CATALOGUE_ROW"

// row is one bad input.
type row struct {
	cat, name string
	// child runs the row in a re-executed test binary.
	child bool
	// calls: the row makes SQS calls by design (a handler needs a message
	// received, a replay pass moves one); every other row must make none.
	calls bool
	// run feeds the bad input and returns nil when it got what it should.
	run func(t *testing.T, w *catWorld) error
}

// catWorld is a fresh sqsfake with the queues rows use, its call counts
// reset.
type catWorld struct {
	srv                            *sqsfake.Server
	api                            *sqs.Client
	std, fifo, dlq, operator, main string
}

func newCatWorld(t *testing.T) *catWorld {
	t.Helper()
	srv := sqsfake.New()
	w := &catWorld{srv: srv, api: srv.Client()}
	create := func(name string, attrs map[string]string) string {
		out, err := w.api.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
		if err != nil {
			t.Fatal(err)
		}
		return *out.QueueUrl
	}
	w.std = create("std", nil)
	w.fifo = create("q.fifo", map[string]string{"FifoQueue": "true"})
	w.dlq = create("dlq", nil)
	w.operator = create("operator", nil)
	w.main = create("main", nil)
	srv.ResetCalls()
	return w
}

// count is every message a queue holds: visible, in flight and delayed.
func (w *catWorld) count(url string) int { return queueDepth(w.api, url) }

// queueDepth is every message the queue at url holds (visible, in flight
// and delayed), or -1 when SQS does not say.
func queueDepth(api *sqs.Client, url string) int {
	out, err := api.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{"All"}})
	if err != nil {
		return -1
	}
	n := 0
	for _, a := range []string{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"} {
		var k int
		_, _ = fmt.Sscan(out.Attributes[a], &k)
		n += k
	}
	return n
}

// send puts one message on a queue, outside any call count a row checks.
func (w *catWorld) send(t *testing.T, url, body string, attrs map[string]types.MessageAttributeValue, group string) {
	t.Helper()
	in := &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body), MessageAttributes: attrs}
	if group != "" {
		in.MessageGroupId, in.MessageDeduplicationId = aws.String(group), aws.String(fmt.Sprint(time.Now().UnixNano()))
	}
	if _, err := w.api.SendMessage(context.Background(), in); err != nil {
		t.Fatal(err)
	}
}

func TestBadInputCatalogue(t *testing.T) {
	rows := catalogue()
	if only := os.Getenv(catalogueRowEnv); only != "" {
		i := slices.IndexFunc(rows, func(r row) bool { return r.cat+"/"+r.name == only })
		if i < 0 {
			t.Fatalf("no catalogue row %q", only)
		}
		runRow(t, rows[i])
		if !t.Failed() {
			fmt.Println("catalogue row passed:", only)
		}
		return
	}
	if err := checkCatalogue(rows); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, r := range rows {
		key := r.cat + "/" + r.name
		counts[r.cat]++
		t.Run(key, func(t *testing.T) {
			if r.child {
				runChild(t, key)
				return
			}
			runRow(t, r)
		})
	}
	var lines []string
	for _, c := range catalogueOrder {
		lines = append(lines, fmt.Sprintf("  %-48s %3d", c, counts[c]))
	}
	fmt.Printf("bad-input catalogue: %d rows\n%s\n", len(rows), strings.Join(lines, "\n"))
}

// checkCatalogue checks that the catalogue is what its figures say: every
// row has a name of its own, so -run and a child process find exactly it,
// and a run; every row is in a listed category, so the printed figures
// account for it; and no listed category is empty.
func checkCatalogue(rows []row) error {
	var errs []error
	seen := map[string]bool{}
	filled := map[string]bool{}
	for _, r := range rows {
		key := r.cat + "/" + r.name
		switch {
		case r.name == "":
			errs = append(errs, fmt.Errorf("a row of %q has no name", r.cat))
		case seen[key]:
			errs = append(errs, fmt.Errorf("two rows named %q", key))
		}
		seen[key] = true
		if r.run == nil {
			errs = append(errs, fmt.Errorf("row %q has nothing to run", key))
		}
		if !slices.Contains(catalogueOrder, r.cat) {
			errs = append(errs, fmt.Errorf("row %q is in category %q, which catalogueOrder does not list", key, r.cat))
		}
		filled[r.cat] = true
	}
	for _, c := range catalogueOrder {
		if !filled[c] {
			errs = append(errs, fmt.Errorf("expect at least one row in category %q, got none", c))
		}
	}
	return errors.Join(errs...)
}

// runRow runs one row in this process: a panic fails the row, a hang
// crashes the binary with every goroutine's stack.
func runRow(t *testing.T, r row) {
	t.Helper()
	w := newCatWorld(t)
	watchdog := time.AfterFunc(time.Minute, func() {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		panic(fmt.Sprintf("catalogue row %s/%s hung for a minute; goroutines:\n%s", r.cat, r.name, buf))
	})
	defer watchdog.Stop()
	err := func() (err error) {
		defer func() {
			if v := recover(); v != nil {
				err = fmt.Errorf("panicked: %v\n%s", v, debug.Stack())
			}
		}()
		return r.run(t, w)
	}()
	if err != nil {
		t.Error(err)
	}
	if calls := w.srv.Calls(); !r.calls && calls.Total() != 0 {
		t.Errorf("expect no SQS call, got %v", calls.Op)
	}
}

// runChild re-executes the test binary for one row, so a panic on a
// goroutine the library started fails the row instead of the whole run.
func runChild(t *testing.T, key string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestBadInputCatalogue$", "-test.count=1")
	// Under -race a process sleeps a second at exit, to let reports flush,
	// unless told otherwise.
	cmd.Env = append(os.Environ(), catalogueRowEnv+"="+key, "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "catalogue row passed: "+key) {
		t.Errorf("child process for %s: %v\n%s", key, err, out)
	}
}

// is checks that err matches target.
func is(err, target error) error {
	if !errors.Is(err, target) {
		return fmt.Errorf("expect an error matching %v, got %v", target, err)
	}
	return nil
}

// isAs checks that err holds a T, and returns it.
func isAs[T error](err error) (T, error) {
	var target T
	if !errors.As(err, &target) {
		return target, fmt.Errorf("expect an error holding %T, got %v", target, err)
	}
	return target, nil
}

// catalogue lists every row.
func catalogue() []row {
	var rows []row
	for _, part := range [][]row{optionRows(), sendRows(), lambdaRows(), forgedRows(), handlerRows(), wireRows(), messageRows()} {
		rows = append(rows, part...)
	}
	return rows
}

// checkCatalogue refuses each way a catalogue can misstate itself, and
// passes the real one.
func TestCheckCatalogueRefusesMalformedCatalogues(t *testing.T) {
	run := func(*testing.T, *catWorld) error { return nil }
	full := func() []row {
		var rows []row
		for _, c := range catalogueOrder {
			rows = append(rows, row{cat: c, name: "a", run: run})
		}
		return rows
	}
	if err := checkCatalogue(full()); err != nil {
		t.Fatalf("expect a row in every category to pass, got %v", err)
	}
	if err := checkCatalogue(catalogue()); err != nil {
		t.Fatalf("expect the catalogue to pass, got %v", err)
	}
	for name, rows := range map[string][]row{
		"two rows of one name": append(full(), row{cat: catSend, name: "a", run: run}),
		"a row without a name": append(full(), row{cat: catSend, run: run}),
		"a row without a run":  append(full(), row{cat: catSend, name: "b"}),
		"an unlisted category": append(full(), row{cat: "elsewhere", name: "a", run: run}),
		"an empty category":    full()[1:],
	} {
		if err := checkCatalogue(rows); err == nil {
			t.Errorf("%s: expect an error, got nil", name)
		}
	}
}
