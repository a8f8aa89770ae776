// Package s3payload carries SQS message bodies larger than a queue takes
// through Amazon S3, wire-compatible with the SQS Extended Client for Java
// (amazon-sqs-java-extended-client-lib) and its Python port: the body goes to
// an S3 object, and the message carries a pointer to it. It is a nested
// module, so sqskit's core never imports service/s3.
//
//	sender, err := s3payload.NewSender(s3Client, fifoSender, "my-bucket", func(o *s3payload.SenderOptions) {
//		o.KeyPrefix = "orders/"
//	})
//	res, err := sender.Send(ctx, fifo.Message{Body: bigBody}) // over 256 KiB: to S3
//
//	recv, err := s3payload.NewReceiver(s3Client, []string{"my-bucket"}, func(o *s3payload.ReceiverOptions) {
//		o.KeyPrefix = "orders/"
//	})
//	c, err := consumer.New(sqsClient, queueURL, h, func(o *consumer.Options) {
//		o.Middleware = []handler.Middleware{recv.Middleware()}
//		o.Hooks = recv.Hooks(consumer.Hooks{})
//	})
//	go recv.Run(ctx) // deletes objects once SQS confirmed their messages' deletes
//
// # How do I …
//
//   - send large bodies: [NewSender] around a [fifo.Sender], then
//     [Sender.Send] or [Sender.SendBatch] (its batching, FIFO order, retries
//     and validation are the fifo.Sender's); [Sender.Offload] for a
//     [fifo.Batcher] or an SNS publish;
//   - offload above another size, or always: [SenderOptions].Threshold
//     (default [DefaultThreshold], 256 KiB, the Java client's default),
//     AlwaysThroughS3;
//   - talk to consumers on the Java client's version 1:
//     [SenderOptions].LegacyAttribute (both names are always read);
//   - encrypt or tag objects: ServerSideEncryption, SSEKMSKeyID, Tags;
//   - receive: [Receiver.Middleware] in consumer.Options.Middleware or
//     handler.LambdaOptions.Middleware ([Receiver.BatchMiddleware] for
//     batch handlers); pointers inside SNS notifications are resolved too
//     (alone, or after handler.Envelopes);
//   - keep objects for SNS fan-out (several queues point to one object):
//     [ReceiverOptions].KeepObjects, and [Sweep] or a lifecycle rule;
//   - remove orphans: [Sweep], daily, or an S3 lifecycle rule expiring the
//     prefix after the same bound (see [SweepOptions].Retention);
//   - test: gofakes3 (github.com/johannesboyne/gofakes3) is a real S3 API in
//     process: serve gofakes3.New(s3mem.New()).Server() with httptest and
//     point an s3.Client at it with UsePathStyle, as the Example does.
//
// # The format
//
// The body is ["software.amazon.payloadoffloading.PayloadS3Pointer",
// {"s3BucketName":"…","s3Key":"…"}] ([Pointer.Body], [ParsePointer]); the
// Number attribute [SizeAttribute] ("ExtendedPayloadSize", or
// [LegacySizeAttribute] "SQSLargePayloadSize") carries the payload's size
// and marks the message as offloaded; it counts in SQS's ten attributes,
// so a message with ten already fails with [ErrInvalid]. The key is the
// prefix and a random UUID.
//
// # Safety
//
// A message is untrusted input: it must not choose what the consumer reads.
// The Receiver reads only from the buckets it was given and under
// KeyPrefix, checks the declared size against MaxPayloadBytes before
// reading and against the object after, and fails a bad pointer at once,
// permanently (handler.Escalate with a Reason constant, a [*PointerError]
// matching [ErrBadPointer]): parked where a parking queue is set. It
// deletes only objects whose key a Sender writes (ending with a UUID),
// so a pointer to any other object it may read never has it deleted.
//
// Nothing is lost in a crash. The object is put before its pointer is
// sent, and deleted only after SQS confirmed the delete of a message
// whose handler succeeded (the consumer's Hooks.Deleted); a delete that
// fails, a lost lease or a handler failure keep it for the message's next
// delivery. Each crash can leave orphan objects instead, bounded: a put
// without its send, and the objects of messages deleted just before the
// process died; so can a send that failed without saying whether SQS
// stored it (an object is deleted again only when SQS certainly did not).
// [Sweep] deletes objects older than any message can be.
//
// On a standard queue a message delivered twice (SQS's at-least-once, or a
// send whose answer was lost) may find its object deleted by its twin: it
// is then parked under [ReasonMissing], its payload already handled.
//
// In AWS Lambda the event source mapping deletes messages after the
// invocation returns, with no signal to the function: the Receiver never
// deletes there, and objects are left to [Sweep] or a lifecycle rule.
//
// Package replay moves a pointer from a dead-letter queue as it moves any
// message: the object is neither read nor deleted, and each replay gives the
// pointer a new life in the queue, which Sweep's Retention must count.
package s3payload
