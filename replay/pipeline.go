package replay

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/tracing"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/internal/sqserr"
	"github.com/sqskit/sqskit/internal/sqsrule"
	"github.com/sqskit/sqskit/internal/telemetry"
)

// Run replays continuously until ctx is done, or a call fails for good (a
// queue does not exist, access is denied to a receive, a send, a delete or
// a hold), whose error it returns once the batches under way are done.
// Receive errors worth retrying are retried after ReceiveBackoff, one
// receive probing while the others wait.
//
// Up to Concurrency batches are in flight at once. One receive long-polls
// the DLQ all the time; the others join while receives come back full and
// rest when one comes back empty. A batch in progress when ctx ends is
// finished first: its sends, deletes and holds use a context that outlives
// ctx by up to VisibilityTimeout, so nothing sent is left undeleted for want
// of a context.
func (r *Replayer) Run(ctx context.Context) error {
	return r.newLoop(ctx, false).run()
}

// Drain makes one pass over what is in the DLQ now, for a CLI or a cron
// job, and returns what it did. Messages it has seen before in the pass
// (held, skipped or failed ones coming back) are left as they are, with the
// rest of their FIFO group. It stops at the first receive that brings
// nothing new; on a FIFO DLQ, where a group in a batch under way hides its
// later messages, at the first such receive made while no other receive or
// batch was under way and none started or ended. A receive that fails in a
// retryable way is retried after ReceiveBackoff, five times in a row at
// most; after that, or on a call's final error (as Run's), Drain returns
// the error with what it did so far. Batches in progress are always
// finished.
func (r *Replayer) Drain(ctx context.Context) (Report, error) {
	l := r.newLoop(ctx, true)
	err := l.run()
	return l.report, err
}

// drainReceiveAttempts bounds the receives in a row that may fail in a
// retryable way before Drain gives up.
const drainReceiveAttempts = 5

const maxReceive = 10

// loop is Run or Drain: Concurrency workers, each receiving a batch and
// taking it through a pass, then receiving again.
type loop struct {
	r      *Replayer
	drain  bool
	outer  context.Context // the caller's: batches outlive it
	ctx    context.Context // receives and waits; ends with the loop
	cancel context.CancelFunc
	gate   receiveGate
	claims *claims

	mu        sync.Mutex
	receiving int           // receives under way
	batches   int           // batches under way
	epoch     int           // batches started or ended so far
	wake      chan struct{} // closed (and replaced) to wake resting workers
	seen      map[string]bool
	report    Report
	err       error
}

func (r *Replayer) newLoop(ctx context.Context, drain bool) *loop {
	l := &loop{r: r, drain: drain, outer: ctx, wake: make(chan struct{}), seen: map[string]bool{}, claims: newClaims()}
	l.ctx, l.cancel = context.WithCancel(ctx)
	l.gate.init(r.opts.ReceiveBackoff)
	return l
}

func (l *loop) run() error {
	var wg sync.WaitGroup
	for i := range l.r.opts.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.worker(i)
		}()
	}
	wg.Wait()
	l.cancel()
	if l.err != nil {
		return l.err
	}
	if l.drain {
		return l.outer.Err()
	}
	return nil
}

// worker receives and processes batches until the loop ends.
func (l *loop) worker(i int) {
	r := l.r
	wait := r.opts.WaitTime
	if l.drain {
		wait = time.Second
	}
	size := receiveSize(r.opts.RateLimit)
	probing := false // this worker probes a failing DLQ for the others
	for l.ctx.Err() == nil {
		if !probing && !l.gate.enter(l.ctx) {
			return
		}
		if !r.rate.admit(l.ctx, size) {
			return
		}
		l.mu.Lock()
		l.receiving++
		epoch := l.epoch
		l.mu.Unlock()
		asked := time.Now() // SQS hands the messages out after this
		msgs, err := r.receive(l.ctx, wait, size)
		r.rate.took(size, len(msgs)) // messages received are processed even if the loop ends meanwhile
		if err != nil {
			l.mu.Lock()
			l.receiving--
			l.mu.Unlock()
			probing = l.receiveFailed(err, probing)
			continue
		}
		probing = false
		l.gate.succeeded()
		isLeft, fresh := l.markSeen(msgs)
		if fresh == 0 {
			if l.rest(i, epoch) {
				return
			}
			continue
		}
		l.mu.Lock()
		l.receiving--
		l.batches++
		l.epoch++
		l.mu.Unlock()
		if !l.drain && len(msgs) == size {
			l.wakeAll() // more is waiting: rested workers join in
		}
		work, cancel := context.WithTimeout(context.WithoutCancel(l.outer), r.opts.VisibilityTimeout)
		_, rep, fatal := r.process(work, msgs, asked, isLeft, false, l.claims)
		cancel()
		l.mu.Lock()
		l.report.add(rep)
		l.batches--
		l.epoch++
		l.mu.Unlock()
		if fatal != nil {
			l.fail(fatal)
		}
		if l.drain {
			l.wakeAll() // a batch ended: its FIFO groups are free; look again
		}
	}
}

// receiveFailed handles a failed receive and reports whether this worker
// probes the DLQ for the others next, having waited its backoff.
func (l *loop) receiveFailed(err error, wasProbing bool) (probing bool) {
	if l.ctx.Err() != nil {
		return false
	}
	if sqserr.Final(err) {
		l.fail(err)
		return false
	}
	d, probe, failures := l.gate.failed(wasProbing)
	if !probe {
		return false
	}
	if l.drain && failures >= drainReceiveAttempts {
		l.fail(err)
		return false
	}
	l.r.opts.Logger.LogAttrs(l.ctx, slog.LevelWarn, "replay: receive failed; retrying", slog.String("error", err.Error()), slog.Duration("delay", d))
	return backoff.Sleep(l.ctx, d)
}

