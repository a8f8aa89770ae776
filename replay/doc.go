// Package replay moves messages out of a dead-letter queue: back to the
// queue they failed on, after a growing, jittered delay, a limited number of
// times, and then to an operator queue for a human, with the reason and the
// message's history.
//
//	r, err := replay.New(client, dlqURL, func(o *replay.Options) {
//		o.Target = mainURL            // or Sources: DeadLetterQueueSourceArn → URL
//		o.OperatorQueue = operatorURL // required
//		o.Policy = replay.Policy{MaxAttempts: 5}
//	})
//	err = r.Run(ctx)                 // a worker; or r.Drain(ctx) for one pass;
//	lambda.Start(r.HandleLambda)     // or a Lambda on the DLQ
//
// # The policy
//
// Policy.Decide is pure. It reads the attempt counter from the attribute
// sqs-dlq-replay-nb (a Number, the attribute of the AWS sample
// amazon-sqs-dlq-replay-backoff, so messages replayed by either are
// understood by the other), adds one, and replays with the delay the Backoff
// strategy gives for that attempt, or escalates when attempts run out. A
// counter that is not a whole number, is negative, or is beyond any real
// count is forged: the message is escalated as InvalidCounter, never looped.
// Other reasons: TooLarge (no room for the replay metadata), AttributeBudget
// (ten attributes and KeepAttributesInPlace), NotRoutable (no allow-listed
// target, or a FIFO target and no group id).
//
// # What a replayed message carries
//
// The body byte for byte; every message attribute (String, Number, Binary,
// custom types; list fields cleared); the group id on FIFO targets; the
// counter; and the attribute sqskit-replay with its provenance: original
// MessageId, first failure time, source queue ARN, last delay (decorrelated
// jitter grows from it). That is at most two attributes. With nine user
// attributes the counter moves into sqskit-replay; with ten, the last user
// attribute by name moves there too, and Restore gives it back.
//
// # Delays
//
// Each delay counts from when the message's last life on the main queue
// began. Standard targets get delays up to 900 s as DelaySeconds. Longer
// delays, and every delay on a FIFO target (FIFO queues refuse per-message
// delays), are honoured by holding the message in the DLQ with
// ChangeMessageVisibility (up to 12 h a time) until it is due, then sending
// it. No state is kept outside the message: the jittered delay is drawn from
// a source seeded by the original MessageId and the attempt, so every
// receive of the message, by any replayer, computes the same due time. The
// DLQ's retention must outlast the longest delay, and the DLQ must not have
// a redrive policy of its own (holds count as receives).
//
// # Delivery semantics
//
// Send first, delete after: a message leaves the DLQ only once its target
// (or the operator queue) accepted it, and only the entries SQS accepted are
// deleted; failures stay in the DLQ for the next pass. A crash or a failed
// delete between the two leaves a copy in the DLQ that is sent again: on
// FIFO targets the deduplication id is fixed by the original MessageId and
// the attempt, so within SQS's 5-minute window no second copy is enqueued;
// on standard targets that is a duplicate (at least once, never lost).
// Escalation is an explicit send to OperatorQueue, never a second redrive.
// On FIFO targets a group's messages keep their order: while one is held,
// the later ones of its group wait behind it.
//
// # Modes and options
//
// Run is a long-running worker (batch receive, send and delete, ten at a
// time; a batch in progress at shutdown is finished); Drain is one pass over
// what is there now, for a CLI or cron; HandleLambda serves a Lambda whose
// event source is the DLQ, reporting held and failed messages as batch item
// failures. RateLimit caps messages per second, DryRun reports decisions and
// moves nothing, Filter picks the messages to move. Hooks and a slog.Logger
// report replays, holds, escalations (with reason) and failures, never
// bodies.
//
// # Errors
//
// Invalid options or policy make New return an error matching ErrConfig. Run
// returns when its ctx is done (nil) or when a receive fails for good (the
// DLQ does not exist, access is denied).
package replay
