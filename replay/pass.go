package replay

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/internal/sqserr"
	"github.com/sqskit/sqskit/internal/sqsrule"
	"github.com/sqskit/sqskit/internal/telemetry"
)

// state is where a message is in a pass, and where it ended up.
type state int

const (
	pending   state = iota // to be sent to its target
	replayed               // sent to its target
	escalated              // sent to the operator queue
	held                   // kept invisible in the DLQ until due
	waiting                // behind an earlier message of its FIFO group that did not move
	skipped                // not picked by the filter
	left                   // already seen by this Drain: left as it is
	failed                 // not moved now: an error from SQS
	rejected               // accepted by SQS in no form
)

// item is one DLQ message going through a pass.
type item struct {
	msg      *types.Message
	decision Decision
	target   string        // a source queue, or the operator queue
	group    string        // FIFO order key: "" when the message is not ordered
	delay    int32         // DelaySeconds on a standard target
	holdFor  time.Duration // how long to keep it in the DLQ (held, rejected)
	until    time.Time     // when its hold ends, once SQS took it
	form     form          // the escalation's form (see send.go)
	tries    int           // sends that failed in a retryable way
	solo     bool          // send alone: its batch was refused as a whole
	batch    *pass         // the pass it is in
	claimed  bool          // it holds its group's claim for its pass
	state    state
	err      error
	ctx      context.Context // the message's: its trace context and decision span
	span     telemetry.Span
}

// pass is one batch of DLQ messages going through the replayer: plan, send,
// settle, report.
type pass struct {
	r        *Replayer
	items    []*item
	now      time.Time
	received time.Time // when SQS handed the batch out, at the earliest: 12 h of holds count from it
	lambda   bool      // Lambda deletes what it is told succeeded: no deletes here
	claims   *claims   // FIFO groups in batches under way; nil: no other batch

	fatalMu sync.Mutex
	fatal   error // a call's error no retry cures: it ends Run and Drain
}

// failedForGood records a call's error if no retry can cure it (access
// denied, a queue that does not exist): Run and Drain end with it once the
// batch is done. Sends run on several goroutines.
func (p *pass) failedForGood(err error) {
	if !sqserr.Final(err) {
		return
	}
	p.fatalMu.Lock()
	defer p.fatalMu.Unlock()
	if p.fatal == nil {
		p.fatal = err
	}
}

// holdMargin is kept off SQS's 12 h, for the clocks' difference.
const holdMargin = time.Second

// lambdaReceiveAllowance is how long before an invocation its event source
// mapping may have received the batch: a batching window of up to 5 min,
// and the invocation's own start. Holds in Lambda count their 12 h from
// that far back.
const lambdaReceiveAllowance = 15 * time.Minute

// holdLimit is the longest hold SQS accepts at now: 12 h from the receive
// (SQS refuses more, it does not clamp), in whole seconds.
func (p *pass) holdLimit(now time.Time) time.Duration {
	return max(p.received.Add(sqsrule.MaxVisibility-holdMargin).Sub(now).Truncate(time.Second), 0)
}

// process runs one batch from the DLQ, received no earlier than received.
// isLeft marks messages the caller leaves as they are (seen before in this
// Drain); nil means none. claims, when set, keeps a FIFO group in one batch
// under way at a time. It returns the batch's items, its report, and the
// first error of a call that failed for good.
func (r *Replayer) process(ctx context.Context, msgs []types.Message, received time.Time, isLeft []bool, lambda bool, c *claims) ([]*item, Report, error) {
	p := &pass{r: r, items: make([]*item, len(msgs)), now: time.Now(), received: received, lambda: lambda, claims: c}
	for i := range msgs {
		it := &item{msg: &msgs[i], batch: p}
		if isLeft != nil && isLeft[i] {
			it.state = left
		}
		r.obs.begin(ctx, it)
		p.items[i] = it
		p.plan(it)
	}
	p.keepGroupOrder()
	if !r.opts.DryRun {
		p.send(ctx)
	}
	// Sent is enough: a FIFO DLQ gives a group's next message only once this
	// batch has deleted the ones before it, and on a standard DLQ another
	// batch's later message of the group now goes after them.
	p.claims.release(p.items)
	if !r.opts.DryRun {
		p.settle(ctx)
	}
	var rep Report
	for _, it := range p.items {
		p.count(&rep, it)
		p.notify(it)
	}
	return p.items, rep, p.fatal
}

