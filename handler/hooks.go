package handler

import (
	"context"
	"time"
)

// Hooks are optional callbacks, called synchronously on the goroutine where
// the event happens: keep them fast, and safe for concurrent use. Each gets
// the message's ctx: it carries the message's process span (when tracing
// is on) and the producer's trace context (when a Propagator is set).
// Message bodies are the caller's to log or not.
type Hooks struct {
	// Received: the invocation began with the message.
	Received func(ctx context.Context, m *Message)
	// Handled: the handler returned nil after took.
	Handled func(ctx context.Context, m *Message, took time.Duration)
	// Failed: the message failed (handler error, panic, timeout, or not
	// started).
	Failed func(ctx context.Context, m *Message, err error)
	// Held: a Hold outcome set the message's visibility through the
	// LambdaOptions.Parker (not a failure, though Lambda is told it failed
	// so it keeps the message).
	Held func(ctx context.Context, m *Message, d time.Duration)
	// Parked: an Escalate outcome's message is on the parking queue, and
	// Lambda is told to delete it.
	Parked func(ctx context.Context, m *Message, reason string)
}

func (h *Hooks) received(ctx context.Context, m *Message) {
	if h.Received != nil {
		h.Received(ctx, m)
	}
}

func (h *Hooks) handled(ctx context.Context, m *Message, took time.Duration) {
	if h.Handled != nil {
		h.Handled(ctx, m, took)
	}
}

func (h *Hooks) failed(ctx context.Context, m *Message, err error) {
	if h.Failed != nil {
		h.Failed(ctx, m, err)
	}
}

func (h *Hooks) held(ctx context.Context, m *Message, d time.Duration) {
	if h.Held != nil {
		h.Held(ctx, m, d)
	}
}

func (h *Hooks) parked(ctx context.Context, m *Message, reason string) {
	if h.Parked != nil {
		h.Parked(ctx, m, reason)
	}
}
