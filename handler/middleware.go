package handler

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/aws/smithy-go/metrics"

	"github.com/sqskit/sqskit/internal/telemetry"
)

// Middleware wraps a Handler with behaviour of its own (a timeout, logging,
// metrics, a router, a decoder). It must return a Handler safe for
// concurrent use.
type Middleware func(Handler) Handler

// BatchMiddleware wraps a BatchHandler, as Middleware wraps a Handler.
type BatchMiddleware func(BatchHandler) BatchHandler

// Chain wraps h in mws, the first listed outermost: Chain(h, a, b) runs a,
// which runs b, which runs h. A nil middleware is skipped. Options'
// Middleware fields (here and in package consumer) are applied this way,
// inside the runtime's own layer, which turns a panic or runtime.Goexit
// anywhere in the chain into the message's failure, bounds it with the
// consumer's HandlerTimeout, and carries the process span and the
// producer's trace context in ctx.
func Chain(h Handler, mws ...Middleware) Handler {
	for i := len(mws) - 1; i >= 0; i-- {
		if mws[i] != nil {
			h = mws[i](h)
		}
	}
	return h
}

// ChainBatch wraps h in mws, the first listed outermost, as Chain does.
func ChainBatch(h BatchHandler, mws ...BatchMiddleware) BatchHandler {
	for i := len(mws) - 1; i >= 0; i-- {
		if mws[i] != nil {
			h = mws[i](h)
		}
	}
	return h
}

// Timeout gives each call of the handler a ctx that ends after d, with
// cause ErrHandlerTimeout, and makes an error returned once it has ended
// match ErrHandlerTimeout too. It is cooperative: the handler must watch its
// ctx, and one that finishes its work anyway and returns nil succeeds. The
// consumer's HandlerTimeout (default 15 min) stays the hard bound: at it the
// message fails whether the handler returns or not. Use Timeout for a
// tighter, per-handler bound (5 s for a payment call) below that one. A d of
// zero or less adds no timeout.
func Timeout(d time.Duration) Middleware {
	return func(next Handler) Handler {
		if d <= 0 {
			return next
		}
		return func(ctx context.Context, m *Message) error {
			ctx, cancel := context.WithTimeoutCause(ctx, d, ErrHandlerTimeout)
			defer cancel()
			return timedOut(ctx, d, next(ctx, m))
		}
	}
}

// BatchTimeout is Timeout for a BatchHandler: the ctx of each call ends
// after d, and the failures it returns once it has ended match
// ErrHandlerTimeout.
func BatchTimeout(d time.Duration) BatchMiddleware {
	return func(next BatchHandler) BatchHandler {
		if d <= 0 {
			return next
		}
		return func(ctx context.Context, msgs []*Message) []error {
			ctx, cancel := context.WithTimeoutCause(ctx, d, ErrHandlerTimeout)
			defer cancel()
			errs := next(ctx, msgs)
			for i, err := range errs {
				errs[i] = timedOut(ctx, d, err)
			}
			return errs
		}
	}
}

func timedOut(ctx context.Context, d time.Duration, err error) error {
	if err == nil || is(err, ErrHandlerTimeout) || context.Cause(ctx) != ErrHandlerTimeout {
		return err
	}
	return fmt.Errorf("%w after %v: %w", ErrHandlerTimeout, d, err)
}

// Logging logs each call of the handler to l: at Debug when it succeeds, at
// Warn (with the error) when it fails, with the message id, its group id
// (on FIFO and fair queues), its receive count and the duration; never the
// body or attribute values. It logs with the handler's ctx, so a handler
// of slog that reads trace context from ctx can correlate. A nil l logs
// nothing.
func Logging(l *slog.Logger) Middleware {
	return func(next Handler) Handler {
		if l == nil {
			return next
		}
		return func(ctx context.Context, m *Message) error {
			start := time.Now()
			err := next(ctx, m)
			logOutcome(ctx, l, m, err, time.Since(start))
			return err
		}
	}
}

