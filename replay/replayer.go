package replay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/internal/sqsrule"
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

// Options configure a Replayer. Zero values mean the defaults.
type Options struct {
	// Policy decides replay or escalation.
	Policy Policy
	// Target is the queue URL replays go to. Either Target or Sources.
	Target string
	// Sources routes by the message's DeadLetterQueueSourceArn: source ARN →
	// queue URL. Only queues listed here are ever sent to; a message from
	// anywhere else is escalated as NotRoutable.
	Sources map[string]string
	// OperatorQueue is the queue URL escalated messages go to, for humans.
	// Required.
	OperatorQueue string
	// WaitTime is the long poll of Run, 1 s to 20 s. Default 20 s.
	WaitTime time.Duration
	// VisibilityTimeout is asked for on receive: time to send and delete a
	// batch. Default 60 s.
	VisibilityTimeout time.Duration
	// RateLimit caps messages per second moved out of the DLQ (0: none).
	RateLimit float64
	// DryRun decides and reports but sends, deletes and holds nothing.
	DryRun bool
	// Filter, when set, picks the messages to replay or escalate; the others
	// are left in the DLQ untouched until their visibility timeout ends.
	Filter func(m *types.Message) bool
	// ErrorBackoff spaces Run's receives after errors. Default FullJitter,
	// 100 ms base, 10 s cap.
	ErrorBackoff backoff.Strategy
	// Logger receives decisions and failures, never bodies. Default silent.
	Logger *slog.Logger
	// Hooks are called for each outcome.
	Hooks Hooks
}

// Hooks are optional callbacks, called synchronously: keep them fast.
type Hooks struct {
	// Replayed: sent to target with the decision's attempt and delay.
	Replayed func(m *types.Message, d Decision, target string)
	// Held: kept in the DLQ until its replay is due.
	Held func(m *types.Message, d Decision, until time.Time)
	// Escalated: sent to the operator queue.
	Escalated func(m *types.Message, d Decision)
	// Failed: could not be moved now; it stays in the DLQ for a later pass.
	Failed func(m *types.Message, err error)
}

// Replayer moves messages from a dead-letter queue back to their queue, or
// to an operator queue. It is safe for concurrent use, but one Run at a time
// per Replayer makes sense.
type Replayer struct {
	client API
	dlq    string
	opts   Options
	policy Policy

	rateMu   sync.Mutex
	rateNext time.Time // when the next message may go, with RateLimit
}

// New returns a Replayer for the dead-letter queue dlqURL.
func New(client API, dlqURL string, optFns ...func(*Options)) (*Replayer, error) {
	var o Options
	for _, fn := range optFns {
		fn(&o)
	}
	bad := func(format string, args ...any) (*Replayer, error) {
		return nil, fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...)
	}
	switch {
	case client == nil:
		return bad("nil client")
	case dlqURL == "":
		return bad("empty dead-letter queue URL")
	case o.OperatorQueue == "":
		return bad("OperatorQueue is required: escalation is an explicit send, never a second redrive")
	case o.Target == "" && len(o.Sources) == 0:
		return bad("set Target or Sources")
	case o.Target != "" && len(o.Sources) > 0:
		return bad("set Target or Sources, not both")
	case o.RateLimit < 0:
		return bad("RateLimit %v is negative", o.RateLimit)
	}
	if err := o.Policy.Validate(); err != nil {
		return nil, err
	}
	if o.WaitTime == 0 {
		o.WaitTime = 20 * time.Second
	}
	if o.WaitTime < time.Second || o.WaitTime > sqsrule.MaxWaitSeconds*time.Second {
		return bad("WaitTime %v must be 1s to 20s", o.WaitTime)
	}
	if o.VisibilityTimeout == 0 {
		o.VisibilityTimeout = time.Minute
	}
	if o.VisibilityTimeout < time.Second || o.VisibilityTimeout > sqsrule.MaxVisibility {
		return bad("VisibilityTimeout %v must be 1s to 12h", o.VisibilityTimeout)
	}
	if o.ErrorBackoff == nil {
		o.ErrorBackoff = backoff.FullJitter{Base: 100 * time.Millisecond, Cap: 10 * time.Second}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Replayer{client: client, dlq: dlqURL, opts: o, policy: o.Policy.resolved()}, nil
}

// Report counts what a pass did.
type Report struct {
	Replayed, Held, Escalated, Failed, Skipped int
	// Decisions lists each message's decision, in DryRun only.
	Decisions []Decision
}

func (r *Report) add(o Report) {
	r.Replayed += o.Replayed
	r.Held += o.Held
	r.Escalated += o.Escalated
	r.Failed += o.Failed
	r.Skipped += o.Skipped
	r.Decisions = append(r.Decisions, o.Decisions...)
}
