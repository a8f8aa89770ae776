package sqstest

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqskit/sqskit/sqsfake"
)

// Harness is the backend the suite runs on, and the little that differs
// between backends: whether a test moves its clock, the code style of its
// errors, and the cases it is known to fail.
type Harness struct {
	// Client is the SQS under test: an *sqs.Client for an endpoint (an
	// emulator or real SQS), or sqsfake's client in process. Required.
	Client sqsfake.API

	// Prefix starts the name of every queue the suite creates; each case
	// deletes its queues when it ends. Give each run on a shared backend its
	// own (real SQS forbids reusing a deleted queue's name for 60 s).
	// Default "": names are the case's base name and a number.
	Prefix string

	// Clock is the backend's clock when the test moves it, as
	// *sqsfake.ManualClock: the cases that need minutes or hours of time
	// (deduplication window, retention, the 12-hour visibility cap) run in
	// an instant, and a case waits on it for its long polls to park. The
	// cases then run one after another, as they share the clock. Default
	// nil: time passes for real, those cases skip with the reason, and the
	// others run in parallel, each on its own queues.
	Clock Clock

	// Skip maps the name of a case (as [Names] lists them) to why this
	// backend fails it; the case is skipped with that reason printed. For an
	// emulator's known gaps: real SQS and sqsfake need none. A name that is
	// not a case, or an empty reason, fails the run, so a renamed case
	// cannot leave a stale skip behind.
	Skip map[string]string

	// PrefixedErrorCodes: the backend's unmodeled errors carry codes with
	// the AWS.SimpleQueueService. prefix of SQS's old query protocol
	// (AWS.SimpleQueueService.InvalidParameterValue where SQS answers
	// InvalidParameterValue). Cases then accept either spelling and log the
	// one they got. Default false: exactly the service's codes, as real SQS
	// and sqsfake send them.
	PrefixedErrorCodes bool
}

// Clock is a backend's clock that a test moves; *sqsfake.ManualClock is one.
type Clock interface {
	// Advance moves the clock forward by d, firing what falls due.
	Advance(d time.Duration)
	// WaitForTimers returns once n timers wait on the clock (so n long
	// polls are parked), or with ctx's error.
	WaitForTimers(ctx context.Context, n int) error
}

// queueName returns a queue name unique to this run for a queue the case
// calls base (which may end in .fifo).
func (e *env) queueName(base string) string {
	return uniqueName(e.h.Prefix, base, e.seq.Add(1))
}

// advance lets d pass: it moves the clock, or sleeps.
func (e *env) advance(d time.Duration) {
	if e.h.Clock != nil {
		e.h.Clock.Advance(d)
		return
	}
	time.Sleep(d)
}

// waitForPollers returns once n receives are parked in a long poll: the
// clock can tell; a real server is given a moment.
func (e *env) waitForPollers(t caseT, n int) {
	t.Helper()
	if e.h.Clock == nil {
		time.Sleep(300 * time.Millisecond)
		return
	}
	ctx, cancel := context.WithTimeout(e.ctx(), 10*time.Second)
	defer cancel()
	if err := e.h.Clock.WaitForTimers(ctx, n); err != nil {
		t.Fatalf("expect %d parked long polls: %v", n, err)
	}
}

func uniqueName(prefix, base string, n int64) string {
	fifo := strings.HasSuffix(base, ".fifo")
	base = strings.TrimSuffix(base, ".fifo")
	name := fmt.Sprintf("%s%s-%d", prefix, base, n)
	if len(name) > 75 {
		name = name[len(name)-75:]
	}
	if fifo {
		name += ".fifo"
	}
	return name
}

// createQueue makes a queue for one case and deletes it when the case ends.
func (e *env) createQueue(t caseT, base string, attrs map[string]string) string {
	t.Helper()
	name := e.queueName(base)
	if strings.HasSuffix(name, ".fifo") {
		if attrs == nil {
			attrs = map[string]string{}
		}
		attrs["FifoQueue"] = "true"
	}
	out, err := e.api.CreateQueue(e.ctx(), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		t.Fatalf("create queue %s: %v", name, err)
	}
	t.Cleanup(func() {
		_, _ = e.api.DeleteQueue(e.ctx(), &sqs.DeleteQueueInput{QueueUrl: out.QueueUrl})
	})
	return *out.QueueUrl
}
