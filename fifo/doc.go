// Package fifo sends messages to SQS queues, FIFO and standard alike: Sender
// and Batcher validate, batch and retry sends to any queue, at least once on
// a standard queue and exactly once per deduplication window on a FIFO
// queue. On FIFO queues they add group ids, deduplication ids, batching that
// keeps each group's order, and retries that stay inside the deduplication
// window. Receiver receives from FIFO queues with a ReceiveRequestAttemptId
// that survives a retry.
//
//	s, err := fifo.NewSender(client, queueURL, func(o *fifo.SenderOptions) {
//		o.Dedup = fifo.KeyDedup("orders") // same key, same id, across restarts
//	})
//	res, err := s.Send(ctx, fifo.Message{Body: body, GroupID: customerID, DedupKey: orderID})
//	results := s.SendBatch(ctx, msgs) // one Result per message, in order
//
// # Delivery
//
// FIFO queues: every message gets its deduplication id before its first
// attempt and keeps it through every retry, so a message whose Result has
// no error is in the queue exactly once, even when an acknowledgement was
// lost and the message was sent again. SQS remembers an id for 5 minutes:
// the same id sent after that is a new message.
//
// Standard queues: at least once. SQS has no deduplication there, so a
// request whose answer was lost after SQS stored the message (a 5xx, a
// network error, a timeout) leaves a copy, and its retry adds another.
// Result.Unconfirmed counts those requests: the queue holds 1 to
// 1+Unconfirmed copies of a message sent without error, 0 to Unconfirmed of
// one that failed. SendMaxAttempts (3 by default) bounds them. Consumers of
// standard queues must tolerate duplicates anyway: SQS itself delivers at
// least once.
//
// A message whose Result has an error is not on the queue unless
// Unconfirmed > 0 (a request cut by a cancelled context counts): it may
// then be there, once on a FIFO queue. Resending it there with the same
// DeduplicationID within the window is safe; a WindowExceededError says
// when it no longer is.
//
// # Retries, and how they stack on the SDK's
//
// Each call goes through the SDK client's own retryer first: the standard
// retryer makes up to 3 requests per call (sqs.Options.RetryMaxAttempts),
// with backoff up to 20 s, on throttling, 5xx and network errors. When the
// SDK gives up, Sender waits SendBackoff (full jitter, 100 ms to 5 s) and
// makes another call, up to SendMaxAttempts calls per message: 3 on
// standard queues, 10 on FIFO queues, where retries carry the same ids and
// cannot duplicate. A message therefore costs at most SendMaxAttempts ×
// RetryMaxAttempts requests (9 on a standard queue with the defaults). To
// bound duplicates on a standard queue more tightly, lower either; with
// SendMaxAttempts 1 the SDK alone retries. On FIFO queues a message is
// retried only within DedupWindow (4m30s by default) of its first attempt;
// past it the send fails with WindowExceededError, which says the message
// may be duplicated if sent again. Entries SQS reports in Failed[] are
// retried only when SenderFault is false. Throttling and client errors
// stored nothing; a client error is not retried.
//
// SendBatch and the Batcher make throttling their own: the SDK does not
// retry a throttled batch call (its wait of up to seconds would hold the
// call's groups, spend the client's retry tokens and hide the throttle),
// the messages wait SendBackoff as after any failed call (the call counts
// as an attempt), and the pipeline slows down: its calls in flight halve,
// no call starts for 20 ms, and they grow back by an eighth of a call per
// round trip, so it settles just under the quota (300 calls a second per
// action on a FIFO queue without high-throughput mode) with few calls
// throttled. The next SendBatch call or Batcher of the same Sender starts
// where the last left off. Send makes one call and leaves throttling to
// the SDK.
//
// # Ordering
//
// SQS keeps the order of one FIFO group in the order messages arrive.
// Sender makes them arrive in the order given (SendBatch) or in the order
// Send calls reached it (Batcher): several batches are in flight at once,
// but never two that share a group, and a group's later messages go only
// after its earlier ones were acknowledged or failed for good. When an entry
// fails and is retried, later messages of its group wait for it while other
// groups go on. When one fails for good, the later messages of its group in
// the same call (or waiting in the Batcher) fail with GroupBlockedError,
// which names it, rather than overtake it; earlier messages are unaffected.
// Set ContinueGroupAfterFailure to send them anyway.
//
// A batch carries a group's consecutive messages together (the oldest
// message with the rest of its group behind it, then other groups' runs),
// so that batches hold few groups and many can be in flight: 30 groups
// with messages waiting fill ten calls, where one message per group per
// batch would fill three.
//
// One case cannot be prevented: SQS may accept a later entry of a group from
// the same batch while failing an earlier one. The earlier message is then
// retried and delivered after it (nothing is lost), and its Result says
// Reordered, whether the retry succeeds or fails after SQS may have stored
// it. A lost answer to a batch carrying several messages of a group cannot
// be told apart from a batch SQS stored whole, and SQS may have failed an
// earlier entry and stored a later one: the earlier messages' Results then
// say Reordered too, as do those of messages the SDK sent more than once in
// one call beside later messages of their group. So Reordered means "may
// sit behind a later message of its group"; a message without it does not.
// A group whose messages go one per call (Send, or one message per group
// in each SendBatch call) avoids all of this at the cost of throughput.
//
// Standard queues keep no order: GroupID there names a fair-queue tenant,
// and no message waits for or is blocked by another.
//
// # Deduplication ids
//
// A FIFO message's id is its own DeduplicationID, or one from
// SenderOptions.Dedup: RandomDedup (the default: retries are deduplicated,
// equal content is not), ContentDedup (SHA-256 of the body, as SQS's
// ContentBasedDeduplication, optionally with chosen attributes and the
// group), KeyDedup (from a caller key: a resend after a crash is
// deduplicated too) or ProvidedDedup. The id is sent explicitly, so the
// queue's ContentBasedDeduplication setting does not matter.
//
// # Validation and errors
//
// Before any call, each message is checked as SQS would: body characters,
// size with attributes (MaxMessageBytes), attribute count, names, types and
// values (Number: 38 significant digits, magnitude 10^-128 to 10^126),
// group and deduplication id charset and length, a group id present on FIFO
// queues, no per-message delay on FIFO queues, no deduplication id on
// standard queues. Failures are *ValidationError, matching ErrInvalid; one
// caused by the Dedup strategy also matches its error (ErrNoDedupKey,
// ErrNoDedupID). Errors from SQS keep their SDK types
// (*types.QueueDoesNotExist …); entries refused in Failed[] are *EntryError.
// Invalid options make NewSender and NewBatcher return an error matching
// ErrConfig. A message's content never panics the Sender.
//
// # Receiving
//
// Receiver gives each logical receive a fresh ReceiveRequestAttemptId and
// reuses it when the receive is retried after a failure in transit, so the
// messages of a lost response come back at once instead of staying invisible
// until their visibility timeout. The id is dropped after a response and
// never sent to standard queues. sqskit's consumer uses it.
//
// # Trace context and the attribute budget
//
// SQS carries trace context two ways, and the Sender writes both:
//
//   - the AWSTraceHeader system attribute (AWS X-Ray's header, which Lambda
//     and X-Ray read): Message.TraceHeader, or, when it is empty,
//     SenderOptions.Propagator's "X-Amzn-Trace-Id" key. It counts toward
//     neither the ten message attributes nor the message size.
//   - message attributes (W3C traceparent and tracestate, or whatever the
//     Propagator writes): String attributes, which do count.
//
// The budget rule: trace context never costs the caller an attribute or a
// send. The Propagator's fields are added to a copy of the message's
// attributes (the caller's map is not changed), traceparent first, then
// tracestate, then the rest by name, only while the message has fewer than
// ten attributes and stays within MaxMessageBytes; a key the message
// already carries keeps the caller's value; a field that does not fit, or
// that SQS would refuse, is skipped, counted
// (sqskit.send.trace_context.skipped) and logged at Debug, and the message
// goes without it. A message with ten attributes of its own thus carries
// its trace in AWSTraceHeader only. Trace fields never enter a
// deduplication id (ContentDedup reads the caller's attributes). Package
// consumer and package handler extract both into the handler's ctx;
// package replay keeps both when it replays.
//
// # Telemetry
//
// Spans and metrics go through smithy-go's interfaces, as the SDK's own
// clients do; plug OpenTelemetry in with smithy-go's
// smithyoteltracing.Adapt and smithyotelmetrics.Adapt (examples/otel).
// Both are off by default and then cost a nil check.
//
// SenderOptions.TracerProvider records a PRODUCER span "send <queue>" per
// Send, per SendBatch call (with messaging.batch.message_count) and per
// Batcher.Send, with the messaging conventions' attributes
// (messaging.system aws_sqs, messaging.destination.name,
// messaging.operation.type send, messaging.message.id for one message,
// error.type on failure). The trace context the Propagator writes is that
// span's, and Send's and SendBatch's calls to SQS are made under it, so
// the SDK's own spans nest there; the Batcher's calls run on its own
// goroutine, outside any caller's span (smithy-go's interface has no
// links).
//
// SenderOptions.MeterProvider records messaging.client.sent.messages (by
// error.type when a message failed: invalid, group_blocked,
// dedup_window_exceeded, closed, or SQS's code),
// messaging.client.operation.duration (seconds, per call) and
// sqskit.send.trace_context.skipped.
//
// # Concurrency
//
// Sender and Receiver are safe for concurrent use (give each poller its own
// Receiver). An SQS call takes 5 to 20 ms, so throughput comes from calls in
// flight: messages a second ≤ calls in flight × messages per call ÷
// latency. SendBatch keeps up to SenderOptions.SendConcurrency calls in
// flight (10 by default: up to 10,000 messages a second at 10 ms per call),
// each on a goroutine it joins before it returns; on FIFO queues only as
// many as there are groups with messages to send, so throughput there comes
// from many groups, and, once SQS throttles, as many as its quota takes. A Batcher owns a goroutine and one per call in flight
// (up to BatcherOptions.SendConcurrency, by default the Sender's); Close
// sends what it accepted and waits for them. Each SendBatch call and each
// Batcher has its own bound; concurrent callers add up. Send makes one call.
//
// # Testing
//
// Waits (retries, the Batcher's linger, the Receiver's attempt id life) run
// on the time package's clock: tests drive them with testing/synctest and
// sqsfake. No Options field takes a clock.
package fifo
