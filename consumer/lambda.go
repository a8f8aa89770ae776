package consumer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
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

// Lambda handles SQS events in AWS Lambda, from an event source mapping or
// as an EventBridge Pipes target, reporting partial batch failures. Use it
// as lambda.Start(l.Handle) with ReportBatchItemFailures enabled on the
// event source mapping (Pipes reads the same response).
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

// Event is one invocation's batch of SQS records, in either shape Lambda
// delivers: an SQS event source mapping's {"Records":[…]} object, or the
// bare JSON array of the same records that EventBridge Pipes passes to a
// Lambda target. Convert an events.SQSEvent with Event(e).
type Event events.SQSEvent

// UnmarshalJSON accepts the object and the array shape.
func (e *Event) UnmarshalJSON(b []byte) error {
	if trimmed := bytes.TrimLeft(b, " \t\r\n"); len(trimmed) > 0 && trimmed[0] == '[' {
		var records []events.SQSMessage
		if err := json.Unmarshal(b, &records); err != nil {
			return err
		}
		*e = Event{Records: records}
		return nil
	}
	var ev events.SQSEvent
	if err := json.Unmarshal(b, &ev); err != nil {
		return err
	}
	*e = Event(ev)
	return nil
}

// Handle handles one invocation: use it as lambda.Start(l.Handle), for an
// SQS event source mapping or an EventBridge Pipes target. The response
// lists exactly the messageIds that failed or were not handled, each once;
// an empty list means all succeeded. An event with no records is a success.
// FIFO is recognised by the .fifo suffix of the event source ARN. Handle
// returns when every message is settled, or when ctx is done (messages not
// finished are then reported failed), even if a handler panics or calls
// runtime.Goexit.
func (l *Lambda) Handle(ctx context.Context, event Event) (events.SQSEventResponse, error) {
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
	errs := l.callBatch(ctx, msgs)
	if fifo {
		holdBackAfterFailures(msgs, errs, l.opts.StopOnFirstFailure)
	}
	for i, m := range msgs {
		if errs[i] != nil {
			l.opts.Hooks.failed(m, errs[i])
		}
	}
	return errs
}

// callBatch runs the batch handler on its own goroutine, so a
// runtime.Goexit ends only that goroutine: a panic, a Goexit, or ctx ending
// first fails every message.
func (l *Lambda) callBatch(ctx context.Context, msgs []*Message) []error {
	done := make(chan []error, 1)
	go func() {
		returned := false
		defer func() {
			if !returned {
				done <- nil
			}
		}()
		errs := invokeBatch(ctx, l.batch, msgs)
		returned = true
		done <- errs
	}()
	var errs []error
	var cause error
	select {
	case errs = <-done:
		cause = ErrHandlerExited
	case <-ctx.Done():
		cause = fmt.Errorf("%w: the invocation ended before the batch handler returned", ErrNotStarted)
	}
	if errs == nil {
		errs = make([]error, len(msgs))
		for i := range errs {
			errs[i] = cause
		}
		l.opts.Logger.LogAttrs(ctx, slog.LevelError, "consumer: batch handler did not return", slog.String("error", cause.Error()))
	}
	for _, err := range errs {
		var p *PanicError
		if errors.As(err, &p) {
			l.opts.Logger.LogAttrs(ctx, slog.LevelError, "consumer: batch handler panicked", slog.String("error", p.Error()), slog.String("stack", string(p.Stack)))
			break
		}
	}
	return errs
}
