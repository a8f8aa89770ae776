package handler

import (
	"context"
	"time"

	"github.com/sqskit/sqskit/internal/ctxkey"
)

// Lease is a message's visibility lease as its runtime keeps it: the time
// until which no other receiver can get the message. Package consumer's
// heartbeat extends it while the handler runs, and cancels the handler's
// ctx (cause consumer.ErrLeaseLost) when it is lost; a record that must
// live exactly as long as the message is held, such as Idempotent's
// in-progress record, follows it. Until is safe for concurrent use.
type Lease interface {
	// Until returns when the message becomes visible again unless the
	// lease is extended: it moves forward with each extension.
	Until() time.Time
}

// WithLease returns ctx carrying l, for a runtime other than this
// module's (or a test) to give its handlers a lease.
func WithLease(ctx context.Context, l Lease) context.Context {
	return context.WithValue(ctx, ctxkey.Lease{}, l)
}

// LeaseFrom returns the lease of the message a handler's ctx belongs to.
// The Consumer gives a Handler's ctx one (not a BatchHandler's, whose call
// spans several messages). Elsewhere, in the Lambda adapter among them,
// where the event source mapping keeps visibility and nothing extends it,
// the lease is the ctx's deadline (the invocation's); with neither, nil.
func LeaseFrom(ctx context.Context) Lease {
	if l, ok := ctx.Value(ctxkey.Lease{}).(Lease); ok && l != nil {
		return l
	}
	if d, ok := ctx.Deadline(); ok {
		return deadlineLease(d)
	}
	return nil
}

// deadlineLease is a lease that ends at a fixed time.
type deadlineLease time.Time

func (d deadlineLease) Until() time.Time { return time.Time(d) }

// MessageContext returns, within a BatchHandler's call, the ctx of one of
// its messages: the message's process span and its producer's trace
// context (with a Propagator), for spans, metrics and logs about that
// message alone. The Consumer and the Lambda adapter give one for each
// message of the call; elsewhere it is ctx itself.
func MessageContext(ctx context.Context, m *Message) context.Context {
	if ctxs, ok := ctx.Value(ctxkey.Messages{}).(map[*Message]context.Context); ok {
		if mctx := ctxs[m]; mctx != nil {
			return mctx
		}
	}
	return ctx
}
