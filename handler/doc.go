// Package handler is sqskit's handler contract, and the AWS Lambda adapter
// that runs it: the types a handler is written against (Message, Handler,
// BatchHandler, Middleware), the failures it can have, middleware that
// users expect (Timeout, Logging, Metrics), and NewLambda, a partial-batch
// SQS handler for Lambda. Package consumer runs the same handlers on a
// long-polling Consumer and re-exports these types (consumer.Message is
// handler.Message), so one handler serves both.
//
//	l, err := handler.NewLambda(func(ctx context.Context, m *handler.Message) error {
//		return process(ctx, m.Body)
//	})
//	lambda.Start(l.Handle) // ReportBatchItemFailures on the event source, or a Pipes target
//
// # A lean Lambda
//
// The package imports the standard library, aws-lambda-go's events, and
// smithy-go's tracing and metrics interfaces: not the SQS client, its types
// or its dependencies. A Lambda built with NewLambda is 7 packages and
// about 98 KB (stripped) larger than one written by hand on aws-lambda-go
// alone, where one built with the former consumer.NewLambda was 65
// packages and 430 KB larger. TestLambdaFootprint keeps it so;
// BENCHMARKS.md has the figures and the command. Message carries its own
// AttributeValue type for that reason; consumer.SDKAttributes converts it
// for the SDK.
//
// # Delivery semantics in Lambda
//
// Handle returns exactly the messageIds that failed or were not handled,
// each once; an empty response is success, and Lambda (or EventBridge
// Pipes) deletes the rest. It never fails the whole invocation unless
// FailWhenAllFail is set, or the event is malformed (a record without
// messageId: MalformedEventError). Near the invocation's deadline
// (DeadlineMargin) it stops starting messages and reports the rest, so a
// timeout does not make Lambda retry the whole batch. It returns when every
// message is settled or when ctx is done, whatever a handler does. It keeps
// no state between invocations: one Lambda value serves concurrent
// invocations. Handle takes an Event, which decodes both the event source
// mapping's {"Records":[…]} and EventBridge Pipes' bare array.
//
// # What a handler's failure does
//
// A handler is untrusted code. Whatever it does fails only its own message
// (a BatchHandler: the messages of its call): an error, a panic
// (*PanicError, with the stack in the log; an error whose Error, Unwrap, Is
// or As method panics, as a typed nil *T's often does, fails its message
// the same way), runtime.Goexit
// (ErrHandlerExited), or not returning before the invocation ends
// (ErrNotStarted). A message never handed to the handler fails with
// ErrNotStarted; a BatchHandler's missing result with ErrNoResult; a
// BatchHandler's success after a failure of its FIFO group with
// ErrHeldBack.
//
// # Outcomes: done, retry, hold, escalate
//
// nil is done, an error is retried, [Hold](d) keeps the message invisible
// for d without a failure, and [Escalate] or [Permanent] park it on an
// operator queue (a body [JSON] cannot decode is permanent: [ErrDecode]).
// The Lambda adapter links no SQS client: with [LambdaOptions.Parker]
// (consumer.NewParker) it sets a held message's visibility and reports it
// failed so Lambda keeps it, and parks an escalated one and reports it
// done; without one, both are failures reported to Lambda.
//
// # Typed messages, envelopes, routing, idempotency
//
// [Typed] decodes a body with a [Codec] (JSON by default); [Envelopes]
// unwraps SNS notifications and EventBridge events so fan-out and plain
// producers share a queue; [NewRouter] sends each type to its own typed
// handler; [Idempotent] runs a key once over a [Store], its claim following
// the message's [Lease]. An undecodable body, a malformed envelope or an
// unknown type is parked at once, one receive, ahead of maxReceiveCount and
// redrive. examples/orders-service puts them together.
//
// # FIFO
//
// FIFO is recognised by the .fifo suffix of the event source ARN, never by
// MessageGroupId (fair queues put group ids on standard queues). Messages
// of one group run one at a time in order, groups in parallel up to
// Concurrency; after a failure, the group's later messages are reported
// failed without running (with StopOnFirstFailure, every later message).
//
// # Middleware
//
// Middleware (func(Handler) Handler) and BatchMiddleware wrap a handler;
// LambdaOptions.Middleware and consumer.Options.Middleware apply them in
// the order listed, the first outermost (Chain). The runtime's own layer
// is outside the whole chain: a panic or runtime.Goexit anywhere in it
// fails the message, the consumer's HandlerTimeout bounds it, and its ctx
// carries the message's process span and its producer's trace context.
// Bundled:
//
//   - Timeout(d): the handler's ctx ends after d, with cause
//     ErrHandlerTimeout, and an error returned after that matches it. It is
//     cooperative: the consumer's HandlerTimeout stays the hard bound, at
//     which the message fails whether the handler returns or not.
//   - Logging(logger): one line per call (Debug on success, Warn on
//     failure) with message id, group id, receive count and duration; never
//     the body or attribute values.
//   - Metrics(mp, name): sqskit.handler.duration by sqskit.handler.name and
//     error.type, for one handler inside a chain (a router's branch).
//
// BatchTimeout, BatchLogging and BatchMetrics are the same for a
// BatchHandler.
//
// # Telemetry
//
// Tracing and metrics go through smithy-go's interfaces, as the SDK's own
// clients do (sqs.Options.TracerProvider), so nothing here depends on
// OpenTelemetry; plug it in with smithy-go's adapters
// (smithyoteltracing.Adapt, smithyotelmetrics.Adapt) — see the runnable
// Example in the nested module examples/otel. Off by default: without a
// provider the cost is a nil check.
//
// With LambdaOptions.TracerProvider each message gets a CONSUMER span
// "process <queue>" from the start of the invocation until its outcome,
// with the messaging conventions' attributes (messaging.system aws_sqs,
// messaging.destination.name, messaging.operation.type process,
// messaging.message.id) and error.type on failure (ErrorType); a
// BatchHandler call gets one more, with messaging.batch.message_count.
// Smithy-go's interface has no span links: a process span's parent is the
// producer's context when the message carries one and a Propagator
// extracts it, else the invocation's.
//
// With LambdaOptions.MeterProvider: messaging.client.consumed.messages,
// sqskit.consumer.handled, sqskit.consumer.failed (by error.type),
// messaging.process.duration (seconds, by error.type on failure) and
// sqskit.consumer.message.age (seconds from SentTimestamp to the
// invocation: the lag to alert on), each with messaging.system and
// messaging.destination.name. Never a message id in a metric.
//
// # Trace context across the queue
//
// A Propagator (OpenTelemetry's TextMapPropagator's shape; Carrier is
// identical to fifo.Carrier and consumer.Carrier) reads a message's trace
// context: the key "X-Amzn-Trace-Id" is the AWSTraceHeader system
// attribute (X-Ray's), any other key a String message attribute (W3C's
// traceparent and tracestate). With LambdaOptions.Propagator, each
// handler's ctx (and each hook's) carries its producer's context; Extract
// does the same for code that handles messages some other way. Package
// fifo writes it on the sending side, within SQS's budget of ten message
// attributes (AWSTraceHeader does not count toward it).
//
// Hooks (Received, Handled, Failed) are called synchronously with the
// message's ctx; keep them fast and safe for concurrent use. Logger gets
// failures, panics with their stacks, never bodies.
//
// # Errors
//
// Invalid options make NewLambda and NewBatchLambda return an error
// matching ErrConfig (a nil handler, a negative option, middleware of the
// other kind).
//
// # Testing code that uses it
//
// Call Handle with an Event built in the test; for time-dependent cases
// (DeadlineMargin, timeouts) run it inside a testing/synctest bubble.
package handler
