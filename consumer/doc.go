// Package consumer runs a handler for each message of an SQS queue, on a
// long-polling Consumer inside a service. Handlers are written against
// package handler's contract ([handler.Message], [handler.Handler]), so
// the same handler runs in AWS Lambda with [handler.NewLambda].
//
//	c, err := consumer.New(client, queueURL, func(ctx context.Context, m *handler.Message) error {
//		return process(ctx, m.Body) // nil: deleted; an error: retried later
//	}, func(o *consumer.Options) { o.Concurrency = 32 })
//	if err != nil {
//		return err // matches ErrConfig: nothing was started
//	}
//	return c.Run(ctx) // until ctx is done, then a graceful shutdown
//
// # How do I …
//
//   - handle a receive's messages together (one database write for ten):
//     [NewBatch] with a [handler.BatchHandler];
//   - retry later, sooner or not at all: return an error (retried after
//     Options.RedeliveryBackoff for its receive count; see [FailurePolicy]),
//     [handler.RetryAfter](err, d) for one message, or [handler.Permanent]
//     to give up on it;
//   - park a poison message at once, with its reason, instead of waiting
//     for maxReceiveCount: set Options.ParkingQueue and return
//     [handler.Escalate] or [handler.Permanent] (a handler.JSON body that does not
//     decode is permanent too);
//   - keep a message for later, no failure counted: [handler.Hold](d);
//   - decode handler.JSON, unwrap SNS or EventBridge envelopes, route by type, run
//     a message once: [handler.Typed], [handler.Envelopes],
//     [handler.NewRouter], [handler.Idempotent];
//   - bound a handler: Options.HandlerTimeout (the hard bound), or
//     [handler.Timeout] middleware (cooperative);
//   - empty a queue and stop: [Consumer.Drain]; cap the pace:
//     Options.RateLimit;
//   - pause intake, trip on failures, share a budget, serve probes:
//     [Consumer.Pause], [Breaker], [Budget], [Consumer.Status], [Health];
//   - watch it: Options.Logger, Options.Hooks, [Consumer.Stats], and
//     OpenTelemetry through Options.TracerProvider, MeterProvider and
//     handler.Propagator (docs/telemetry.md lists every span and metric);
//   - test it: against sqsfake in a testing/synctest bubble (fake time).
//
// # What it guarantees
//
// At least once. A message is deleted only after its handler returned nil
// and while its visibility is still held, so a crash at any point leaves it
// to come back; make handlers idempotent ([handler.Idempotent] helps). A
// handler is untrusted code: an error, a panic, runtime.Goexit or a hang
// fails only its own message, never Run. While a message is held (waiting,
// running or awaiting its delete) a heartbeat extends its visibility, up to
// Options.MaxExtension.
//
// On a FIFO queue (the .fifo suffix) a group's messages run one at a time,
// in order, groups in parallel; after a failure the group's later messages
// wait (docs/consumer.md says how to size maxReceiveCount for it).
// Redrive to a dead-letter queue is SQS's job; package replay moves
// messages back. The long form is docs/consumer.md; docs/kubernetes.md
// covers probes, scaling and the grace period.
//
// # Throughput and shutdown
//
// The defaults move about 24,000 messages a second at 10 ms per call, with
// up to 48 SQS calls in flight: build the client with [HTTPClient]. Under
// throttling the consumer paces itself. Run returns at most
// ShutdownTimeout + 1 s after its ctx is done: 21 s by default, inside
// Kubernetes' 30 s grace period.
//
// # Errors
//
// New and NewBatch return an error matching [ErrConfig] for invalid
// options. Run returns nil when its ctx is done, or the error of a queue
// that does not exist or denies access. Failures passed to hooks wrap the
// handler's error or a sentinel (docs/consumer.md lists them).
package consumer
