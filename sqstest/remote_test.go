package sqstest_test

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/sqskit/sqskit/internal/fauxqs"
	"github.com/sqskit/sqskit/sqstest"
)

// TestConformanceFauxqs runs the suite against the fauxqs emulator; its
// known gaps are skipped with their reasons.
func TestConformanceFauxqs(t *testing.T) {
	emu := fauxqs.StartT(t)
	sqstest.Run(t, &sqstest.RemoteHarness{API: emu.Client(), Prefix: "sqskit-", Gaps: fauxqs.Gaps()})
}

// TestConformanceEndpoint runs the suite against the SQS endpoint in
// SQSKIT_SQS_ENDPOINT (real AWS included, with the default credential
// chain's static test credentials replaced by whatever the endpoint needs).
func TestConformanceEndpoint(t *testing.T) {
	endpoint := os.Getenv("SQSKIT_SQS_ENDPOINT")
	if endpoint == "" {
		t.Skip("SQSKIT_SQS_ENDPOINT is not set")
	}
	prefix := "sqskit-" + strconv.FormatInt(time.Now().Unix(), 36) + "-"
	sqstest.Run(t, &sqstest.RemoteHarness{API: fauxqs.NewClient(endpoint), Prefix: prefix})
}
