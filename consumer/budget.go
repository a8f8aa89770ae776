package consumer

import "context"

// Budget bounds the handler calls of several consumers together (a
// service's share of a database's connections, say), on top of each
// one's Concurrency; package service offers one with weights per queue.
//
// A worker with a message waiting calls Acquire before it starts the
// handler and Release once the handler has returned (with NewBatch, once
// per batch). While it waits in Acquire the message has not started: when
// Run's ctx ends the wait is cancelled and the message released like any
// other not started. A handler kept past HandlerTimeout keeps its slot
// until it returns. Acquire returns nil once a slot is held, or an error
// (ctx's, when ctx is done) when it is not; the worker then tries again
// after 10 ms, and does not call Release. Both must be safe for concurrent
// use.
type Budget interface {
	Acquire(ctx context.Context) error
	Release()
}
