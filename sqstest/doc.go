// Package sqstest checks that an SQS behaves like SQS: a conformance suite of
// named cases that runs against any backend through the SDK's client —
// sqsfake in process or over HTTP, an emulator, or real SQS.
//
// How do I …
//
//   - run the suite against an endpoint? Build a [Harness] with its client
//     and a queue name Prefix, and call [Run] in a test (below).
//   - run it on sqsfake, hours of queue time included? Give the server a
//     manual clock, and the harness the same one as [Harness.Clock] (below).
//   - run one case or one family? Each case is a subtest named
//     family/behaviour: go test -run 'TestOurSQS/fifo/' runs a family,
//     -run 'TestOurSQS/fifo/group-lock' one case. [Names] lists them all.
//   - skip what an emulator gets wrong? Name those cases in [Harness.Skip],
//     each with the reason: they skip with it printed, never silently, and a
//     name that is no case fails the run.
//   - run it outside go test, in a command? [Check] runs the same cases
//     with the same skips and returns a [Result] per case: pass, skip with
//     the reason, or fail with the case's messages.
//   - find the code of a failing case? Case fifo/group-lock is the function
//     caseFIFOGroupLock, listed with its name in the suite's one table
//     (suite.go).
//
// Against an emulator or real SQS:
//
//	func TestOurSQS(t *testing.T) {
//		sqstest.Run(t, sqstest.Harness{Client: client, Prefix: "myapp-"})
//	}
//
// On sqsfake, with its clock:
//
//	clock := sqsfake.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
//	srv := sqsfake.New(func(o *sqsfake.Options) { o.Clock = clock })
//	sqstest.Run(t, sqstest.Harness{Client: srv.Client(), Clock: clock})
//
// # What a case checks
//
// The cases call the backend through the SDK's client and check what its
// callers see: the SDK's own validation of required members, service errors
// as *smithy.OperationError around *awshttp.ResponseError around the typed
// error, results and digests as SQS returns them. Modeled errors are checked
// with errors.As on the SDK's types, unmodeled ones by their API error code
// (see [Harness.PrefixedErrorCodes] for emulators that prefix them). Where a
// behaviour needs a request aws-sdk-go-v2 never builds (an explicit 0, which
// other SDKs send; text that is not valid UTF-8), the case edits the
// serialized request in the client's middleware, so it still runs through
// the client under test.
//
// # Time, parallelism and queues
//
// Without a Clock, time passes for real: the cases that need minutes or
// hours of it skip with the reason, and the others run in parallel, each on
// queues of its own that it deletes when it ends. Point the suite at real
// SQS with care: it creates and deletes queues named with the Prefix.
package sqstest
