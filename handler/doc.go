// Package handler is sqskit's handler contract, and the AWS Lambda adapter
// that runs it: the types a handler is written against ([Message],
// [Handler], [BatchHandler], [Middleware]), the outcomes it can return, the
// middleware users expect, and [NewLambda], a partial-batch SQS handler for
// Lambda. Package consumer runs the same handlers on a long-polling
// Consumer, with the same rules.
//
//	l, err := handler.NewLambda(func(ctx context.Context, m *handler.Message) error {
//		return process(ctx, m.Body) // nil: done; an error: reported failed, retried by SQS
//	})
//	if err != nil {
//		return err // matches ErrConfig
//	}
//	lambda.Start(l.Handle) // ReportBatchItemFailures on the event source, or a Pipes target
//
// # How do I …
//
//   - handle a batch at once: [NewBatchLambda] with a [BatchHandler], one
//     result per message;
//   - say what happens to a message: return nil (done), an error (retried;
//     [RetryAfter] sets the delay), [Hold](d) (kept invisible for d, no
//     failure counted), [Escalate] or [Permanent] (parked on an operator
//     queue with the reason; in Lambda through [LambdaOptions].Parker);
//   - decode a JSON body into a type: [JSON], or [Typed] with a [Codec]; a
//     body that does not decode is permanent ([ErrDecode]);
//   - take SNS notifications and EventBridge events from one queue:
//     [Envelopes];
//   - send each message type to its own handler: [NewRouter] with [On];
//   - run each message once even when SQS delivers it twice: [Idempotent]
//     over a [Store] ([MemoryStore] here; DynamoDB in the nested module
//     idempotency/dynamodb);
//   - bound, log or measure a handler: [Timeout], [Logging], [Metrics]
//     (and their Batch forms), in LambdaOptions.Middleware or
//     consumer.Options.Middleware, the first listed outermost ([Chain]);
//   - read a message's FIFO group or receive count: [Message.GroupID],
//     [Message.ReceiveCount]; its lease: [LeaseFrom];
//   - carry trace context from producer to handler: a [Propagator]
//     (OpenTelemetry's TextMapPropagator's shape) in LambdaOptions or
//     consumer.Options; [Extract] for code that handles messages itself;
//   - test a handler: call [Lambda.Handle] with an [Event] built in the
//     test, inside a testing/synctest bubble for anything time-dependent.
//
// # What a handler's failure does
//
// A handler is untrusted code. Whatever it does fails only its own message
// (a BatchHandler: the messages of its call), never the invocation: an
// error, a panic ([PanicError], with the stack in the log), runtime.Goexit
// ([ErrHandlerExited]), or not returning before the invocation ends
// ([ErrNotStarted] for messages never started). A BatchHandler's missing
// result fails with [ErrNoResult]; its success after a failure of the
// message's FIFO group with [ErrHeldBack].
//
// # In Lambda
//
// Handle returns exactly the messageIds that failed or were not handled,
// each once; Lambda (or EventBridge Pipes) deletes the rest. Near the
// deadline (LambdaOptions.DeadlineMargin) it stops starting messages and
// reports the rest, so a timeout does not make Lambda retry the whole
// batch. FIFO is recognised by the .fifo suffix of the event source ARN:
// a group's messages run one at a time, in order, and after a failure its
// later messages are reported failed without running. Handle keeps no
// state between invocations. The adapter links no SQS client: a Lambda
// built with NewLambda is about 104 KB larger than one written on
// aws-lambda-go alone (TestLambdaFootprint keeps it so).
//
// The long form is docs/handler.md; spans and metrics are in
// docs/telemetry.md:
// https://github.com/sqskit/sqskit/blob/main/docs/handler.md
//
// # Errors
//
// NewLambda and NewBatchLambda return an error matching [ErrConfig] for
// invalid options (a nil handler, a negative option, middleware of the
// other kind). Handle returns a [MalformedEventError] for a record without
// a messageId, and fails the whole invocation otherwise only with
// LambdaOptions.FailWhenAllFail.
package handler
