package replay

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/metrics"
	"github.com/aws/smithy-go/tracing"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/consumer"
	"github.com/sqskit/sqskit/fifo"
	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/internal/dispatch"
	"github.com/sqskit/sqskit/internal/queueref"
	"github.com/sqskit/sqskit/internal/sqsrule"
	"github.com/sqskit/sqskit/internal/telemetry"
)

// API is the part of the SQS client a Replayer calls.
type API interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
	DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
	ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
}

var _ API = (*sqs.Client)(nil)

// ErrConfig matches every invalid option with errors.Is.
var ErrConfig = errors.New("replay: invalid options")

// defaultConcurrency is how many batches a Replayer keeps in flight unless
// told otherwise: at 10 ms a call, sixteen batches of ten move several
// thousand messages a second.
const defaultConcurrency = 16

// maxConcurrency bounds Options.Concurrency.
const maxConcurrency = 100

// Options configure a Replayer. Zero values mean the defaults. The
// replayer runs on package consumer's engine: the rules of its options
// (whole seconds, ranges, the floor after a failed receive) are the
// consumer's.
type Options struct {
	// Policy decides replay or escalation and the delays. The zero value is
	// the default policy (see Policy).
	Policy Policy
	// Target is the queue URL replays go to; it must be neither the DLQ nor
	// the operator queue. Set Target or Sources, not both.
	// It may be a queue name (see New).
	Target string
	// Sources routes by the DeadLetterQueueSourceArn SQS sets on each DLQ
	// message (never by anything in the message's own attributes): source
	// queue ARN → queue URL. Only the queues listed here are ever sent to; a
	// message from anywhere else is escalated as NotRoutable. No URL may be
	// the DLQ or the operator queue.
	Sources map[string]string
	// WaitTime is Run's long poll, whole seconds from 1 s to 20 s (as
	// consumer.Options.WaitTime). Default 20 s. Drain polls for 1 s.
	WaitTime time.Duration
	// VisibilityTimeout is asked for on receive: how long a batch has to be
	// decided and sent before its messages come back to the DLQ (the
	// consumer's heartbeat extends it while a batch is under way). Whole
	// seconds from 1 s to 12 h. Default 60 s.
	VisibilityTimeout time.Duration
	// Concurrency is how many handler calls run at once, as in
	// consumer.Options: the replayer's handler takes one receive's batch (up
	// to ten messages) per call. 1 to 100. Default 16. On a FIFO DLQ, SQS
	// keeps a group in one batch at a time, and within a batch a group's
	// messages are sent in order.
	Concurrency int
	// RateLimit caps the messages per second taken from the DLQ
	// (consumer.Options.RateLimit): every message received counts, whether
	// it is then moved or not, in bursts of at most one receive (or a tenth
	// of a second's worth when that is more). 0 means no cap; otherwise a
	// finite positive number.
	RateLimit float64
	// DryRun decides and reports (Report.Decisions) but sends and deletes
	// nothing: each message is held in the DLQ for VisibilityTimeout, as a
	// receive would keep it. Default false.
	DryRun bool
	// Filter, when set, picks the messages to replay or escalate (default
	// nil: every message); the others are left in the DLQ (held) until
	// VisibilityTimeout ends. On a FIFO DLQ a group's later messages stay
	// behind one that is left. It is called from several goroutines at once;
	// one that panics picks nothing (the panic is logged).
	Filter func(m *types.Message) bool
	// ReceiveBackoff spaces receives after a receive failed (throttling, a
	// server error), as consumer.Options.ReceiveBackoff. Default FullJitter,
	// 100 ms base, 10 s cap.
	ReceiveBackoff backoff.Strategy
	// TracerProvider, when set, records the consumer's spans ("receive
	// <dlq>", "process <dlq>" per message, with its decision:
	// sqskit.replay.outcome, sqskit.replay.reason, sqskit.replay.attempt;
	// "delete <dlq>", "change_visibility <dlq>") and the senders' ("send
	// <queue>", PRODUCER, under the decision span of the batch's first
	// message). Default none: smithy-go's interface
	// (smithyoteltracing.Adapt for OpenTelemetry).
	TracerProvider tracing.TracerProvider
	// MeterProvider, when set, records the consumer's metrics of the DLQ
	// (messaging.client.consumed.messages, …), decisions by outcome and
	// reason (sqskit.replay.decisions), and the senders' messages sent by
	// destination and error.type (messaging.client.sent.messages). Default
	// none: smithy-go's interface (smithyotelmetrics.Adapt for
	// OpenTelemetry).
	MeterProvider metrics.MeterProvider
	// Propagator, when set, extracts each DLQ message's trace context (its
	// AWSTraceHeader, and String attributes such as traceparent) into its
	// ctx: its hooks' and its process span's parent, so the decision shows
	// in the producer's trace. Either way the replayer sends a message on
	// with its AWSTraceHeader and trace attributes as they are. Default
	// none.
	Propagator handler.Propagator
	// Logger receives decisions and failures, never bodies or attribute
	// values. Default silent.
	Logger *slog.Logger
	// Hooks are called for each outcome. Default none.
	Hooks Hooks
}

