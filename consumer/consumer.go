package consumer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/internal/sqsrule"
)

// API is the part of the SQS client a Consumer calls.
type API interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
	ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
}

var _ API = (*sqs.Client)(nil)

// FailurePolicy says what happens to a message whose handler failed.
type FailurePolicy int

const (
	// RetryWithBackoff makes the message visible again after a delay from
	// Options.Retry, keyed by its ApproximateReceiveCount: retries in place
	// spread out, until SQS's redrive policy moves it to a dead-letter queue.
	// The default.
	RetryWithBackoff FailurePolicy = iota
	// ReleaseNow makes the message visible at once.
	ReleaseNow
	// LeaveToTimeout does nothing: the message comes back when its
	// visibility timeout expires.
	LeaveToTimeout
)

// Options configure a Consumer. Zero values mean the defaults.
type Options struct {
	// Handler handles each message. Required.
	Handler Handler
	// Concurrency is how many handlers run at once. Default 10.
	Concurrency int
	// MaxInFlight bounds the messages held at once: received, waiting for a
	// handler, running, or awaiting delete. Pollers receive only for free
	// places. Default 2 × Concurrency; at least Concurrency.
	MaxInFlight int
	// Pollers is how many receive loops run. Default 1.
	Pollers int
	// WaitTime is the long-poll wait, 1 s to 20 s. Default 20 s.
	WaitTime time.Duration
	// VisibilityTimeout is asked for on receive and on every extension,
	// 1 s to 12 h, whole seconds. Default 30 s.
	VisibilityTimeout time.Duration
	// HeartbeatInterval is how often visibility is checked and extended;
	// messages with less than VisibilityTimeout − HeartbeatInterval left are
	// extended. Must be shorter than VisibilityTimeout. Default a third of it.
	HeartbeatInterval time.Duration
	// MaxExtension caps how long after a receive a message may be kept
	// invisible. Default and maximum 12 h (SQS's cap).
	MaxExtension time.Duration
	// OnFailure is the failure policy. Default RetryWithBackoff.
	OnFailure FailurePolicy
	// Retry gives RetryWithBackoff's delay for attempt ReceiveCount−1.
	// Default EqualJitter, 1 s base, 5 min cap.
	Retry backoff.Strategy
	// ReceiveBackoff spaces receives after errors. Default FullJitter,
	// 100 ms base, 10 s cap.
	ReceiveBackoff backoff.Strategy
	// DeleteFlushInterval is how long a successful message waits for nine
	// others before its delete batch is sent. Default 100 ms.
	DeleteFlushInterval time.Duration
	// ShutdownTimeout is how long running handlers may finish after Run's
	// ctx is done, before their ctx is cancelled. Default 30 s.
	ShutdownTimeout time.Duration
	// StopOnFirstFailure, on FIFO queues, handles every message as one
	// sequence and gives up all waiting messages at a failure. Default
	// false: only the failed message's group stops.
	StopOnFirstFailure bool
	// Logger receives failures and lifecycle events, never bodies. Default
	// silent.
	Logger *slog.Logger
	// Hooks are called for each message event.
	Hooks Hooks
}

// Consumer long-polls one queue and runs a handler for each message.
type Consumer struct {
	client   API
	queueURL string
	fifo     bool
	opts     Options
	running  atomic.Bool
	stats    counters
}

// ErrRunning is returned by Run while another Run of the same Consumer is
// going on.
var ErrRunning = errors.New("consumer: already running")

// New returns a Consumer for queueURL. FIFO is recognised by the .fifo
// suffix. Invalid options return an error matching ErrConfig; nothing is
// started until Run.
func New(client API, queueURL string, optFns ...func(*Options)) (*Consumer, error) {
	var o Options
	for _, fn := range optFns {
		fn(&o)
	}
	if client == nil {
		return nil, fmt.Errorf("%w: nil client", ErrConfig)
	}
	if queueURL == "" {
		return nil, fmt.Errorf("%w: empty queue URL", ErrConfig)
	}
	if err := resolve(&o); err != nil {
		return nil, err
	}
	return &Consumer{client: client, queueURL: queueURL, fifo: sqsrule.IsFIFO(queueURL), opts: o}, nil
}