// BatchLogging logs each call of a BatchHandler to l: one line per call at
// Debug (messages, failures, duration), and one per failed message at Warn,
// as Logging does.
func BatchLogging(l *slog.Logger) BatchMiddleware {
	return func(next BatchHandler) BatchHandler {
		if l == nil {
			return next
		}
		return func(ctx context.Context, msgs []*Message) []error {
			start := time.Now()
			errs := next(ctx, msgs)
			took := time.Since(start)
			failed := 0
			for i, m := range msgs {
				var err error
				if i < len(errs) {
					err = errs[i]
				} else {
					err = ErrNoResult
				}
				if err != nil {
					failed++
					logOutcome(ctx, l, m, err, took)
				}
			}
			l.LogAttrs(ctx, slog.LevelDebug, "handler: batch handled", slog.Int("messages", len(msgs)), slog.Int("failed", failed), slog.Duration("duration", took))
			return errs
		}
	}
}

func logOutcome(ctx context.Context, l *slog.Logger, m *Message, err error, took time.Duration) {
	level, msg := slog.LevelDebug, "handler: message handled"
	if err != nil {
		level, msg = slog.LevelWarn, "handler: message failed"
	}
	if !l.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, 0, 5)
	attrs = append(attrs, slog.String("message_id", m.ID))
	if g := m.GroupID(); g != "" {
		attrs = append(attrs, slog.String("group_id", g))
	}
	attrs = append(attrs, slog.String("receive_count", strconv.Itoa(m.ReceiveCount())), slog.Duration("duration", took))
	if err != nil {
		attrs = append(attrs, slog.String("error", errorText(err)))
	}
	l.LogAttrs(ctx, level, msg, attrs...)
}

// errorText is err.Error(), or, when that panics (a typed nil *T whose
// Error dereferences it), a note naming its type: a middleware that reads
// a handler's error must not fail the whole batch over one message. The
// runtime then fails that message as the panic it is.
func errorText(err error) (s string) {
	defer func() {
		if recover() != nil {
			s = fmt.Sprintf("a %T that panics when read", err)
		}
	}()
	return err.Error()
}

// Metrics records the duration of each call of the handler it wraps, as
// the histogram sqskit.handler.duration (seconds) with the attributes
// sqskit.handler.name (name) and, on failure, error.type (see docs/telemetry.md).
// The runtime already records messaging.process.duration for the whole
// chain when given a MeterProvider; use Metrics to measure one handler
// inside it, such as each branch of a router. A nil or no-op mp records
// nothing.
func Metrics(mp metrics.MeterProvider, name string) Middleware {
	h := handlerDuration(mp)
	attrs := telemetry.NewAttrs(telemetry.KV{Key: telemetry.AttrHandlerName, Value: name})
	return func(next Handler) Handler {
		if !h.On() {
			return next
		}
		return func(ctx context.Context, m *Message) error {
			start := time.Now()
			err := next(ctx, m)
			recordCall(ctx, h, attrs, time.Since(start), err)
			return err
		}
	}
}

// BatchMetrics is Metrics for a BatchHandler: one duration per call, with
// error.type when any message of the call failed (that of the first).
func BatchMetrics(mp metrics.MeterProvider, name string) BatchMiddleware {
	h := handlerDuration(mp)
	attrs := telemetry.NewAttrs(telemetry.KV{Key: telemetry.AttrHandlerName, Value: name})
	return func(next BatchHandler) BatchHandler {
		if !h.On() {
			return next
		}
		return func(ctx context.Context, msgs []*Message) []error {
			start := time.Now()
			errs := next(ctx, msgs)
			var first error
			for i := range msgs {
				if i >= len(errs) {
					first = ErrNoResult
				} else if errs[i] != nil {
					first = errs[i]
				}
				if first != nil {
					break
				}
			}
			recordCall(ctx, h, attrs, time.Since(start), first)
			return errs
		}
	}
}

func handlerDuration(mp metrics.MeterProvider) telemetry.Histogram {
	return telemetry.NewMeter(mp, scope).Histogram(telemetry.MetricHandlerDuration, "s", "Duration of a handler wrapped in handler.Metrics, by sqskit.handler.name and error.type.")
}

func recordCall(ctx context.Context, h telemetry.Histogram, attrs *telemetry.Attrs, took time.Duration, err error) {
	defer func() { _ = recover() }() // an instrument that panics costs this measurement; so does a typed-nil error
	if err != nil {
		attrs = attrs.With(telemetry.KV{Key: telemetry.AttrErrorType, Value: errorType(err)})
	}
	h.Seconds(ctx, took, attrs)
}