// plan decides what to do with one message: where it goes, with which
// delay, or how long it stays.
func (p *pass) plan(it *item) {
	r, m := p.r, it.msg
	group := m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
	defer func() {
		// SQS orders a group on FIFO queues only; on standard ones a group
		// id names a fair-queue tenant.
		if group != "" && (sqsrule.IsFIFO(r.dlq) || sqsrule.IsFIFO(it.target)) {
			it.group = group
		}
	}()
	if it.state == left {
		return
	}
	if r.opts.Filter != nil && !p.picked(m) {
		it.state = skipped
		return
	}
	d := r.policy.Decide(m, p.now)
	if d.Action == Replay {
		it.target = r.route(m)
		switch {
		case it.target == "" && d.Metadata.SourceArn == "":
			d = escalation(d, NotRoutable, "the message has no DeadLetterQueueSourceArn: SQS did not dead-letter it")
		case it.target == "":
			d = escalation(d, NotRoutable, "no target for source %q (not in Sources)", d.Metadata.SourceArn) // an ARN SQS set
		case sqsrule.IsFIFO(it.target) && group == "":
			d = escalation(d, NotRoutable, "the FIFO target needs a MessageGroupId and the message has none")
		case sqsrule.IsFIFO(it.target) && sqsrule.CheckGroupID(group) != nil:
			d = escalation(d, NotRoutable, "the message's MessageGroupId is not valid on a FIFO target")
		}
	}
	it.decision = d
	if d.Action == Escalate {
		it.target = r.operator
		return
	}
	p.schedule(it)
}

// picked runs the Filter; one that panics picks nothing.
func (p *pass) picked(m *types.Message) (ok bool) {
	defer func() {
		if v := recover(); v != nil {
			p.r.opts.Logger.LogAttrs(context.Background(), slog.LevelError, "replay: Filter panicked; the message is left in the DLQ",
				slog.String("message_id", aws.ToString(m.MessageId)), slog.Any("panic", v))
			ok = false
		}
	}()
	return p.r.opts.Filter(m)
}

// escalation turns a decision into an escalation.
func escalation(d Decision, reason Reason, format string, args ...any) Decision {
	d.Action, d.Reason, d.Detail = Escalate, reason, fmt.Sprintf(format, args...)
	d.Metadata.Reason, d.Metadata.Detail = d.Reason, d.Detail
	return d
}

// schedule applies the delay rule (see the package doc): on a standard
// target a delay up to 900 s goes out at once as DelaySeconds; longer ones,
// and every one on a FIFO target, are held in the DLQ until the start of
// the message's last life plus the delay.
func (p *pass) schedule(it *item) {
	const maxDelay = sqsrule.MaxDelaySeconds * time.Second
	d, fifo := it.decision.Delay, sqsrule.IsFIFO(it.target)
	if !fifo && d <= maxDelay {
		it.delay = seconds(d)
		return
	}
	start, ok := lifeStart(it.msg, it.decision.Metadata.SentDelay)
	if !ok {
		// Without a SentTimestamp no later receive could tell that a hold is
		// over: send now rather than hold forever.
		if !fifo {
			it.delay = seconds(maxDelay)
		}
		return
	}
	wait := start.Add(d).Sub(p.now)
	switch {
	case wait <= 0:
	case !fifo && wait <= maxDelay:
		it.delay = seconds(wait)
	default:
		it.state, it.holdFor = held, min(wait, p.holdLimit(p.now))
	}
}

// seconds rounds d up to whole seconds.
func seconds(d time.Duration) int32 { return int32((d + time.Second - 1) / time.Second) }

// lifeStart is when the message's last life on its queue began: its
// SentTimestamp, which SQS sets, plus the DelaySeconds the replayer sent it
// with (at most 900 s, checked by readMetadata).
func lifeStart(m *types.Message, sentDelay time.Duration) (time.Time, bool) {
	ms, err := strconv.ParseInt(m.Attributes[string(types.MessageSystemAttributeNameSentTimestamp)], 10, 64)
	if err != nil || ms <= 0 {
		return time.Time{}, false
	}
	return time.UnixMilli(ms).Add(sentDelay), true
}

// route picks the target: the configured queue, or the allow-listed queue of
// the source SQS names. A message never names its own destination.
func (r *Replayer) route(m *types.Message) string {
	if r.opts.Target != "" {
		return r.opts.Target
	}
	return r.opts.Sources[m.Attributes[string(types.MessageSystemAttributeNameDeadLetterQueueSourceArn)]]
}

