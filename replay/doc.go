// Package replay moves messages out of a dead-letter queue: back to the
// queue they failed on, after a growing, jittered delay, a limited number of
// times, and then to an operator queue for a human, with the reason and the
// message's history.
//
//	r, err := replay.New(client, dlqURL, operatorURL, func(o *replay.Options) {
//		o.Target = mainURL // or Sources: DeadLetterQueueSourceArn → URL
//		o.Policy = replay.Policy{MaxAttempts: 5}
//	})
//	err = r.Run(ctx)             // a worker; or r.Drain(ctx) for one pass;
//	lambda.Start(r.HandleLambda) // or a Lambda on the DLQ
//
// # A message is untrusted input
//
// A dead-letter queue is where the strange messages are, and anyone who can
// send to a queue controls a message's body and attributes. So nothing in a
// message's attributes chooses where it goes, its FIFO deduplication id, or
// a time beyond the policy's bounds:
//
//   - the target is Options.Target, or the allow-listed queue of the
//     DeadLetterQueueSourceArn SQS sets (Options.Sources);
//   - FIFO deduplication ids and the jitter's seed come from the DLQ
//     message's MessageId, which SQS assigns, and the attempt;
//   - a delay is the Policy's, at most MaxBackoff; a hold counts from the
//     message's SentTimestamp, which SQS sets, plus the DelaySeconds the
//     replayer sent it with, which the metadata may state as 0 to 900 s
//     only.
//
// The attempt counter does inform the decision, by the contract of the AWS
// sample amazon-sqs-dlq-replay-backoff, whose attribute (sqs-dlq-replay-nb)
// the replayer reads and writes so that either understands the other. What
// is inconsistent is escalated with a reason, never looped, dropped or held
// forever: a counter that is not a whole number from 0 to 1,000,000, or
// that is both in its attribute and in the metadata, is InvalidCounter; a
// sqskit-replay attribute the replayer did not write (unreadable, a delay
// out of range, moved attributes that clash with the message's own) is
// InvalidMetadata, and the original values travel in Metadata.Moved for the
// human who reads the escalation.
//
// # The policy
//
// Policy.Decide is pure. It reads the counter, adds one, and replays with
// the delay the Backoff strategy gives for that replay, or escalates when
// replays run out (AttemptsExhausted). Other reasons: TooLarge (no room for
// the replay metadata), AttributeBudget (ten attributes and
// KeepAttributesInPlace), NotRoutable (no allow-listed target, or a FIFO
// target and no valid group id), Unsendable (SQS refuses the message as it
// is), BackoffFailed (the Backoff strategy panicked: Decide never panics).
//
// # What a replayed message carries
//
// The body byte for byte; every message attribute (String, Number, Binary,
// custom types; list fields cleared); the AWSTraceHeader system attribute;
// the group id (on FIFO targets, and as a fair-queue tenant on standard
// ones); the counter; and the attribute sqskit-replay with its provenance:
// original MessageId, first failure time, source queue ARN, last delay
// (decorrelated jitter grows from it) and the DelaySeconds it was sent
// with. That is at most two attributes. With nine user attributes the
// counter moves into sqskit-replay; with ten, the last user attribute by
// name (trace attributes such as traceparent last of all) moves there too,
// and Restore gives it back.
//
// # Delays
//
// Replay n waits Backoff.Delay(n-1, previous delay), at most MaxBackoff;
// the default policy draws from EqualJitter with a 1 min base, so each
// replay waits at least as long as the one before. When that time counts
// from depends on where the replay must wait:
//
//   - On a standard target, a delay up to 15 minutes is sent at once as
//     DelaySeconds: the message reappears on its queue the delay after the
//     replayer took it out of the DLQ, as in the AWS sample.
//   - Longer delays, and every delay on a FIFO target (FIFO queues take no
//     per-message delay), are honoured by holding the message in the DLQ
//     with ChangeMessageVisibility (up to 12 h at a time) and sending it
//     once due. A held message is due at the start of its last life on the
//     main queue (its SentTimestamp plus the DelaySeconds it was sent with)
//     plus the delay: SQS records nothing that says when a message reached
//     the DLQ and the replayer keeps no state, and this due time is one every
//     receive, by any replayer, computes alike. On a FIFO target, a replay
//     therefore comes the delay after the previous one, or at once if the
//     message's life on the main queue already took longer.
//
// The jittered delay is reproducible: the strategy draws from a source
// seeded by the DLQ MessageId and the attempt (decorators such as
// backoff.Capped and backoff.MaxAttempts pass the source through), so every
// receive of a held message finds the same due time. The DLQ's retention
// must outlast the longest delay, and the DLQ must not have a redrive
// policy of its own: holds count as receives, so SQS would move a held
// message on to the DLQ's own dead-letter queue, out of the replayer's
// reach. Check both when you create the queues.
//
// # One engine
//
// A Replayer is its Policy run as a batch handler: Run and Drain run it on
// package consumer's engine (consumer.NewBatch), HandleLambda on
// handler.NewBatchLambda, and replays go out through one fifo.Sender per
// target. Receives, the heartbeat, holds, deletes, the rate limit, drain,
// shutdown, spans and metrics are the consumer's, with its rules and
// defaults; a message's outcome is one any handler can return: sent (nil,
// deleted), handler.Hold (kept in the DLQ until due; also waiting,
// skipped, seen-before and dry-run messages, for VisibilityTimeout),
// handler.Escalate (parked on the operator queue by a consumer.Parker in
// the replayer's metadata format, then deleted), or an error (left for the
// visibility timeout).
//
// # Delivery semantics
//
// Send first, delete after: a message leaves the DLQ only once its target
// or the operator queue accepted it (an entry an answer leaves out is
// unconfirmed, never taken as done). A crash or a failed delete between
// the two leaves a copy in the DLQ that is sent again: on FIFO targets the
// deduplication id, fixed by the DLQ MessageId and the attempt, makes that a
// no-op within SQS's 5-minute window; on standard targets it is a
// duplicate, never a loss. A replay SQS refuses becomes an escalation
// (Unsendable, TooLarge); an escalation SQS refuses is sent again with its
// attributes moved into the metadata, then left out, then as the body
// alone. One that fits in no form is rejected (Hooks.Rejected,
// Report.Rejected, ErrRejected) and stays in the DLQ for a human.
//
// # FIFO order
//
// A FIFO group's later messages never pass an earlier one still in the
// DLQ: on a FIFO target a batch sends a group's messages one call after the
// other, and one that is not replayed (held, escalated, failed, skipped,
// seen before) keeps the rest of its group behind it. SQS keeps a FIFO
// DLQ's group in one batch at a time; from a standard DLQ the replayer
// claims each group for one batch besides.
//
// # Errors
//
// Invalid options or policy make New return an error matching ErrConfig,
// before any call to SQS, among them every setting that would loop (the
// operator queue or a target being the DLQ, the operator queue being a
// target, the counter attribute being sqskit-replay) and the consumer's
// own rules. Run returns when its ctx is done (nil) or when a call fails for
// good (a queue does not exist, access is denied): a replayer that cannot
// delete from the DLQ would send each message again at every visibility
// timeout. Drain returns its Report with the error that stopped it.
// HandleLambda returns an error matching ErrMalformedEvent for a record
// without a messageId.
//
// # Testing
//
// Code that uses a Replayer is tested against sqsfake, in memory, with
// testing/synctest for time: see this package's tests, which also run the
// Replayer against the fauxqs emulator over HTTP, and a soak of Run, Drain
// and HandleLambda under faults on every call.
package replay
