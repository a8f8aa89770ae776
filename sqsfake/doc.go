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
// sqsfake behaves like the service, not like a mock: standard and FIFO
// queues with their attributes, limits and counters; visibility, delays,
// retention, long polling; message attributes with SQS's digests; redrive,
// RedriveAllowPolicy and message move tasks; FIFO order, group locks,
// deduplication and ReceiveRequestAttemptId; tags, permissions, the
// in-flight limit; explicit zeros as other SDKs send them. Every operation
// touches only the messages it acts on, so a receive costs the same with
// 100 or 100,000 messages stored. It passes the whole sqstest suite, in
// process and over both protocols. The details, and the side it takes
// where SQS leaves room (stale receipt handles, move-task rates, what is
// not modeled), are in docs/sqsfake.md:
// https://github.com/sqskit/sqskit/blob/main/docs/sqsfake.md
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
