// Package sqsfake is an in-memory Amazon SQS for tests: a Server that holds
// queues and speaks SQS's wire protocol, so the real SDK client, services in
// any language and the AWS CLI run against it unchanged.
//
// # Three ways in
//
// In process, with the SDK's own client and no socket:
//
//	srv := sqsfake.New()
//	client := srv.Client() // a real *sqs.Client; use it wherever you use one
//
// Over HTTP on a loopback port, in the spirit of net/http/httptest, for code
// that builds its own client (config.LoadDefaultConfig plus BaseEndpoint or
// AWS_ENDPOINT_URL_SQS) or runs in another process:
//
//	hs := sqsfake.StartHTTP(t, srv) // closed when t ends
//	client := hs.SDKClient()        // BaseEndpoint hs.URL, static credentials, the SDK's defaults
//
// From any language or the AWS CLI, with the standalone emulator:
//
//	go run github.com/sqskit/sqskit/cmd/sqsfake -addr 127.0.0.1:9324 -queue orders
//	aws --endpoint-url http://127.0.0.1:9324 sqs receive-message \
//	    --queue-url http://127.0.0.1:9324/123456789012/orders
//
// Server.Handler mounts the same endpoint on any http.Server.
//
// # The wire protocol
//
// The Server speaks AWS JSON 1.0, what aws-sdk-go-v2 and every current AWS
// SDK and AWS CLI v2 send to SQS: POST with X-Amz-Target:
// AmazonSQS.<Operation> and a JSON body with the model's member names
// (binary values in base64). Responses are written by the SDK's own
// generated serializers for each output shape, so the member names cannot
// drift from what clients read. Errors carry what the service sends: HTTP 400
// (or the shape's modeled status: 403 for OverLimit, 404 for
// ReceiptHandleIsInvalid, 500 for server faults), a body
// {"__type":"com.amazonaws.sqs#<Shape>","message":...} and the header
// x-amzn-query-error: <legacy code>;Sender|Receiver, from which each SDK
// builds its typed errors with the legacy codes real SQS gives
// (*types.QueueDoesNotExist whose ErrorCode() is
// AWS.SimpleQueueService.NonExistentQueue). Signatures are accepted and not
// checked; any credentials and region work. The older query protocol is
// spoken too: form-encoded Action=… requests (POSTed, or in a GET's URL)
// answered in XML, errors as <ErrorResponse>, as older SDKs and
// distribution-packaged AWS CLIs send them.
//
// Queue URLs point back at the host each request was sent to
// (http://127.0.0.1:9324/123456789012/orders over HTTP,
// https://sqs.us-east-1.amazonaws.com/123456789012/orders in process), so
// clients that route by them reach the server; Options.Endpoint fixes them
// instead. A request may name a queue by any host: only the account and name
// in the path count.
//
// # What a test sees
//
// Server.Client is a real *sqs.Client whose transport hands each request to
// the Server: the SDK validates input before sending (a nil QueueUrl,
// MessageBody, ReceiptHandle, batch Entries or attribute DataType is a
// smithy.InvalidParamsError inside the *smithy.OperationError, and nothing is
// sent), serialises it, and turns the answer into its outputs and errors
// (*smithy.OperationError around *awshttp.ResponseError, with the HTTP status
// and request id, around the typed error), checking message checksums on the
// way. In process and over HTTP a test sees exactly the errors and results a
// real *sqs.Client gets; TestInProcessMatchesHTTP holds the two paths to
// that. Unlike a default SDK client, Client's retries are off
// (aws.NopRetryer): an injected fault reaches the call it targets, once, and
// Calls counts one call per call. Pass optFns to Client to turn them on.
//
// # What it models
//
// sqsfake behaves like the service, not like a mock. It passes the whole
// sqstest conformance suite, in process and over HTTP; the suite also runs
// against the fauxqs emulator and real SQS. In short:
//
//   - standard and FIFO queues (a FIFO queue needs both the .fifo suffix and
//     FifoQueue=true; FifoQueue on a standard queue, even false, is an unknown
//     attribute, as on SQS), queue attributes with their defaults, ranges and
//     combinations, the Approximate* counters, CreateQueue idempotence,
//     QueueDeletedRecently for 60 s after DeleteQueue, PurgeQueueInProgress
//     for 60 s after PurgeQueue, paginated ListQueues and
//     ListDeadLetterSourceQueues;
//   - tags: TagQueue, UntagQueue, ListQueueTags and tags at creation, with the
//     quota's key and value rules (no aws: prefix);
//   - visibility timeouts (queue default, per receive, ChangeMessageVisibility
//     counted from the call, at most 12 hours after the receive), receipt
//     handles that change on every receive and are unique for the Server's
//     life, across queues deleted and created again under one name;
//   - per-message and per-queue delays (FIFO queues refuse per-message
//     delays, and a change of a FIFO queue's delay applies to messages
//     already waiting, as the developer guide says; on standard queues it does
//     not), retention expiry;
//   - message attributes round-tripped exactly with SQS's digests
//     (MD5OfMessageBody, MD5OfMessageAttributes, MD5OfMessageSystemAttributes),
//     with every limit: 1 MiB per message and per batch, ten attributes,
//     name and type rules, Numbers of up to 38 digits between 10^-128 and
//     10^+126, body characters;
//   - system attributes on request: SenderId, SentTimestamp,
//     ApproximateReceiveCount, ApproximateFirstReceiveTimestamp,
//     MessageGroupId, MessageDeduplicationId, SequenceNumber,
//     DeadLetterQueueSourceArn, AWSTraceHeader;
//   - redrive: a message received maxReceiveCount times moves to the
//     dead-letter queue on its next receive attempt, keeping MessageId, body,
//     attributes and receive count, with DeadLetterQueueSourceArn set; a FIFO
//     message's deduplication id becomes its MessageId, and a FIFO DLQ
//     restarts its retention period. RedrivePolicy and RedriveAllowPolicy
//     are validated, and a dead-letter queue's RedriveAllowPolicy (denyAll,
//     byQueue) is enforced when a source names it;
//   - message move tasks (StartMessageMoveTask, ListMessageMoveTasks,
//     CancelMessageMoveTask): SQS's own redrive out of a dead-letter queue, at
//     MaxNumberOfMessagesPerSecond on the server's clock, one running task per
//     source, progress counters, cancel, and without a DestinationArn each
//     message back to the queue it was dead-lettered from;
//   - FIFO: order within a group, a group is locked while any of its messages
//     is in flight, one receive returns several messages of one group,
//     5-minute deduplication by id or SHA-256 of the body with queue or group
//     scope (a duplicate send returns the original MessageId and enqueues
//     nothing), sequence numbers, and ReceiveRequestAttemptId: a retry within
//     5 minutes returns the same messages and receipt handles and resets their
//     visibility, until any of them is deleted, changed or received again;
//   - long polling: a receive with a wait blocks until a message can be
//     received (sent, delay ended, visibility expired, FIFO group unlocked,
//     moved in by a move task), the wait ends, or ctx is done;
//   - the in-flight limit (120,000 by default): standard queues answer
//     OverLimit, FIFO queues an empty receive.
//
// Every operation touches only the messages it acts on: the store indexes
// messages by state (visible in send order, FIFO groups that can deliver,
// delayed and in-flight messages by the time they become visible, all by age
// for retention), so a receive costs the same with 100 or 100,000 messages
// stored or in flight.
//
// # Choices where SQS leaves room
//
// Where SQS documents a choice rather than a rule, sqsfake takes the
// conservative side and tests can rely on it:
//
//   - a delete with a stale receipt handle (the message was received again
//     since) succeeds without deleting on a standard queue and fails as
//     expired on a FIFO queue; a delete of an expired handle deletes on a
//     standard queue and fails on a FIFO queue; changing the visibility of a
//     deleted message or with a stale handle fails with
//     InvalidParameterValue, and of a message no longer in flight with
//     MessageNotInflight;
//   - standard queues deliver in send order and never deliver twice, which
//     real SQS does not promise: do not rely on it (inject a lost
//     acknowledgement to test duplicates);
//   - a move task without MaxNumberOfMessagesPerSecond moves 500 messages a
//     second, the documented maximum (SQS "optimizes" the rate); moved
//     messages are new messages (new MessageId, receive count 0, the
//     destination's own delay; on FIFO, the group kept and the new MessageId
//     as deduplication id); a task's ApproximateNumberOfMessagesToMove is
//     every message in the source when it starts, and it completes when it
//     moved that many or the source is empty; a cancelled task is CANCELLED
//     at once; a second task on a running source is UnsupportedOperation, a
//     source that is no dead-letter queue InvalidParameterValue, a missing
//     one ResourceNotFoundException; a message without
//     DeadLetterQueueSourceArn fails a task that has no DestinationArn;
//   - RedriveAllowPolicy is checked when a source sets its RedrivePolicy, not
//     again when the dead-letter queue's policy later changes; Policy must
//     be a JSON object and is stored, not enforced;
//   - AddPermission and RemovePermission edit the Policy attribute.
//
// Throughput quotas are opt-in (Options.Quota): per queue and action, FIFO
// defaults from SQS's published quotas, high-throughput mode as partitions.
//
// Not modeled: permissions and policies (stored, not enforced), KMS, fair
// queue scheduling, and the rare duplicate delivery of standard queues.
//
// # Time
//
// The Server reads time from its Clock. With a *ManualClock, time moves only
// when a test calls Advance or Set; long polls, delays, visibility timeouts,
// retention, the dedup window and move tasks all follow it, and a long poll
// parked on the clock wakes when it is advanced. ManualClock.WaitForTimers
// tells a test that a goroutine has parked in a long poll before it
// advances. The Server starts no goroutine to make time pass: each call
// first brings the queues it touches, and every running move task, up to
// now, and a long poll sleeps until the next moment anything it waits for
// can change.
//
// # Faults and call counts
//
// Inject adds a Fault: fail the next N calls of an operation (optionally of
// one queue, or those whose input a Match function picks) before they take
// effect, or after they took effect (AfterApply, a lost acknowledgement),
// delay them on the clock, fail chosen entries of a batch call, drop the
// connection, answer with a chosen HTTP status, or corrupt the answer's
// message checksums so the SDK fails a call that took effect.
// Faults act on the Server, so they reach every client; over the wire they
// are the service's own failures (ErrInternal is an HTTP 500, ErrThrottled
// the throttling shape), so the SDK retries them as it would in production.
// Each FaultHandle reports how often it fired. Calls returns how many calls
// each operation and each queue received (attempts, when a client retries),
// so tests and benchmarks can report API calls per message.
//
// # Concurrency
//
// A Server, its Clients and its HTTPServers are safe for concurrent use. A
// Server starts no goroutines and no goroutine outlives a call: a long poll
// waits on the caller's goroutine (in process) or on the HTTP server's
// request goroutine, which HTTPServer.Close ends.
package sqsfake
