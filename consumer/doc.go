// Package consumer runs a handler for each message of an SQS queue on a
// long-polling Consumer in a service. The handler contract is package
// handler's, re-exported here (consumer.Handler is handler.Handler): the
// same handler runs in AWS Lambda with handler.NewLambda, with the same
// failure rules.
//
//	c, err := consumer.New(client, queueURL, func(ctx context.Context, m *consumer.Message) error {
//		return process(ctx, m.Body)
//	}, func(o *consumer.Options) { o.Concurrency = 32 })
//	err = c.Run(ctx) // until ctx is done
//
// NewBatch takes a BatchHandler instead, which gets a receive's messages at
// once and reports each one's outcome.
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
// lapsed, or lapses within 250 ms (the call's transit): on a standard
// queue SQS would answer success without deleting. A delete whose answer
// comes back after the lapse (an SDK retry, a slow link) may have landed
// after SQS delivered the message elsewhere: it is reported as a lost lease
// (DeleteFailed with ErrLeaseLost), never as Deleted.
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
//     is an error the consumer cannot read: one whose Error, Unwrap, Is or
//     As method panics, as a typed nil *T returned as an error often does;
//   - a handler that changes its Message changes nothing of what is
//     deleted, released or reported: the consumer keeps its own record of
//     each message's id, receipt handle and group;
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
// # Hold, park, drain, rate
//
// Two outcomes are not failures (package handler has them): a handler that
// returns [handler.Hold](d) keeps its message invisible for d (within 12 h
// of its receive) without a failure counted; one that returns
// [handler.Escalate] or [handler.Permanent] (a JSON body that does not
// decode too) has it parked at once on [Options.ParkingQueue], the
// operator queue, with its reason in replay's metadata format, and deleted
// only once the parking queue has it ([Parker]); on FIFO its group waits
// until then, and a park that fails is a failure. [Consumer.Drain] handles
// a queue until a receive comes back empty and returns once everything is
// settled; [Options.RateLimit] caps the messages received per second.
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
// entry is retried by a timer, so no call waits behind another. An entry
// an answer lists in neither Successful nor Failed is unconfirmed, as if
// lost in transit: retried, never reported deleted, released or extended.
// Receive errors back off with ReceiveBackoff.
//
// Throttling. SQS takes 300 calls a second per action on a FIFO queue
// without high-throughput mode. A throttled receive, delete or visibility
// change comes back to the consumer at once (the SDK does not retry it:
// its wait of up to seconds would stack on the consumer's own and spend
// the client's retry tokens), which paces itself: the action's calls in
// flight halve, no new call of it starts for 20 ms, and they grow back by
// an eighth of a call per round trip, settling just under the quota. A
// throttled delete or release is tried again without counting an attempt:
// it did nothing. A queue that does not exist
// or denies access, to a receive, a delete or a visibility change, ends
// Run with that error (after the usual shutdown): a consumer that cannot
// delete would handle the same messages again and again until they reach
// the dead-letter queue.
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
// lost and it is neither deleted nor released. A message awaiting its
// delete loses its lease only when its visibility lapses: its delete, in
// flight, may be what made an extension fail.
//
// Shutdown. When Run's ctx is done, the consumer stops receiving, releases
// every message not yet started at once (visible now, in batches), lets
// running handlers finish for up to ShutdownTimeout while extending their
// visibility, then cancels the rest (ErrShutdownTimeout) and releases their
// messages, flushes deletes and releases, and returns: after every goroutine
// and timer it started has ended, except a handler that ignores its
// cancelled ctx for more than a second, which is left to return on its own.
// Run returns at most ShutdownTimeout + 1 s after its ctx is done, whatever
// handlers and SQS calls do: a delete, release or extension still
// unanswered then is given up (the client must honour ctx, as the SDK's
// does) and its message comes back after its visibility timeout. Messages
// that a receive cancelled by shutdown had already taken come back after
// their visibility timeout too.
//
// # Middleware
//
// Options.Middleware (and BatchMiddleware for NewBatch) wraps the handler,
// the first listed outermost (handler.Chain); package handler bundles
// Timeout, Logging and Metrics. The consumer's own layer is outside the
// whole chain: a panic or runtime.Goexit anywhere in it fails the message,
// HandlerTimeout bounds the whole chain (the hard bound: the message fails
// at it even if the chain never returns, where handler.Timeout only
// cancels the ctx of a handler that cooperates), and the chain's ctx
// carries the message's process span and producer's trace context.
//
// # Observability
//
// Options.Logger (slog, silent by default) gets failures, panics with their
// stacks, lease losses and lifecycle events, never message bodies. Hooks
// are called in order, off the engine's path (see Hooks), for received,
// handled (with duration), failed, deleted, delete failed, extended, lease
// lost and released, each with the message's ctx (the one its handler's
// ctx derives from). Stats returns
// counters, and InFlight, the messages held now.
//
// Tracing and metrics go through smithy-go's interfaces, as the SDK's own
// clients do, so the core never depends on OpenTelemetry: plug it in with
// smithy-go's smithyoteltracing.Adapt and smithyotelmetrics.Adapt (the
// nested module examples/otel has a runnable Example). Both are off by
// default, and then cost a nil check on the hot path.
//
// Spans (Options.TracerProvider), with OpenTelemetry's messaging
// conventions (messaging.system aws_sqs, messaging.destination.name, the
// queue's name, messaging.operation.type and .name, aws.sqs.queue.url,
// error.type on failure):
//
//   - "receive <queue>", CLIENT, per ReceiveMessage call, with
//     messaging.batch.message_count (a receive that shutdown cuts short is
//     not a failure);
//   - "process <queue>", CONSUMER, per message, from its receipt until its
//     outcome is decided (handled, failed, given up, lease lost), with
//     messaging.message.id, its receive count and group id; its parent is
//     the producer's context when the message carries one and a Propagator
//     extracts it (smithy-go's interface has no span links), else Run's
//     ctx. A BatchHandler call gets its own, with the batch's count;
//   - "delete <queue>" and "change_visibility <queue>", CLIENT, type
//     settle, per DeleteMessageBatch and ChangeMessageVisibilityBatch call
//     (deletes, releases, heartbeat extensions).
//
// SQS calls are made with their span's ctx, so the SDK's own spans
// (sqs.Options.TracerProvider) nest under them.
//
// Metrics (Options.MeterProvider), each with messaging.system and
// messaging.destination.name, never a message id:
// messaging.client.consumed.messages, messaging.process.duration
// (seconds; error.type on failure), messaging.client.operation.duration
// (seconds, by messaging.operation.name and error.type),
// sqskit.consumer.handled, .failed (by error.type: handler_error, panic,
// timeout, exited, not_started, held_back, no_result, lease_lost,
// shutdown_timeout), .deleted, .delete_failed, .released, .extended,
// .lease_lost, .in_flight (observed while Run runs) and .message.age
// (seconds from SentTimestamp to receive: the queue's lag, the figure to
// alert on).
//
// Trace context: with Options.Propagator (handler.Propagator's shape, one
// value for fifo, consumer and handler), each message's AWSTraceHeader and
// String attributes (W3C traceparent, tracestate) are extracted into its
// ctx. Package fifo writes them on the sending side; package replay keeps
// them when it replays.
//
// # Errors
//
// Invalid options make New and NewBatch return an error matching
// ErrConfig, and nothing is started: a nil or typed-nil client, a value
// out of its documented range, a backoff strategy that is nil, panics, or
// (ReceiveBackoff) never waits, middleware of the other kind. Run returns ErrConfig too
// when the queue's visibility timeout does not fit HeartbeatInterval.
// Failures passed to hooks wrap ErrNotStarted, ErrLeaseLost,
// ErrHandlerTimeout, ErrHandlerExited, ErrShutdownTimeout, ErrHeldBack,
// ErrNoResult, *PanicError or the handler's error (a lost lease wraps
// ErrLeaseLost and what the handler returned).
//
// # Testing code that uses it
//
// Run the consumer against sqsfake inside a testing/synctest bubble:
// visibility timeouts, heartbeats, handler and shutdown timeouts then pass
// in fake time, and the bubble reports any goroutine left behind.
package consumer
