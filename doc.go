// Package sqskit makes Amazon SQS consumers and producers resilient. It
// extends github.com/aws/aws-sdk-go-v2/service/sqs rather than replacing it:
// every package takes the *sqs.Client you already have (or anything with the
// same methods) through a small interface it declares itself.
//
// Where to start:
//
//   - to consume a queue in a service: package consumer, with handlers
//     written against package handler; in AWS Lambda: handler.NewLambda;
//   - to send to any queue, standard or FIFO: fifo.Sender (Send,
//     SendBatch) and its Batcher for many concurrent callers; the package
//     is named for the hard case it gets right, not only for FIFO queues;
//   - to move messages back from a dead-letter queue: package replay;
//   - to run several of them in one service until SIGTERM: service.Run;
//   - to test any of it without AWS: package sqsfake.
//
// The packages:
//
//   - sqsfake: an in-memory SQS with the service's behaviour (visibility,
//     redrive, FIFO groups and deduplication, attempt ids, limits and typed
//     errors), a manual clock, fault injection and call counts, for your
//     tests.
//   - sqstest: a conformance suite of SQS behaviours that runs against
//     sqsfake, an emulator or real SQS.
//   - backoff: jitter backoff strategies as pure functions of the attempt,
//     compatible with github.com/cenkalti/backoff/v4, with a retry budget.
//   - replay: dead-letter-queue replay with an attempt counter, growing
//     jittered delays and escalation to an operator queue.
//   - fifo: the sender for every queue, FIFO and standard: validation,
//     batching with several calls in flight, retries, and on FIFO queues
//     group ids, deduplication ids, order-keeping batches and retries
//     inside the deduplication window; trace context.
//   - handler: the handler contract (Message, Handler, middleware) and a
//     lean Lambda adapter reporting partial batch failures, which links no
//     SQS client.
//   - consumer: a long-polling consumer running the same handlers.
//   - service: one lifecycle for consumers, replayers and Batchers (ordered
//     shutdown within a grace period, one joined error) and a handler-slot
//     Budget shared by weight across consumers.
//
// Every package takes an optional TracerProvider and MeterProvider (smithy-
// go's interfaces, as the SDK's clients do: OpenTelemetry plugs in through
// smithy-go's adapters) and a handler.Propagator that carries trace context
// across the queue; docs/telemetry.md lists every span and metric.
//
// How they compose: a producer sends through fifo to a main queue; consumer
// handles its messages; SQS moves poison messages to a dead-letter queue
// after maxReceiveCount receives; replay moves them back with growing delays
// and escalates to an operator queue when attempts run out.
//
// This package holds documentation only.
package sqskit
