// Package fifo sends to SQS FIFO queues: group ids, deduplication ids,
// batching that keeps each group's order, and retries that stay inside the
// deduplication window; and it receives with a ReceiveRequestAttemptId that
// survives a retry.
//
//	s, err := fifo.NewSender(client, queueURL, func(o *fifo.Options) {
//		o.Dedup = fifo.KeyDedup("orders") // same key, same id, across restarts
//	})
//	res, err := s.Send(ctx, fifo.Message{Body: body, GroupID: customerID, DedupKey: orderID})
//	results := s.SendBatch(ctx, msgs) // one Result per message, in order
//
// # Ordering
//
// SQS keeps the order of one group in the order messages arrive. Sender makes
// them arrive in the order given: SendBatch sends its batches one at a time;
// a Batcher (for concurrent callers) keeps arrival order per group and never
// has two batches of one group in flight. When an entry fails and is retried,
// later messages of its group wait for it. When one fails for good, the
// later messages of its group in the same call (or waiting in the Batcher)
// fail with GroupBlockedError rather than overtake it; set
// ContinueGroupAfterFailure to send them anyway.
//
// One case cannot be prevented: SQS may accept a later entry of a group from
// the same batch while failing an earlier one. The earlier message is then
// retried and delivered after it (nothing is lost), and its Result says
// Reordered. Groups of one message per batch avoid this at the cost of
// throughput.
//
// # Deduplication and failures
//
// Every FIFO message gets its deduplication id before its first attempt:
// the message's own DeduplicationID, or one from Options.Dedup —
// RandomDedup (the default: retries are deduplicated, equal content is not),
// ContentDedup (SHA-256 of the body, as SQS's ContentBasedDeduplication,
// optionally with chosen attributes and the group), KeyDedup (from a caller
// key: a resend after a crash is deduplicated too) or ProvidedDedup. The id
// is sent explicitly, so the queue's ContentBasedDeduplication setting does
// not matter.
//
// Transient failures (throttling, 5xx, network errors, a response lost after
// SQS stored the message) are retried with Options.Retry and the same ids,
// so a retry never enqueues a second copy. SQS forgets an id after 5
// minutes: a message is retried only within DedupWindow (4m30s by default)
// of its first attempt; past it the send fails with WindowExceededError,
// which says the message may be duplicated if sent again. Entries SQS
// reports in Failed[] are retried only when SenderFault is false.
//
// Delivery is therefore exactly once into the queue for every message whose
// Result has no error, and at most once for those that failed, except
// WindowExceededError and errors from a cancelled context, after which the
// message may or may not be on the queue.
//
// # Validation
//
// Before any call, each message is checked as SQS would: body characters,
// size with attributes (MaxMessageBytes), attribute count, names and types,
// group and deduplication id charset and length, a group id present on FIFO
// queues, no per-message delay on FIFO queues. Failures are
// *ValidationError, matching ErrInvalid. Invalid options make NewSender
// return an error matching ErrConfig.
//
// Standard queues work too: no deduplication ids are sent, GroupID names a
// fair-queue tenant, and DelaySeconds is allowed.
//
// # Receiving
//
// Receiver gives each logical receive a fresh ReceiveRequestAttemptId and
// reuses it when the receive is retried after a failure in transit, so the
// messages of a lost response come back at once instead of staying invisible
// until their visibility timeout. The id is dropped after a response and
// never sent to standard queues. sqskit's consumer uses it.
//
// # Concurrency
//
// Sender and Receiver are safe for concurrent use (give each poller its own
// Receiver). A Batcher owns a goroutine and one per batch in flight; Close
// sends what it accepted and waits for them.
package fifo
