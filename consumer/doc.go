// Package consumer runs a handler for each message of an SQS queue, as a
// long-polling Consumer in a service or as a Lambda handler, with one
// handler contract and the same failure rules in both.
//
//	c, err := consumer.New(client, queueURL, func(o *consumer.Options) {
//		o.Handler = func(ctx context.Context, m *consumer.Message) error { ... }
//	})
//	err = c.Run(ctx) // until ctx is done
//
//	l, err := consumer.NewLambda(handler)
//	lambda.Start(l.Handle) // with ReportBatchItemFailures on the event source
//
// # Delivery semantics
//
// At least once. A message is deleted only after its handler returned nil
// (and its visibility was held until then), so a crash at any point leaves
// it to come back. It can be handled twice when a delete fails, when its
// lease is lost, or when SQS delivers a duplicate (standard queues): make
// handlers idempotent. A message redelivered to this consumer while it is
// still being handled here (its visibility lapsed) is not handled again; the
// held copy takes the newest receipt handle, so the delete that follows
// really deletes.
//
// Handler errors fail the message: with RetryWithBackoff (the default) it
// becomes visible again after Options.Retry's delay for its receive count,
// with ReleaseNow at once, with LeaveToTimeout when its visibility timeout
// ends. RetryAfter in the returned error sets the delay for one message. A
// panic is the failure of that message (with its stack in the log), never a
// crash. Redrive to a dead-letter queue is SQS's job: set maxReceiveCount.
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
// (see package fifo).
//
// # The long-polling consumer
//
// Pollers receive only for free places: at most MaxInFlight messages are
// held (received, waiting, running or awaiting delete) and Concurrency
// handlers run. Every held message's visibility is extended by a heartbeat
// before it lapses, up to MaxExtension (12 h); if an extension fails for
// good or the cap is reached, the handler's ctx is cancelled, the message is
// reported as lease lost and it is not deleted. Deletes go in batches of ten
// (or after DeleteFlushInterval); only entries that failed without sender
// fault are retried. Receive errors back off with ReceiveBackoff; a queue
// that does not exist or denies access ends Run with that error.
//
// When Run's ctx is done, the consumer stops receiving, releases messages not
// yet started (visible at once), lets running handlers finish for up to
// ShutdownTimeout (then cancels their ctx), keeps extending their visibility
// meanwhile, flushes deletes, and returns after every goroutine it started
// has ended.
//
// # Lambda
//
// Lambda.Handle returns exactly the messageIds that failed or were not
// handled, each once; an empty response is success. It never fails the whole
// invocation unless FailWhenAllFail is set, or the event is malformed (a
// record without messageId: MalformedEventError). Near the invocation's
// deadline (DeadlineMargin) it stops starting messages and reports the rest,
// so a timeout does not make Lambda retry the whole batch. It keeps no state
// between invocations. The response type is aws-lambda-go's
// events.SQSEventResponse, which EventBridge Pipes also accepts.
//
// # Observability
//
// Options.Logger (slog, silent by default) gets failures, panics with their
// stacks, lease losses and lifecycle events, never message bodies. Hooks are
// called synchronously for received, handled (with duration), failed,
// deleted, delete failed, extended, lease lost and released. Stats returns
// counters.
//
// # Errors
//
// Invalid options make New and NewLambda return an error matching ErrConfig,
// and nothing is started. Failures passed to hooks wrap ErrNotStarted,
// ErrLeaseLost, *PanicError or the handler's error.
//
// # Testing code that uses it
//
// Run the consumer against sqsfake inside a testing/synctest bubble: visibility
// timeouts, heartbeats and shutdown timeouts then pass in fake time, and the
// bubble reports any goroutine left behind.
package consumer