// Hooks are optional callbacks, called synchronously and possibly from
// several goroutines at once: keep them fast and safe for concurrent use.
// Each gets the message's ctx: it carries the message's decision span (with
// a TracerProvider) and its producer's trace context (with a Propagator).
//
// In Run and Drain each outcome is counted in the Report, then its hook is
// called, once the consumer reports it: in order, on one goroutine, none
// dropped however far the hooks lag (they queue in memory meanwhile). A
// slow hook delays the outcomes behind it, and Drain's return, up to the
// consumer's shutdown bound (its 20 s ShutdownTimeout + 1 s after the last
// message settled); outcomes still queued then are missing from the Report.
type Hooks struct {
	// Replayed: sent to target with the decision's attempt and delay, and
	// deleted from the DLQ (in Lambda, reported for Lambda to delete).
	Replayed func(ctx context.Context, m *types.Message, d Decision, target string)
	// Held: kept in the DLQ until its replay is due.
	Held func(ctx context.Context, m *types.Message, d Decision, until time.Time)
	// Escalated: sent to the operator queue, and deleted from the DLQ.
	Escalated func(ctx context.Context, m *types.Message, d Decision)
	// Failed: could not be moved now, or was sent but its delete from the
	// DLQ failed (err says which); it stays in the DLQ for a later pass.
	Failed func(ctx context.Context, m *types.Message, err error)
	// Rejected: SQS accepts the message in no form the replayer can build,
	// not even as an escalation with its attributes or metadata left out
	// (err matches ErrRejected). It stays in the DLQ and needs a human: in
	// Lambda it is held for Policy.MaxBackoff (at most 12 h from its
	// receive; if the hold fails too, err says so); in Run and Drain it
	// comes back after the visibility timeout.
	Rejected func(ctx context.Context, m *types.Message, d Decision, err error)
}

// Replayer moves messages from a dead-letter queue back to their queue, or
// to an operator queue. It is its Policy run as a batch handler on package
// consumer's engine (Run, Drain) and on the Lambda adapter (HandleLambda),
// sending through one fifo.Sender per target. It is safe for concurrent
// use.
type Replayer struct {
	client    engineClient
	dlq       string
	operator  string
	opts      Options
	policy    Policy
	senders   map[string]*fifo.Sender // one per target
	queues    []*queueref.Ref         // the DLQ, the operator queue and the targets, resolved before a pass
	decisions telemetry.Counter
	attrs     *telemetry.Attrs // the DLQ's metric attributes; nil when metrics are off
}

// New returns a Replayer for the dead-letter queue dlqURL, escalating to
// operatorQueueURL. One of Options.Target and Options.Sources is required.
// Each queue (dlqURL, operatorQueueURL, Target, the URLs of Sources) may be
// given by name: Run and Drain resolve names with the client's GetQueueUrl
// before their first receive (once per Replayer), and return an error
// matching ErrConfig when the client has no GetQueueUrl or a queue does not
// exist; HandleLambda does the same at its first invocation (an error
// leaves the batch in the DLQ). A name and a URL are the same queue when
// the URL ends with the name.
// Invalid options return an error matching ErrConfig, before any call to
// SQS; a nil option function is skipped.
func New(client API, dlqURL, operatorQueueURL string, optFns ...func(*Options)) (*Replayer, error) {
	var o Options
	for _, fn := range optFns {
		if fn != nil { // an option left unset by a condition
			fn(&o)
		}
	}
	if dispatch.IsNil(client) {
		return nil, fmt.Errorf("%w: nil client (a nil *sqs.Client included)", ErrConfig)
	}
	if err := validateQueues(dlqURL, operatorQueueURL, o); err != nil {
		return nil, err
	}
	if err := o.Policy.Validate(); err != nil {
		return nil, err
	}
	if err := resolve(&o); err != nil {
		return nil, err
	}
	r := &Replayer{client: engineClient{API: client}, dlq: dlqURL, operator: operatorQueueURL, opts: o, policy: o.Policy.resolved(),
		senders: map[string]*fifo.Sender{}}
	// The consumer checks the options it runs with: refused here, not at Run.
	if _, err := consumer.NewBatch(r.client, dlqURL, func(context.Context, []*handler.Message) []error { return nil },
		r.consumerOptions(consumer.Hooks{}, false)); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	targets := []string{o.Target}
	if o.Target == "" {
		targets = slices.Collect(maps.Values(o.Sources))
	}
	for _, t := range targets {
		s, err := fifo.NewSender(r.client, t, func(so *fifo.SenderOptions) {
			so.Dedup = fifo.ProvidedDedup() // every replay carries its deterministic id
			// A message that keeps failing stays in the DLQ for a later
			// receive rather than holding its batch: three calls at most.
			so.SendMaxAttempts = maxSendTries
			so.MaxMessageBytes = r.policy.MaxMessageBytes
			so.TracerProvider, so.MeterProvider, so.Logger = o.TracerProvider, o.MeterProvider, o.Logger
		})
		if err != nil {
			return nil, fmt.Errorf("%w: target %s: %w", ErrConfig, t, err)
		}
		r.senders[t] = s
		r.queues = append(r.queues, queueref.New(t))
	}
	r.queues = append(r.queues, queueref.New(dlqURL), queueref.New(operatorQueueURL))
	if m := telemetry.NewMeter(o.MeterProvider, scope); m.On() {
		r.attrs = telemetry.QueueAttrs(dlqURL)
		r.decisions = m.Counter(telemetry.MetricReplayDecisions, "{message}", "Outcomes of messages taken from the DLQ, by sqskit.replay.outcome and sqskit.replay.reason.")
	}
	return r, nil
}