// keepGroupOrder keeps a FIFO group's later messages behind an earlier one
// that does not move in this pass (held, skipped, left), and a whole group
// out of this pass while another batch under way has it: they wait, and
// come back to the DLQ.
func (p *pass) keepGroupOrder() {
	stopped := map[string]bool{}
	for _, it := range p.items {
		if it.group == "" {
			continue
		}
		if !stopped[it.group] && !p.claims.claim(it) {
			stopped[it.group] = true
		}
		if stopped[it.group] {
			if it.state == pending || it.state == held {
				it.state = waiting
			}
			continue
		}
		if it.state != pending {
			stopped[it.group] = true
		}
	}
}

func (p *pass) count(rep *Report, it *item) {
	if p.r.opts.DryRun {
		rep.Decisions = append(rep.Decisions, it.decision)
	}
	switch it.state {
	case replayed:
		rep.Replayed++
	case escalated:
		rep.Escalated++
	case held:
		rep.Held++
	case waiting:
		rep.Waiting++
	case skipped:
		rep.Skipped++
	case rejected:
		rep.Rejected++
	case left:
	case pending:
		if !p.r.opts.DryRun {
			rep.Failed++ // never sent: cannot happen, but never count it as moved
		} else if it.decision.Action == Escalate {
			rep.Escalated++
		} else {
			rep.Replayed++
		}
	default:
		rep.Failed++
	}
}

func (p *pass) notify(it *item) {
	if it.state != left {
		p.r.obs.decided(it, p.r.opts.DryRun)
	}
	if p.r.opts.DryRun {
		return
	}
	ctx, h, log, m, d := it.ctx, &p.r.opts.Hooks, p.r.opts.Logger, it.msg, it.decision
	id := slog.String("message_id", aws.ToString(m.MessageId))
	switch it.state {
	case replayed:
		log.LogAttrs(ctx, slog.LevelInfo, "replay: replayed", id, slog.Int("attempt", d.Attempt), slog.Duration("delay", d.Delay))
		if h.Replayed != nil {
			h.Replayed(ctx, m, d, it.target)
		}
	case escalated:
		log.LogAttrs(ctx, slog.LevelWarn, "replay: escalated", id, slog.String("reason", string(d.Reason)), slog.String("detail", d.Detail))
		if h.Escalated != nil {
			h.Escalated(ctx, m, d)
		}
	case held:
		log.LogAttrs(ctx, slog.LevelDebug, "replay: held in the DLQ until due", id, slog.Time("until", it.until))
		if h.Held != nil {
			h.Held(ctx, m, d, it.until)
		}
	case waiting:
		log.LogAttrs(ctx, slog.LevelDebug, "replay: waiting behind an earlier message of its group", id)
	case rejected:
		log.LogAttrs(ctx, slog.LevelError, "replay: SQS accepts the message in no form; left in the DLQ for a human", id,
			slog.String("reason", string(d.Reason)), slog.Any("error", it.err), slog.Time("held_until", it.until))
		if h.Rejected != nil {
			h.Rejected(ctx, m, d, it.err)
		}
	case failed:
		log.LogAttrs(ctx, slog.LevelWarn, "replay: failed; left in the DLQ", id, slog.Any("error", it.err))
		if h.Failed != nil {
			h.Failed(ctx, m, it.err)
		}
	}
}

// claims are the FIFO groups of the batches under way in one Run or Drain.
// SQS itself keeps a FIFO DLQ's group in one receive at a time until its
// messages are deleted or visible again; claims hold the same line for a
// standard DLQ feeding a FIFO target, and for a batch that outlives its
// visibility timeout. A nil *claims claims everything.
type claims struct {
	mu     sync.Mutex
	owners map[string]*item // group → the first item of the batch that has it
}

func newClaims() *claims { return &claims{owners: map[string]*item{}} }

// claim gives it's group to its batch, unless another batch has it. Items of
// one batch share a claim through the first of them.
func (c *claims) claim(it *item) bool {
	if c == nil {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	owner, taken := c.owners[it.group]
	if !taken {
		c.owners[it.group] = it
		it.claimed = true
		return true
	}
	return owner.batch == it.batch
}

// release frees the groups a batch claimed.
func (c *claims) release(items []*item) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, it := range items {
		if it.claimed {
			delete(c.owners, it.group)
		}
	}
}
