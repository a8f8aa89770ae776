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
// A worked example with the default policy, a standard main queue with a
// 30 s visibility timeout and maxReceiveCount 2, and a message that always
// fails: it is sent at 0:00 and fails at 0:00 and 0:30; at 1:00 SQS moves
// it to the DLQ and the replayer draws 45 s (30 s to 1 min) and sends it
// with DelaySeconds 45. It reappears at 1:45, fails at 1:45 and 2:15,
// reaches the DLQ at 2:45, and is replayed with 1 min 30 s (1 to 2 min):
// back at 4:15. Its third life ends at 5:15; the third replay waits 3 min
// (2 to 4 min) and it is back at 8:15; at 9:15 it reaches the DLQ a fourth
// time and goes to the operator queue as AttemptsExhausted. Watching the
// main queue one sees it 45 s, 1 min 30 s and 3 min after each failure.
//
// The jittered delay is reproducible: the strategy draws from a source
// seeded by the DLQ MessageId and the attempt (decorators such as
// backoff.Capped and backoff.MaxAttempts pass the source through), so every
// receive of a held message finds the same due time. The DLQ's retention
// must outlast the longest delay, and the DLQ must not have a redrive
// policy of its own: holds count as receives, so SQS would move a held
// message on to the DLQ's own dead-letter queue at its next receive, out
// of the replayer's reach. Nothing checks either for you (the Replayer's
// API has no GetQueueAttributes): check them when you create the queues.
//
// # Delivery semantics
//
// Send first, delete after: a message leaves the DLQ only once its target
// (or the operator queue) accepted it, and only the entries SQS accepted are
// deleted; failures stay in the DLQ for the next pass. An entry a batch
// answer lists in neither Successful nor Failed is unconfirmed, as if lost
// in transit: a send, a delete or a hold is tried again, never taken as
// done. Sends go in batches
// of at most ten entries and 1 MiB; deletes and holds that fail in a
// retryable way are retried (five tries). A crash or a delete that fails
// for good between the two leaves a copy in the DLQ that is sent again: on
// FIFO targets the deduplication id is fixed by the DLQ MessageId and the
// attempt, so within SQS's 5-minute window no second copy is enqueued; on
// standard targets that is a duplicate (at least once, never lost).
// Escalation is an explicit send to the operator queue, never a second
// redrive.
//
// A message SQS will not accept as it is reaches the operator queue in a
// form it accepts: a replay SQS refuses becomes an escalation (Unsendable,
// or TooLarge), and an escalation SQS refuses is sent again with its
// attributes moved into the metadata, then with them left out (the detail
// names them), then as the body alone. One that fits in no form is
// rejected: logged as an error, reported to Hooks.Rejected and in
// Report.Rejected, and held in the DLQ for MaxBackoff, never retried
// silently.
//
// Every hold asks for at most 12 h from the message's receive, as SQS
// refuses more: in Run and Drain from when the receive was sent; under
// Lambda, where the event source mapping received the batch before the
// invocation (a batching window of up to 5 min), from 15 minutes before
// the invocation. A hold is reported (Held, with its end) only once SQS
// took it.
//
// # FIFO order
//
// A FIFO group's later messages never pass an earlier one that is still in
// the DLQ: within a batch a group's messages are sent one call after the
// other, and one that does not move (held, failed, skipped by the Filter,
// seen before in this Drain, rejected) keeps the rest of its group behind
// it, in the DLQ. A group is never in two batches under way: SQS keeps a
// FIFO DLQ's group in one receive until its messages are deleted or visible
// again, and the Replayer claims each group for one batch besides. On a
// standard DLQ nothing is ordered.
//
// # Throughput and concurrency
//
// Run and Drain keep up to Options.Concurrency batches in flight (default
// 16): each receives up to ten messages, sends them, and deletes or holds
// them, while the others do the same. At 10 ms a call that moves several
// thousand messages a second at 0.3 calls per message (see BENCHMARKS.md),
// beside about 300 for one batch at a time and SQS's own move task's 500.
// RateLimit caps messages per second taken from the DLQ across all batches,
// counted on receives, in bursts of at most one receive (ten, or the rate
// rounded down when it is below ten), or a tenth of a second's worth when
// that is more, so that at a high rate enough receives run at once to keep
// up. A receive starts only when the rate allows what it may bring, so a
// message waits before it is received, never after: its pass starts at
// once, within its visibility timeout. A Replayer is safe for concurrent
// use; Filter and Hooks are called from several goroutines at once.
//
// # Modes and options
//
// Run is a long-running worker; Drain is one pass over what is there now,
// for a CLI or cron; HandleLambda serves a Lambda whose event source is the
// DLQ, reporting held, waiting, skipped, failed and rejected messages as
// batch item failures. DryRun reports decisions and moves nothing; Filter
// picks the messages to move. Hooks and a slog.Logger report replays,
// holds, escalations (with reason), failures and rejections, never bodies or
// attribute values.
//
// # Telemetry and trace context
//
// A replayed or escalated message keeps its trace context as it came: its
// AWSTraceHeader system attribute, and trace attributes (traceparent,
// tracestate, baggage), which are the last to be moved aside when a message
// has no room, so a consumer sees its trace without calling Restore.
//
// Spans and metrics go through smithy-go's interfaces (plug OpenTelemetry
// in with smithy-go's adapters; examples/otel). Both are off by default,
// and then cost a nil check. With Options.TracerProvider: "receive <dlq>"
// (CLIENT) per receive; "process <dlq>" (CONSUMER) per message, carrying
// its decision (sqskit.replay.outcome: replayed, escalated, held, waiting,
// skipped, failed, rejected, or dry_run_<action>; sqskit.replay.reason;
// sqskit.replay.attempt) and the conventions' attributes
// (messaging.system aws_sqs, messaging.destination.name,
// messaging.message.id); "send <queue>" (PRODUCER) per send call, under
// its first message's decision span, smithy-go's interface having no
// links; "delete <dlq>" and "change_visibility <dlq>" (CLIENT, type
// settle) per settle call. With Options.Propagator, a message's decision
// span is its producer's child, so a replay shows in the trace of the
// message's first send, beside each time it was handled. With
// Options.MeterProvider: messaging.client.consumed.messages (from the
// DLQ), sqskit.replay.decisions (by sqskit.replay.outcome and
// sqskit.replay.reason), messaging.client.sent.messages (by destination
// and error.type) and messaging.client.operation.duration. Hooks get each
// message's ctx, which carries its decision span.
//
// # Errors
//
// Invalid options or policy make New return an error matching ErrConfig,
// before any call to SQS: among them every setting that would loop (the
// operator queue or a target being the DLQ, the operator queue being a
// target, the counter attribute being sqskit-replay, a NaN or infinite
// RateLimit, an invalid ReceiveBackoff). Run returns when its ctx is done
// (nil) or when a call fails for good (a queue does not exist, access to a
// receive, a send, a delete or a hold is denied), once the batches under
// way are done: a replayer that cannot delete from the DLQ would send each
// message again at every visibility timeout. Other receive errors wait
// ReceiveBackoff, never less than 100 ms, with one receive probing for the
// others. Drain returns its Report with the error that stopped it.
// HandleLambda reports the messages of a call that failed for good as
// failures, one by one (failing the invocation would make Lambda send the
// moved ones again); it returns an error matching ErrMalformedEvent for a
// record without a messageId; a rejected message's error matches
// ErrRejected.
//
// # Testing
//
// Code that uses a Replayer is tested against sqsfake, in memory, with
// testing/synctest for time: see this package's tests, which also run the
// Replayer against the fauxqs emulator over HTTP, and a soak of Run, Drain
// and HandleLambda under faults on every call.
package replay