// markSeen reports, in Drain, which messages this pass has seen before (they
// are left as they are) and how many are new. Run leaves nothing.
func (l *loop) markSeen(msgs []types.Message) (isLeft []bool, fresh int) {
	if !l.drain {
		return nil, len(msgs)
	}
	isLeft = make([]bool, len(msgs))
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, m := range msgs {
		id := aws.ToString(m.MessageId)
		if l.seen[id] {
			isLeft[i] = true
			continue
		}
		l.seen[id] = true
		fresh++
	}
	return isLeft, fresh
}

// rest handles a receive that brought nothing new, and reports whether the
// worker is done. epoch is the loop's epoch when the receive began.
//
// Drain on a standard DLQ ends at the first empty receive. On a FIFO DLQ a
// group in a batch under way hides its later messages, so an empty receive
// proves nothing until that batch has ended and a receive has looked again:
// Drain ends on an empty receive when nothing else is under way and no
// batch started or ended while it ran; otherwise the worker looks again at
// once (nothing is under way) or once a batch has ended. In Run, worker 0
// keeps polling and the others rest until a receive comes back full.
func (l *loop) rest(i, epoch int) (done bool) {
	l.mu.Lock()
	l.receiving--
	switch {
	case l.drain && (!sqsrule.IsFIFO(l.r.dlq) || l.batches == 0 && l.receiving == 0 && l.epoch == epoch):
		l.mu.Unlock()
		l.cancel()
		return true
	case l.drain && l.batches == 0 && l.receiving == 0, !l.drain && i == 0:
		l.mu.Unlock()
		return false
	}
	ch := l.wake
	l.mu.Unlock()
	select {
	case <-ch:
		return false
	case <-l.ctx.Done():
		return true
	}
}

func (l *loop) wakeAll() {
	l.mu.Lock()
	close(l.wake)
	l.wake = make(chan struct{})
	l.mu.Unlock()
}

// fail ends the loop with err.
func (l *loop) fail(err error) {
	l.mu.Lock()
	if l.err == nil {
		l.err = err
	}
	l.mu.Unlock()
	l.cancel()
}

// receiveFloor is the shortest wait after a failed receive, whatever
// ReceiveBackoff says: no strategy makes Run spin.
const receiveFloor = 100 * time.Millisecond

// receiveGate spaces receives after failures: the worker whose receive
// fails first waits its backoff and probes the DLQ again; the others wait at
// the gate until a receive succeeds.
type receiveGate struct {
	mu       sync.Mutex
	failing  bool
	open     chan struct{} // closed when the DLQ answers again
	iter     *backoff.Iterator
	longest  time.Duration
	failures int // probes in a row that failed
}

func (g *receiveGate) init(s backoff.Strategy) { g.iter = backoff.NewIterator(s) }

// enter waits until receives may go, or ctx ends.
func (g *receiveGate) enter(ctx context.Context) bool {
	g.mu.Lock()
	if !g.failing {
		g.mu.Unlock()
		return true
	}
	ch := g.open
	g.mu.Unlock()
	select {
	case <-ch:
		return true
	case <-ctx.Done():
		return false
	}
}

// failed records a failed receive. The worker that turns the gate to
// failing, or whose probe failed, probes next, after d; any other waits at
// the gate (probe false).
func (g *receiveGate) failed(prober bool) (d time.Duration, probe bool, failures int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case !g.failing:
		g.failing, g.open = true, make(chan struct{})
	case !prober:
		return 0, false, g.failures
	}
	g.failures++
	d = g.iter.NextBackOff()
	if d == backoff.Stop {
		d = max(g.longest, time.Second) // a drained budget, say: keep waiting, never spin
	}
	d = max(d, receiveFloor)
	g.longest = max(g.longest, d)
	return d, true, g.failures
}

// succeeded opens the gate.
func (g *receiveGate) succeeded() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.failing {
		close(g.open)
		g.failing = false
	}
	g.failures, g.longest = 0, 0
	g.iter.Reset()
}

// receiveInput asks for up to n messages with every attribute.
func receiveInput(queue string, wait, visibility time.Duration, n int) *sqs.ReceiveMessageInput {
	return &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(queue), MaxNumberOfMessages: int32(n),
		WaitTimeSeconds:             int32(wait / time.Second),
		VisibilityTimeout:           int32(visibility / time.Second),
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		MessageAttributeNames:       []string{"All"},
	}
}

// receive takes up to n messages from the DLQ.
func (r *Replayer) receive(ctx context.Context, wait time.Duration, n int) ([]types.Message, error) {
	cctx, call := r.obs.startCall(ctx, r.dlq, tracing.SpanKindClient, telemetry.OperationReceive, telemetry.OperationReceive, 0)
	out, err := r.client.ReceiveMessage(cctx, receiveInput(r.dlq, wait, r.opts.VisibilityTimeout, n))
	if err != nil {
		if ctx.Err() != nil {
			call.end(cctx, 0, nil) // cut short by the end of Run: no failure
		} else {
			call.end(cctx, 0, err)
		}
		return nil, err
	}
	call.end(cctx, len(out.Messages), nil)
	r.obs.consumed.Add(ctx, int64(len(out.Messages)), r.obs.attrs)
	return out.Messages, nil
}

// receiveSize is how many messages one receive asks for: ten, or with a
// RateLimit below ten, the rate rounded down (at least one), so that one
// receive is never more than a second's worth.
func receiveSize(rate float64) int {
	if rate <= 0 {
		return maxReceive
	}
	return min(max(int(min(rate, maxReceive)), 1), maxReceive)
}
