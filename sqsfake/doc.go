// Package sqsfake is an in-memory Amazon SQS for tests: a Server holding
// queues and a Client with the methods of *sqs.Client, so code written
// against a small interface of SDK methods runs on it unchanged.
//
//	srv := sqsfake.New()
//	client := srv.Client() // use where you would use *sqs.Client
//
// # What it models
//
// sqsfake behaves like the service, not like a mock. It passes the whole
// sqstest conformance suite, which also runs against the fauxqs emulator and
// real SQS. In short:
//
//   - standard and FIFO queues (a FIFO queue needs both the .fifo suffix and
//     FifoQueue=true), queue attributes with their defaults, ranges and
//     combinations, the Approximate* counters, CreateQueue idempotence,
//     QueueDeletedRecently for 60 s after DeleteQueue, PurgeQueueInProgress for
//     60 s after PurgeQueue;
//   - visibility timeouts (queue default, per receive, ChangeMessageVisibility
//     counted from the call, at most 12 hours after the receive), receipt
//     handles that change on every receive;
//   - per-message and per-queue delays (FIFO queues refuse per-message
//     delays), retention expiry;
//   - message attributes round-tripped exactly with SQS's digests
//     (MD5OfMessageBody, MD5OfMessageAttributes), with every limit: 1 MiB per
//     message and per batch, ten attributes, name and type rules, body
//     characters;
//   - system attributes on request: SentTimestamp, ApproximateReceiveCount,
//     ApproximateFirstReceiveTimestamp, MessageGroupId,
//     MessageDeduplicationId, SequenceNumber, DeadLetterQueueSourceArn,
//     AWSTraceHeader;
//   - redrive: a message received maxReceiveCount times moves to the
//     dead-letter queue on its next receive attempt, keeping MessageId, body,
//     attributes and receive count, with DeadLetterQueueSourceArn set; a FIFO
//     message's deduplication id becomes its MessageId, and a FIFO DLQ
//     restarts its retention period;
//   - FIFO: order within a group, a group is locked while any of its messages
//     is in flight, one receive returns several messages of one group,
//     5-minute deduplication by id or SHA-256 of the body with queue or group
//     scope (a duplicate send returns the original MessageId and enqueues
//     nothing), sequence numbers, and ReceiveRequestAttemptId: a retry within
//     5 minutes returns the same messages and receipt handles and resets their
//     visibility, until any of them is deleted, changed or received again;
//   - long polling: a receive with a wait blocks until a message can be
//     received (sent, delay ended, visibility expired, group unlocked), the
//     wait ends, or ctx is done;
//   - errors as the SDK returns them: a *smithy.OperationError wrapping the
//     typed error (*types.QueueDoesNotExist, *types.ReceiptHandleIsInvalid,
//     *types.BatchEntryIdsNotDistinct, …) with the run-time ErrorCode() of
//     the service (AWS.SimpleQueueService.NonExistentQueue), or a
//     smithy.APIError with the service's code for unmodeled errors
//     (InvalidParameterValue, MissingParameter). Batch calls report entry
//     failures in Failed[] with SenderFault set.
//
// Where SQS documents a choice rather than a rule, sqsfake takes the
// conservative side and tests can rely on it: a delete with a stale receipt
// handle (the message was received again since) succeeds without deleting on
// a standard queue and fails as expired on a FIFO queue; a delete of an
// expired handle deletes on a standard queue and fails on a FIFO queue;
// changing the visibility of a deleted message or with a stale handle fails
// with InvalidParameterValue, and of a message no longer in flight with
// MessageNotInflight. Standard queues deliver in send order, which real SQS
// does not promise: do not rely on it.
//
// Not modeled: permissions and policies (stored, not enforced), KMS, tags
// beyond storage, message move tasks, fair-queue scheduling, throughput
// quotas other than the in-flight limit, and the rare duplicate delivery of
// standard queues (inject it with a fault if a test needs it).
//
// # Time
//
// The Server reads time from its Clock. With a *ManualClock, time moves only
// when a test calls Advance or Set; long polls, delays, visibility timeouts,
// retention and the dedup window all follow it, and a long poll parked on the
// clock wakes when it is advanced. ManualClock.WaitForTimers tells a test that
// a goroutine has parked in a long poll before it advances.
//
// # Faults and call counts
//
// Inject adds a Fault: fail the next N calls of an operation (optionally of
// one queue) with an error before they take effect, or after they took effect
// (AfterApply, a lost acknowledgement), delay them on the clock, or fail
// chosen entries of a batch call. Each FaultHandle reports how often it fired.
// Calls returns how many calls each operation and each queue received, so
// tests and benchmarks can report API calls per message.
//
// # Concurrency
//
// A Server and its Clients are safe for concurrent use. No goroutine outlives
// a call: a long poll waits on the caller's goroutine.
package sqsfake