// maxSendTries bounds the calls that carry one replay in a batch; after
// them it is left in the DLQ for a later receive.
const maxSendTries = 3

// consumerOptions are the consumer's options for the replayer's, with the
// replayer's hooks; Drain polls for 1 s.
func (r *Replayer) consumerOptions(hooks consumer.Hooks, drain bool) func(*consumer.Options) {
	return func(o *consumer.Options) {
		o.Concurrency = r.opts.Concurrency
		o.MaxReceiveConcurrency = r.opts.Concurrency
		o.WaitTime = r.opts.WaitTime
		if drain {
			o.WaitTime = time.Second
		}
		o.VisibilityTimeout = r.opts.VisibilityTimeout
		o.OnFailure = consumer.LeaveToTimeout // a failed message comes back after its visibility timeout
		o.RateLimit = r.opts.RateLimit
		o.ReceiveBackoff = r.opts.ReceiveBackoff
		o.ParkingQueue = r.resolved(r.operator)
		o.TracerProvider, o.MeterProvider, o.Logger = r.opts.TracerProvider, r.opts.MeterProvider, r.opts.Logger
		if r.opts.Propagator != nil {
			o.Propagator = r.opts.Propagator
		}
		o.Hooks = hooks
	}
}

func configError(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...)
}

// validateQueues refuses the settings that make a message loop: replaying or
// escalating into the DLQ itself, or escalating to the queue replays go to,
// however each queue is spelled (queueref.Same: a name matches a URL that
// ends with it).
func validateQueues(dlq, operator string, o Options) error {
	switch {
	case dlq == "":
		return configError("empty dead-letter queue URL")
	case operator == "":
		return configError("empty operator queue URL: escalation is an explicit send, never a second redrive")
	case queueref.Same(operator, dlq):
		return configError("the operator queue is the DLQ: an escalation would come back to be escalated again")
	case o.Target == "" && len(o.Sources) == 0:
		return configError("set Target or Sources")
	case o.Target != "" && len(o.Sources) > 0:
		return configError("set Target or Sources, not both")
	}
	targets := []string{o.Target}
	if o.Target == "" {
		targets = targets[:0]
		for arn, url := range o.Sources {
			if arn == "" || url == "" {
				return configError("Sources has an empty ARN or URL")
			}
			targets = append(targets, url)
		}
	}
	for _, t := range targets {
		switch {
		case queueref.Same(t, dlq):
			return configError("a replay target is the DLQ: replays would never leave it")
		case queueref.Same(t, operator):
			return configError("a replay target is the operator queue: escalations and replays must not mix")
		}
	}
	return nil
}

// resolve checks what the consumer does not and fills in the defaults.
func resolve(o *Options) error {
	if o.Concurrency < 0 || o.Concurrency > maxConcurrency {
		return configError("Concurrency %d must be 0 (the default) to %d", o.Concurrency, maxConcurrency)
	}
	o.Concurrency = cmp.Or(o.Concurrency, defaultConcurrency)
	o.WaitTime = cmp.Or(o.WaitTime, sqsrule.MaxWaitSeconds*time.Second)
	o.VisibilityTimeout = cmp.Or(o.VisibilityTimeout, time.Minute)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Report counts what a pass did.
type Report struct {
	// Replayed and Escalated messages left the DLQ for their target or the
	// operator queue.
	Replayed, Escalated int
	// Held messages stay in the DLQ, invisible until their replay is due.
	Held int
	// Waiting messages stay in the DLQ behind an earlier message of their
	// FIFO group that did not move (held, failed, skipped, rejected).
	Waiting int
	// Failed messages could not be moved now (an error from SQS), or were
	// sent but could not be deleted from the DLQ (they will be sent again);
	// they come back after the visibility timeout.
	Failed int
	// Skipped messages were not picked by the Filter.
	Skipped int
	// Rejected messages are accepted by SQS in no form (see Hooks.Rejected).
	Rejected int
	// Decisions lists each message's decision, in DryRun only.
	Decisions []Decision
}
