// Package consumer runs a handler for each message of an SQS queue, as a
// long-polling Consumer in a service or as a Lambda handler, with one
// handler contract and the same failure rules in both.
//
//	c, err := consumer.New(client, queueURL, func(ctx context.Context, m *consumer.Message) error {
//		return process(ctx, m.Body)
//	}, func(o *consumer.Options) { o.Concurrency = 32 })
//	err = c.Run(ctx) // until ctx is done
//
//	l, err := consumer.NewLambda(handler)
//	lambda.Start(l.Handle) // ReportBatchItemFailures on the event source, or a Pipes target
//
// NewBatch and NewBatchLambda take a BatchHandler instead, which gets a
// receive's (or an invocation's) messages at once and reports each one's
// outcome.
//
// # Delivery semantics
//
// At least once. A message is deleted only after its handler returned nil
// and while its visibility is still held, so a crash at any point leaves it
// to come back. It can be handled twice when a delete fails, when its lease
// is lost, or when SQS delivers a duplicate (standard queues): make
// handlers idempotent. A message redelivered to this consumer while it is
// still held here (its visibility lapsed) is not handled again; the held
// copy takes the newest receipt handle, so the delete that follows really
// deletes. A delete is never sent for a message whose visibility has
// lapsed: on a standard queue SQS would answer success without deleting.
//
// # What a handler's failure does
//
// A handler is untrusted code. Whatever it does fails only its own message
// (a BatchHandler: the messages of its call) and never hangs Run or Handle:
//
//   - an error fails the message: with RetryWithBackoff (the default) it
//     becomes visible again after RedeliveryBackoff's delay for its receive
//     count, with ReleaseNow at once, with LeaveToTimeout when its
//     visibility timeout ends; RetryAfter in the error sets the delay for
//     one message;
//   - a panic is a failure (*PanicError, with the stack in the log), and so
//     is an error that panics when read (a nil *T returned as an error);
//   - a handler gets its own copy of the Message: changing it changes
//     nothing of what is deleted, released or reported;
//   - runtime.Goexit (what t.FailNow does) is a failure (ErrHandlerExited);
//     the worker it ended is replaced;
//   - a handler still running after HandlerTimeout (default 15 min) has its
//     ctx cancelled with the cause ErrHandlerTimeout, and its message fails
//     at once with ErrHandlerTimeout: it is released per the policy and its
//     place freed, and whatever the handler returns later is ignored. Go
//     cannot stop a goroutine, so a handler that ignores its ctx keeps one of
//     the Concurrency workers until it returns.
//
// Redrive to a dead-letter queue is SQS's job: set maxReceiveCount.
//
// # FIFO queues
//
// FIFO is recognised by the .fifo suffix of the queue URL or event source
// ARN, never by MessageGroupId (fair queues put group ids on standard
// queues). Messages of one group are handled one at a time in order; groups
// run in parallel. At a failure the group's later messages are not handled:
// the consumer releases them in order, Lambda reports them as failed. With
// StopOnFirstFailure the whole batch is one sequence and the first failure
// stops everything after it (the literal Lambda rule). Receives use a
// ReceiveRequestAttemptId that a retry after a failure in transit reuses
// (see package fifo); the retry asks for as many messages as the first
// attempt and keeps its places, since SQS returns the first attempt's
// messages whatever it is asked.
//
// The maxReceiveCount rule. SQS returns the messages behind a group's head
// in the same receive as the head, as many as it can, and a message that
// cannot start before the head is released when the head fails: each such
// receive counts toward its ApproximateReceiveCount although its handler
// never ran. Behind a poison message, its group-mates would reach
// maxReceiveCount with it and be dead-lettered unhandled. The Consumer
// limits this: a failed message comes back alone (receives ask for one
// message while it is due back, and its release waits, up to one long-poll
// wait, for receives in flight that could take its group-mates along), so
// the messages behind it pay for its first failure only, once for each
// Consumer that receives the group without knowing it failed (a restarted
// Consumer starts with no such memory). So on a FIFO queue set
//
//	maxReceiveCount ≥ attempts you allow one message + Consumers reading the queue + 1
//
// (3 attempts, 2 service instances: at least 6). With Lambda the event
// source mapping receives, and the messages behind a failing head come in
// its batch every time: behind a poison message they reach maxReceiveCount
// with it, whatever its value. On FIFO sources whose messages can fail for
// good, use a batch size of 1, or expect group-mates in the dead-letter
// queue and replay them (package replay).
//
// # The long-polling consumer
//
// Places: at most MaxInFlight messages are held at once, from their receive
// until their delete or release is acknowledged, and Concurrency handlers
// run. A receive asks only for places free now: ten, or fewer when that is
// all there is and nothing else would feed idle handlers; it waits while
// Concurrency messages are already waiting for a handler. A receive that
// returns more than it asked (a retried FIFO attempt) or a message already
// held never breaks the count: extra messages are released at once, held
// ones take no new place.
//
// Receives adapt to demand: ReceiveConcurrency receives run at all times
// (one long poll of WaitTime each on an idle queue, nothing more), and
// while receives come back full and places are free, concurrent receives
// grow, doubling per round trip up to MaxReceiveConcurrency; every receive
// that comes back empty retires one. Deletes, releases and heartbeat
// extensions go in batches of up to ten with up to DeleteConcurrency calls
// in flight; a full delete batch goes at once, a partial one after
// DeleteLinger or as soon as no message is waiting or running; a failed
// entry is retried by a timer, so no call waits behind another. Receive
// errors back off with ReceiveBackoff; a queue that does not exist or denies
// access ends Run with that error.
//
// Throughput. A message is held for at least two round trips (its receive
// and its delete), so messages/s ≤ MaxInFlight ÷ hold time, and each call
// moves at most ten: receives in flight × 10 ÷ latency. The defaults
// (MaxReceiveConcurrency and DeleteConcurrency 24, MaxInFlight Concurrency +
// 480) allow about 24,000 messages/s at 10 ms per call with a no-op
// handler, at about 0.2 calls per message (BENCHMARKS.md has measurements).
// That is up to 48 calls in flight: the SDK's default HTTP client keeps
// only 10 idle connections per host and opens new ones beyond that (with
// TLS, a handshake each); for high throughput give the client a transport
// with MaxIdleConnsPerHost ≥ MaxReceiveConcurrency + DeleteConcurrency.
//
// Visibility. VisibilityTimeout defaults to the queue's own, read once per
// Run with GetQueueAttributes. Every held message's visibility — waiting,
// running or awaiting delete — is extended by a heartbeat before it lapses,
// up to MaxExtension (12 h); if an extension fails for good or the cap is
// reached, the handler's ctx is cancelled, the message is reported as lease
// lost and it is neither deleted nor released.
//
// Shutdown. When Run's ctx is done, the consumer stops receiving, releases
// every message not yet started at once (visible now, in batches), lets
// running handlers finish for up to ShutdownTimeout while extending their
// visibility, then cancels the rest (ErrShutdownTimeout) and releases their
// messages, flushes deletes and releases, and returns: after every goroutine
// it started has ended, except a handler that ignores its cancelled ctx for
// more than a second, which is left to return on its own. Messages that a
// receive cancelled by shutdown had already taken come back after their
// visibility timeout.
//
// # Lambda
//
// Lambda.Handle takes an Event, which decodes both the event source
// mapping's {"Records":[…]} and EventBridge Pipes' bare array of records.
// It returns exactly the messageIds that failed or were not handled, each
// once; an empty response is success. It never fails the whole invocation
// unless FailWhenAllFail is set, or the event is malformed (a record
// without messageId: MalformedEventError). Near the invocation's deadline
// (DeadlineMargin) it stops starting messages and reports the rest, so a
// timeout does not make Lambda retry the whole batch. It returns when every
// message is settled or when ctx is done, whatever a handler does; a
// message whose handler panicked, exited or had not finished is reported
// failed, never as a success. It keeps no state between invocations. The
// response type is aws-lambda-go's events.SQSEventResponse, which
// EventBridge Pipes also reads.
//
// # Observability
//
// Options.Logger (slog, silent by default) gets failures, panics with their
// stacks, lease losses and lifecycle events, never message bodies. Hooks are
// called synchronously for received, handled (with duration), failed,
// deleted, delete failed, extended, lease lost and released. Stats returns
// counters, and InFlight, the messages held now.
//
// # Errors
//
// Invalid options make New, NewBatch, NewLambda and NewBatchLambda return an
// error matching ErrConfig, and nothing is started: a nil or typed-nil
// client, a value out of its documented range, a backoff strategy that is
// nil, panics, or (ReceiveBackoff) never waits. Run returns ErrConfig too
// when the queue's visibility timeout does not fit HeartbeatInterval.
// Failures passed to hooks wrap ErrNotStarted, ErrLeaseLost,
// ErrHandlerTimeout, ErrHandlerExited, ErrShutdownTimeout, ErrHeldBack,
// *PanicError or the handler's error.
//
// # Testing code that uses it
//
// Run the consumer against sqsfake inside a testing/synctest bubble:
// visibility timeouts, heartbeats, handler and shutdown timeouts then pass
// in fake time, and the bubble reports any goroutine left behind.
package consumer
