// Package replay moves messages out of a dead-letter queue: back to the
// queue they failed on, after a growing, jittered delay, a limited number of
// times, and then to an operator queue for a human, with the reason and the
// message's history. It reads and writes the attempt counter of the AWS
// sample amazon-sqs-dlq-replay-backoff (sqs-dlq-replay-nb), so either
// understands the other.
//
//	r, err := replay.New(client, dlqURL, operatorURL, func(o *replay.Options) {
//		o.Target = mainURL
//	})
//	if err != nil {
//		return err // matches ErrConfig: nothing was called
//	}
//	return r.Run(ctx) // until ctx is done
//
// # How do I …
//
//   - run it as a worker beside a service: [Replayer.Run];
//   - empty a DLQ once, after an incident: [Replayer.Drain], whose [Report]
//     counts each outcome;
//   - run it as a Lambda function on the DLQ: lambda.Start(r.HandleLambda)
//     ([Replayer.HandleLambda]), or deploy cmd/sqs-dlq-replay, the sample's
//     drop-in replacement;
//   - send each message back to the queue it came from: Options.Sources
//     (DeadLetterQueueSourceArn → URL) instead of Options.Target;
//   - replay more or less often, sooner or later: [Policy] (MaxAttempts,
//     Backoff: any [backoff.Strategy], MaxBackoff);
//   - escalate every message at once: Policy{MaxAttempts: [NoReplays]};
//   - see what it would do: Options.DryRun, or [Policy.Decide] on one
//     message;
//   - move only some messages: Options.Filter; at a bounded pace:
//     Options.RateLimit;
//   - read why a message was escalated: its sqskit-replay attribute is a
//     [Metadata] (Reason, attempts, first failure, source); [Restore] gives
//     back an attribute the replayer moved into it;
//   - watch it: Options.Hooks, Logger, TracerProvider, MeterProvider,
//     Propagator.
//
// # Before you start
//
// The DLQ's retention must outlast the longest delay (Policy.MaxBackoff,
// 12 h by default), and the DLQ must have no redrive policy of its own:
// holding a message until its replay is due counts as a receive, so SQS
// would move it on, out of the replayer's reach. Run and Drain check both
// before they receive, when the client has GetQueueAttributes, and refuse
// with ErrConfig. The operator queue is a plain queue that a human reads.
//
// # What it guarantees
//
// A message leaves the DLQ only once its target or the operator queue
// accepted it; a crash in between sends it again, which on FIFO targets
// the deduplication id (fixed by the DLQ MessageId and the attempt) makes
// a no-op. A FIFO group's later messages never pass an earlier one still in
// the DLQ. Nothing in a message's attributes chooses where it goes, its
// deduplication id or a time beyond the policy's bounds; a counter or
// metadata the replayer did not write is escalated with the reason
// ([InvalidCounter], [InvalidMetadata]), never looped, dropped or held
// forever. The reasons are the [Reason] constants.
//
// Delays up to 15 minutes on a standard target are sent as DelaySeconds;
// longer ones, and every delay on a FIFO target, wait in the DLQ (its
// visibility extended, up to 12 h at a time) until due. The jitter is
// seeded by the message, so every receive computes the same due time.
//
// The long form, with what a replayed message carries and how each rule
// is kept, is docs/replay.md:
// https://github.com/sqskit/sqskit/blob/main/docs/replay.md
//
// # One engine
//
// A Replayer is its Policy run as a batch handler on package consumer's
// engine (Run, Drain) and on [handler.NewBatchLambda] (HandleLambda), with
// one fifo.Sender per target: receives, the heartbeat, holds, deletes, the
// rate limit, shutdown, spans and metrics are the consumer's, with its
// rules and defaults.
//
// # Errors
//
// New returns an error matching [ErrConfig] for an invalid option or
// policy, before any call to SQS, among them every setting that would loop
// (the operator queue or a target being the DLQ, however its URL is
// spelled). Run returns nil when its ctx is done, or an error when a call
// fails for good (a queue does not exist, access is denied). A message SQS
// accepts in no form, not even as an escalation, is rejected
// ([ErrRejected]) and stays in the DLQ for a human.
//
// Tests of code that uses a Replayer run it against sqsfake, in memory,
// with testing/synctest for time.
package replay
