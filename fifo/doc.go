// Package fifo is sqskit's sender for every SQS queue, standard and FIFO
// alike (it is named for the hard case it gets right): [Sender] validates,
// batches and retries sends, with several calls in flight; on FIFO queues
// it adds group ids, deduplication ids, batches that keep each group's
// order, and retries that stay inside the deduplication window. A
// [Batcher] gathers the sends of many concurrent callers into batches.
//
//	s, err := fifo.NewSender(client, queueURL, func(o *fifo.SenderOptions) {
//		o.Dedup = fifo.KeyDedup("orders") // same key, same id, across restarts
//	})
//	if err != nil {
//		return err // matches ErrConfig
//	}
//	res, err := s.Send(ctx, fifo.Message{Body: body, GroupID: customerID, DedupKey: orderID})
//	results := s.SendBatch(ctx, msgs) // one Result per message, in order
//
// # How do I …
//
//   - send one message, or many: [Sender.Send], [Sender.SendBatch] (one
//     [Result] per message, in order);
//   - send from many goroutines, batched: [Sender.NewBatcher], then
//     [Batcher.Send] from each and [Batcher.Close] at shutdown;
//   - keep a customer's messages in order: Message.GroupID (or
//     SenderOptions.GroupID to derive it) on a FIFO queue;
//   - send each message once even when my process restarts: [KeyDedup]
//     with Message.DedupKey (or [ContentDedup], or your own
//     Message.DeduplicationID); [RandomDedup], the default, deduplicates
//     retries only;
//   - delay a message: Message.DelaySeconds (standard queues; FIFO queues
//     take no per-message delay);
//   - carry trace context to the consumer: SenderOptions.Propagator, or
//     Message.TraceHeader for X-Ray;
//   - bound retries: SenderOptions.SendMaxAttempts and SendBackoff, on top
//     of the SDK client's own retryer;
//   - tell what happened to a message: its Result (Err matches [ErrInvalid]
//     for a message SQS would refuse, *[GroupBlockedError] when an earlier
//     message of its group failed, *[WindowExceededError] past the
//     deduplication window; Unconfirmed counts requests whose answer was
//     lost; Reordered says it may sit behind a later message of its
//     group);
//   - test code that sends: run it against sqsfake, with testing/synctest
//     for the waits.
//
// # What it guarantees
//
// On a FIFO queue a message whose Result has no error is in the queue
// exactly once, even when an answer was lost and it was sent again: its
// deduplication id is fixed before the first attempt and retries stay
// inside SQS's 5-minute window. On a standard queue delivery is at least
// once: a lost answer can leave a copy (Result.Unconfirmed counts them).
// A FIFO group's messages arrive in the order given: never two calls in
// flight share a group, and after a message fails for good its group's
// later messages fail with GroupBlockedError rather than overtake it
// (SenderOptions.ContinueGroupAfterFailure sends them anyway). The one
// reordering SQS itself can cause is flagged in Result.Reordered.
//
// Every message is checked as SQS would before any call (body, size,
// attributes, ids); trace context never costs a message an attribute or a
// send. The long form (delivery, retries and how they stack on the SDK's,
// ordering, deduplication, validation, the attribute budget, concurrency)
// is docs/fifo.md; spans and metrics are in docs/telemetry.md.
//
// # Throughput
//
// An SQS call takes 5 to 20 ms, so throughput comes from calls in flight:
// SendBatch keeps up to SenderOptions.SendConcurrency (10) calls of ten
// messages in flight; on FIFO queues a batch carries a group's consecutive
// messages together, so even few groups fill many calls. A throttled call
// halves the calls in flight, and they grow back, so sends settle at SQS's
// quota rather than against it.
//
// # Receiving
//
// Package consumer receives: on FIFO queues a retry after a failure in
// transit reuses its ReceiveRequestAttemptId, so a lost answer's messages
// come back at once.
//
// # Errors
//
// NewSender and NewBatcher return an error matching
// [ErrConfig] for invalid options; a nil option function is skipped.
// Errors from SQS keep their SDK types (*types.QueueDoesNotExist, …);
// entries SQS refuses in Failed[] are *[EntryError]. A message's content
// never panics the Sender.
package fifo
