// Package fauxqs starts the fauxqs SQS emulator (an npm package installed by
// .ci/run into .ci/emulator) for sqskit's tests, on 127.0.0.1 and a free port,
// and builds SDK clients that talk to it.
//
// What a command needs of it (Start, Skips, …) is in package
// [github.com/sqskit/sqskit/internal/fauxqs/emulator], which does not import
// package testing (this package does, through its test helpers and
// sqsfake); the names here are those.
package fauxqs

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqskit/sqskit/internal/fauxqs/emulator"
)

// ErrNotInstalled means the emulator's npm packages are not installed; run
// `npm ci --prefix .ci/emulator` (as .ci/run does).
var ErrNotInstalled = emulator.ErrNotInstalled

// Emulator is a running fauxqs process, with Backend for benchmarks.
type Emulator struct {
	*emulator.Emulator
}

// Dir finds .ci/emulator with its node_modules: $SQSKIT_FAUXQS_DIR, or the
// nearest one above the working directory.
func Dir() (string, error) { return emulator.Dir() }

// Start launches the emulator and waits until it listens.
func Start(ctx context.Context) (*Emulator, error) {
	e, err := emulator.Start(ctx)
	if err != nil {
		return nil, err
	}
	return &Emulator{e}, nil
}

// NewClient returns an SDK client for an SQS endpoint with static test
// credentials.
func NewClient(endpoint string, optFns ...func(*sqs.Options)) *sqs.Client {
	return emulator.NewClient(endpoint, optFns...)
}

// Skips are the sqstest conformance cases fauxqs fails, by name, each with
// what fauxqs does instead: see [emulator.Skips].
func Skips() map[string]string { return emulator.Skips() }

// StartT starts the emulator for a test and stops it when the test ends. It
// skips the test when the emulator is not installed, unless
// SQSKIT_REQUIRE_EMULATOR is set (as in CI), where it fails instead.
func StartT(t testing.TB) *Emulator {
	t.Helper()
	e, err := Start(context.Background())
	if errors.Is(err, ErrNotInstalled) && os.Getenv("SQSKIT_REQUIRE_EMULATOR") == "" {
		t.Skipf("%v; set SQSKIT_REQUIRE_EMULATOR=1 to make this a failure", err)
	}
	if err != nil {
		t.Fatalf("start emulator: %v", err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}
