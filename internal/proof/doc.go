// Package proof holds no code, only tests: the ones that play sqskit's
// packages together (fifo, consumer, replay, handler on sqsfake or the
// fauxqs emulator) against hostile networks, processes and inputs, and
// check that nothing is lost, reordered past what SQS allows, panicked or
// leaked.
//
// # What it proves
//
//   - The chaos soak (TestSoak): a FIFO and a standard pipeline on sqsfake
//     in a testing/synctest bubble, with consumers restarted at random,
//     handlers that fail, poison and permanent messages, redrive, the
//     replayer as a worker, in Drain passes and as a Lambda, forged replay
//     metadata and faults on every operation. No message is lost, FIFO
//     first successes keep their group's order, every duplicate is
//     explained, and memory stays within its bound.
//   - The same scenario on the fauxqs emulator over HTTP (TestSoakEmulator).
//   - The crash soak (TestCrashSoak): consumer and replayer processes
//     killed with SIGKILL at random; every duplicate is one a kill explains.
//   - The bad-input catalogue (TestBadInputCatalogue): one named row per
//     hostile input, each checking its typed error, that no SQS call was
//     made before the refusal, and that nothing was lost, panicked or hung.
//
// Every test runs under goleak: none may leave a goroutine behind.
//
// # Running it
//
//	go test -race -v ./internal/proof/
//
// runs the soak with 2,000 messages and the catalogue; CI adds
// SQSKIT_LONG=1 (20,000 messages, the emulator soak and the crash soak; the
// emulator needs `npm ci --prefix .ci/emulator`). SQSKIT_SOAK_SEED replays
// a soak's fates and random draws (printed on every run), and
// SQSKIT_SOAK_MESSAGES sets the count; the long run:
//
//	SQSKIT_SOAK_MESSAGES=1000000 go test -count=1 -run '^TestSoak$' -v -timeout 60m ./internal/proof/
//
// One catalogue row runs alone with -run, as in
// -run 'TestBadInputCatalogue/^send_paths/'.
package proof
