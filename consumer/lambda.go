package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqskit/sqskit/internal/sqsrule"
)

// LambdaOptions configure a Lambda handler. Zero values mean the defaults.
type LambdaOptions struct {
	// Concurrency is how many messages of one invocation run at once (FIFO
	// groups still one at a time). Default 1, in order, as Lambda's own
	// examples do.
	Concurrency int
	// DeadlineMargin: no message starts once the invocation's deadline is
	// closer than this; those not started are reported failed, so a timeout
	// does not make Lambda retry the whole batch. Default 2 s.
	DeadlineMargin time.Duration
	// StopOnFirstFailure applies the literal rule for FIFO sources: at the
	// first failure, every message not yet started is reported failed.
	// Default false: only the failed message's group stops.
	StopOnFirstFailure bool
	// FailWhenAllFail returns an error when every message failed, so the
	// invocation itself counts as failed (for alarms and for event sources
	// that back off on errors). The whole batch is then retried, as it would
	// be from the response. Default false.
	FailWhenAllFail bool
	// Logger receives failures (with a panic's stack), never bodies. Default
	// silent.
	Logger *slog.Logger
	// Hooks are called for each message.
	Hooks Hooks
}

// Lambda handles SQS events in AWS Lambda (and EventBridge Pipes targets),
// reporting partial batch failures. Use it as lambda.Start(l.Handle) with
// ReportBatchItemFailures enabled on the event source mapping.
//
// It keeps no state between invocations, so one value serves concurrent
// invocations.
type Lambda struct {
	handler Handler
	batch   BatchHandler
	opts    LambdaOptions
}

// ErrConfig matches every invalid option with errors.Is.
var ErrConfig = errors.New("consumer: invalid options")

// NewLambda returns a Lambda handler around h.
func NewLambda(h Handler, optFns ...func(*LambdaOptions)) (*Lambda, error) {
	if h == nil {
		return nil, fmt.Errorf("%w: nil handler", ErrConfig)
	}
	return resolveLambda(&Lambda{handler: h}, optFns)
}

// NewBatchLambda returns a Lambda handler that gives each invocation's
// messages to h at once and reports the ones it failed. Concurrency,
// DeadlineMargin and StopOnFirstFailure do not apply: h decides.
func NewBatchLambda(h BatchHandler, optFns ...func(*LambdaOptions)) (*Lambda, error) {
	if h == nil {
		return nil, fmt.Errorf("%w: nil batch handler", ErrConfig)
	}
	return resolveLambda(&Lambda{batch: h}, optFns)
}

func resolveLambda(l *Lambda, optFns []func(*LambdaOptions)) (*Lambda, error) {
	var o LambdaOptions
	for _, fn := range optFns {
		fn(&o)
	}
	switch {
	case o.Concurrency < 0:
		return nil, fmt.Errorf("%w: Concurrency %d is negative", ErrConfig, o.Concurrency)
	case o.DeadlineMargin < 0:
		return nil, fmt.Errorf("%w: DeadlineMargin %v is negative", ErrConfig, o.DeadlineMargin)
	}
	if o.Concurrency == 0 {
		o.Concurrency = 1
	}
	if o.DeadlineMargin == 0 {
		o.DeadlineMargin = 2 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	l.opts = o
	return l, nil
}

// MalformedEventError is returned for an event Lambda should not have sent:
// a record without a messageId cannot be reported on its own, so the whole
// batch is failed and retried.
type MalformedEventError struct {
	Record int
	Reason string
}

func (e *MalformedEventError) Error() string {
	return fmt.Sprintf("consumer: malformed SQS event: record %d: %s", e.Record, e.Reason)
}

// ErrAllFailed is returned, with the response, when FailWhenAllFail is set
// and every message failed.
var ErrAllFailed = errors.New("consumer: every message of the batch failed")

// Handle handles one invocation. The response lists exactly the messageIds
// that failed or were not handled, each once; an empty list means all
// succeeded. An event with no records is a success. FIFO is recognised by
// the .fifo suffix of the event source ARN.
func (l *Lambda) Handle(ctx context.Context, event events.SQSEvent) (events.SQSEventResponse, error) {
	msgs := make([]*Message, 0, len(event.Records))
	seen := make(map[string]bool, len(event.Records))
	fifo := false
	for i, r := range event.Records {
		if r.MessageId == "" {
			return events.SQSEventResponse{}, &MalformedEventError{Record: i, Reason: "no messageId"}
		}
		if seen[r.MessageId] {
			continue // a duplicate record: handle and report it once
		}
		seen[r.MessageId] = true
		fifo = fifo || sqsrule.IsFIFO(r.EventSourceARN)
		m := fromEvent(r)
		l.opts.Hooks.received(m)
		msgs = append(msgs, m)
	}
	var resp events.SQSEventResponse
	for i, err := range l.outcomes(ctx, msgs, fifo) {
		if err != nil {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: msgs[i].ID})
		}
	}
	if l.opts.FailWhenAllFail && len(msgs) > 0 && len(resp.BatchItemFailures) == len(msgs) {
		return resp, ErrAllFailed
	}
	return resp, nil
}

// outcomes runs the invocation's messages through the per-message or the
// batch handler and returns each one's result.
func (l *Lambda) outcomes(ctx context.Context, msgs []*Message, fifo bool) []error {
	if l.batch == nil {
		run := &batchRun{
			handler: l.handler, concurrency: l.opts.Concurrency, margin: l.opts.DeadlineMargin,
			fifo: fifo, stopAll: l.opts.StopOnFirstFailure, logger: l.opts.Logger, hooks: &l.opts.Hooks,
		}
		return run.run(ctx, msgs)
	}
	if len(msgs) == 0 {
		return nil
	}
	results := l.callBatch(ctx, msgs)
	errs := make([]error, len(msgs))
	for i, m := range msgs {
		errs[i] = errNoResult
		if i < len(results) {
			errs[i] = results[i]
		}
		if errs[i] != nil {
			l.opts.Hooks.failed(m, errs[i])
		}
	}
	return errs
}

// callBatch runs the batch handler; a panic fails every message.
func (l *Lambda) callBatch(ctx context.Context, msgs []*Message) (results []error) {
	defer func() {
		if v := recover(); v != nil {
			p := &PanicError{Value: v, Stack: debug.Stack()}
			l.opts.Logger.LogAttrs(ctx, slog.LevelError, "consumer: batch handler panicked", slog.String("error", p.Error()), slog.String("stack", string(p.Stack)))
			results = make([]error, len(msgs))
			for i := range results {
				results[i] = p
			}
		}
	}()
	return l.batch(ctx, msgs)
}
