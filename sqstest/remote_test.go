package sqstest_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"go.uber.org/goleak"

	"github.com/sqskit/sqskit/internal/fauxqs"
	"github.com/sqskit/sqskit/sqstest"
)

// TestConformanceFauxqs runs the suite against the fauxqs emulator; its
// known gaps are skipped with their reasons.
func TestConformanceFauxqs(t *testing.T) {
	emu := fauxqs.StartT(t)
	sqstest.Run(t, &sqstest.RemoteHarness{API: emu.Client(), Prefix: "sqskit-", Gaps: fauxqs.Gaps()})
}

// TestConformanceEndpoint runs the suite against another SQS: an emulator
// at SQSKIT_SQS_ENDPOINT (static test credentials), or real AWS with
// SQSKIT_AWS=1 (the default credential chain and region). It creates and
// deletes queues named sqskit-*.
func TestConformanceEndpoint(t *testing.T) {
	var api sqstest.API
	switch endpoint := os.Getenv("SQSKIT_SQS_ENDPOINT"); {
	case endpoint != "":
		api = fauxqs.NewClient(endpoint)
	case os.Getenv("SQSKIT_AWS") != "":
		cfg, err := config.LoadDefaultConfig(context.Background())
		if err != nil {
			t.Fatalf("load AWS config: %v", err)
		}
		api = sqs.NewFromConfig(cfg)
	default:
		t.Skip("neither SQSKIT_SQS_ENDPOINT nor SQSKIT_AWS is set")
	}
	prefix := "sqskit-" + strconv.FormatInt(time.Now().Unix(), 36) + "-"
	sqstest.Run(t, &sqstest.RemoteHarness{API: api, Prefix: prefix})
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