func resolve(o *Options) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...)
	}
	if o.Handler == nil {
		return bad("nil Handler")
	}
	if o.Concurrency < 0 || o.MaxInFlight < 0 || o.Pollers < 0 {
		return bad("Concurrency, MaxInFlight and Pollers must not be negative")
	}
	o.Concurrency = cmp.Or(o.Concurrency, 10)
	o.MaxInFlight = cmp.Or(o.MaxInFlight, 2*o.Concurrency)
	if o.MaxInFlight < o.Concurrency {
		return bad("MaxInFlight %d is below Concurrency %d", o.MaxInFlight, o.Concurrency)
	}
	o.Pollers = cmp.Or(o.Pollers, 1)
	o.WaitTime = cmp.Or(o.WaitTime, 20*time.Second)
	if o.WaitTime < time.Second || o.WaitTime > sqsrule.MaxWaitSeconds*time.Second {
		return bad("WaitTime %v must be 1s to 20s", o.WaitTime)
	}
	o.VisibilityTimeout = cmp.Or(o.VisibilityTimeout, 30*time.Second)
	if o.VisibilityTimeout < time.Second || o.VisibilityTimeout > sqsrule.MaxVisibility || o.VisibilityTimeout%time.Second != 0 {
		return bad("VisibilityTimeout %v must be whole seconds from 1s to 12h", o.VisibilityTimeout)
	}
	o.HeartbeatInterval = cmp.Or(o.HeartbeatInterval, o.VisibilityTimeout/3)
	if o.HeartbeatInterval <= 0 || o.HeartbeatInterval >= o.VisibilityTimeout {
		return bad("HeartbeatInterval %v must be shorter than VisibilityTimeout %v", o.HeartbeatInterval, o.VisibilityTimeout)
	}
	o.MaxExtension = cmp.Or(o.MaxExtension, sqsrule.MaxVisibility)
	if o.MaxExtension < 0 || o.MaxExtension > sqsrule.MaxVisibility {
		return bad("MaxExtension %v must be at most 12h", o.MaxExtension)
	}
	if o.OnFailure < RetryWithBackoff || o.OnFailure > LeaveToTimeout {
		return bad("unknown OnFailure %d", o.OnFailure)
	}
	if o.Retry == nil {
		o.Retry = backoff.EqualJitter{Base: time.Second, Cap: 5 * time.Minute}
	}
	if o.ReceiveBackoff == nil {
		o.ReceiveBackoff = backoff.FullJitter{Base: 100 * time.Millisecond, Cap: 10 * time.Second}
	}
	for _, s := range []backoff.Strategy{o.Retry, o.ReceiveBackoff} {
		if err := backoff.Validate(s); err != nil {
			return bad("%v", err)
		}
	}
	o.DeleteFlushInterval = cmp.Or(o.DeleteFlushInterval, 100*time.Millisecond)
	o.ShutdownTimeout = cmp.Or(o.ShutdownTimeout, 30*time.Second)
	if o.DeleteFlushInterval < 0 || o.ShutdownTimeout < 0 {
		return bad("DeleteFlushInterval and ShutdownTimeout must not be negative")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Stats is a snapshot of a Consumer's counters since it was made.
type Stats struct {
	Received, Handled, Failed, Deleted, DeleteFailed, Extended, LeaseLost, Released int64
	// InFlight is the number of messages held now.
	InFlight int64
}

type counters struct {
	received, handled, failed, deleted, deleteFailed, extended, leaseLost, released, inFlight atomic.Int64
}

// Stats returns the counters.
func (c *Consumer) Stats() Stats {
	s := &c.stats
	return Stats{
		Received: s.received.Load(), Handled: s.handled.Load(), Failed: s.failed.Load(), Deleted: s.deleted.Load(),
		DeleteFailed: s.deleteFailed.Load(), Extended: s.extended.Load(), LeaseLost: s.leaseLost.Load(),
		Released: s.released.Load(), InFlight: s.inFlight.Load(),
	}
}
