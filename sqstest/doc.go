// Package sqstest is a conformance suite of SQS behaviours that runs against
// any backend: sqsfake in process or over HTTP, an emulator, or real SQS.
//
//	func TestConformance(t *testing.T) {
//		sqstest.Run(t, sqstest.NewFakeHarness())      // sqsfake, in process
//		sqstest.Run(t, sqstest.NewFakeHTTPHarness(t)) // sqsfake over HTTP, the SDK's defaults
//		sqstest.Run(t, sqstest.NewFakeQueryHarness(t)) // over HTTP, the query protocol
//	}
//
// Run runs each behaviour as a named subtest ("fifo/group-lock",
// "redrive/moves-after-max-receives", …). A Harness gives the client, unique
// queue names, a way to let time pass (a fake moves its clock; a real server
// sleeps, so cases that need minutes of time run only with FakeTime), and the
// capabilities the backend lacks, each with a reason: such cases are skipped
// with that reason printed, never silently.
//
// The cases call the backend through the SDK's client and check what its
// callers see: the SDK's own validation of required members, service errors
// as *smithy.OperationError around *awshttp.ResponseError around the typed
// error, results and digests as SQS returns them. Where a behaviour needs a
// request aws-sdk-go-v2 never builds (an explicit 0, which other SDKs send;
// text that is not valid UTF-8), the case edits the serialized request in
// the client's middleware, so it still runs through the client under test.
//
// RemoteHarness drives any endpoint through an SDK client and runs cases in
// parallel, each on its own queues, which it deletes afterwards. Point it at
// real SQS with care: it creates and deletes queues named with its Prefix.
//
// Errors are checked the way users should check them: modeled errors with
// errors.As on the SDK's types, unmodeled ones by their API error code.
package sqstest
