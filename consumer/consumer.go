package consumer

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/internal/dispatch"
	"github.com/sqskit/sqskit/internal/sqsrule"
)

// API is the part of the SQS client a Consumer calls.
type API interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
	ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
	// GetQueueAttributes reads the queue's VisibilityTimeout once per Run,
	// when Options.VisibilityTimeout is unset.
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

var _ API = (*sqs.Client)(nil)

// FailurePolicy says what happens to a message whose handler failed.
type FailurePolicy int

const (
	// RetryWithBackoff makes the message visible again after a delay from
	// Options.RedeliveryBackoff, keyed by its ApproximateReceiveCount:
	// retries in place spread out, until SQS's redrive policy moves it to a
	// dead-letter queue. The default.
	RetryWithBackoff FailurePolicy = iota
	// ReleaseNow makes the message visible at once.
	ReleaseNow
	// LeaveToTimeout does nothing: the message comes back when its
	// visibility timeout expires.
	LeaveToTimeout
)

// Consumer long-polls one queue and runs a handler for each message (or for
// each receive's messages, with NewBatch).
type Consumer struct {
	client   API
	queueURL string
	fifo     bool
	handler  handler.Handler
	batch    handler.BatchHandler
	opts     Options
	running  atomic.Bool
	stats    counters
	obs      observer
	parker   handler.Parker // nil without Options.ParkingQueue
	limiter  *limiter       // nil without Options.RateLimit
	ctl      control        // pauses and what Status reports, across Runs
	// runStarted, set by this package's tests only, sees each Run's state.
	runStarted func(*run)
}

// ErrConfig matches every invalid option with errors.Is.
var ErrConfig = errors.New("consumer: invalid options")

// ErrRunning is returned by Run while another Run of the same Consumer is
// going on.
var ErrRunning = errors.New("consumer: already running")

// New returns a Consumer that runs h for each message of queueURL. FIFO is
// recognised by the .fifo suffix. queueURL may be a queue name: Run resolves
// it first with GetQueueUrl when the client has that method (as *sqs.Client
// does), and ends with ErrConfig when it has not. Invalid options (a nil or typed-nil
// client, an empty URL, a nil handler, an option out of range) return an
// error matching ErrConfig; a nil option function is skipped. Nothing is
// started until Run.
func New(client API, queueURL string, h handler.Handler, optFns ...func(*Options)) (*Consumer, error) {
	if h == nil {
		return nil, configError("nil handler.Handler")
	}
	return construct(client, queueURL, h, nil, optFns)
}

// NewBatch returns a Consumer that hands each receive's messages (up to ten)
// to h at once and deletes those h reports as done, with the partial-failure
// contract of handler.NewBatchLambda: h returns one result per message, in order, nil
// for success; a missing result, a panic or a timeout fails the message. On a
// FIFO queue, a message after a failed one of its group (with
// StopOnFirstFailure, after any failed one) is not deleted even if h
// returned nil for it, so order holds. Concurrency bounds the batches
// handled at once; HandlerTimeout applies to each call of h.
func NewBatch(client API, queueURL string, h handler.BatchHandler, optFns ...func(*Options)) (*Consumer, error) {
	if h == nil {
		return nil, configError("nil handler.BatchHandler")
	}
	return construct(client, queueURL, nil, h, optFns)
}

func construct(client API, queueURL string, h handler.Handler, bh handler.BatchHandler, optFns []func(*Options)) (*Consumer, error) {
	if dispatch.IsNil(client) {
		return nil, configError("nil client")
	}
	if queueURL == "" {
		return nil, configError("empty queue URL")
	}
	var o Options
	for _, fn := range optFns {
		if fn != nil { // an option left unset by a condition
			fn(&o)
		}
	}
	if err := resolve(&o); err != nil {
		return nil, err
	}
	if o.VisibilityTimeout != 0 {
		if err := resolveVisibility(&o, o.VisibilityTimeout); err != nil {
			return nil, err
		}
	}
	switch {
	case h != nil && len(o.BatchMiddleware) > 0:
		return nil, configError("BatchMiddleware with a Handler: use handler.Middleware")
	case bh != nil && len(o.Middleware) > 0:
		return nil, configError("Middleware with a BatchHandler: use handler.BatchMiddleware")
	case h != nil:
		h = handler.Chain(h, o.Middleware...)
	default:
		bh = handler.ChainBatch(bh, o.BatchMiddleware...)
	}
	c := &Consumer{client: client, queueURL: queueURL, fifo: sqsrule.IsFIFO(queueURL), handler: h, batch: bh, opts: o, limiter: newLimiter(o.RateLimit)}
	c.ctl.queue = queueURL
	c.obs = newObserver(&c.opts, &c.stats, queueURL)
	if o.ParkingQueue != "" {
		pa, ok := client.(ParkerAPI)
		if !ok {
			return nil, configError("ParkingQueue needs a client that also sends (SendMessageBatch) and changes one message's visibility (ChangeMessageVisibility), as *sqs.Client does")
		}
		p, err := NewParker(pa, queueURL, o.ParkingQueue, func(po *ParkerOptions) {
			po.Logger, po.TracerProvider, po.MeterProvider = o.Logger, o.TracerProvider, o.MeterProvider
		})
		if err != nil {
			return nil, err
		}
		c.parker = p
	}
	return c, nil
}

// Stats is a snapshot of a Consumer's counters since it was made.
type Stats struct {
	Received, Handled, Failed, Deleted, DeleteFailed, Extended, LeaseLost, Released int64
	// Held counts Hold outcomes; Parked, messages parked and deleted.
	Held, Parked int64
	// InFlight is the number of messages held now, at most MaxInFlight.
	InFlight int64
	// ExtensionFailures counts the signals lost to user extensions (see
	// Hooks): a hook, handler.Propagator, TracerProvider, MeterProvider, span or
	// instrument that panicked or returned nil, or hooks too slow to keep up.
	ExtensionFailures int64
}

type counters struct {
	received, handled, failed, deleted, deleteFailed, extended, leaseLost, released, inFlight atomic.Int64
	held, parked                                                                              atomic.Int64
}

// Stats returns the counters.
func (c *Consumer) Stats() Stats {
	s := &c.stats
	return Stats{
		Received: s.received.Load(), Handled: s.handled.Load(), Failed: s.failed.Load(), Deleted: s.deleted.Load(),
		DeleteFailed: s.deleteFailed.Load(), Extended: s.extended.Load(), LeaseLost: s.leaseLost.Load(),
		Released: s.released.Load(), InFlight: s.inFlight.Load(), Held: s.held.Load(), Parked: s.parked.Load(),
		ExtensionFailures: c.obs.faults.Count(),
	}
}
