package sqstest_test

import (
	"context"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"go.uber.org/goleak"

	"github.com/sqskit/sqskit/internal/fauxqs"
	"github.com/sqskit/sqskit/sqstest"
)

// TestConformanceFauxqs runs the suite against the fauxqs emulator; the
// cases it fails are skipped with their reasons. fauxqs spells
// InvalidParameterValue, MissingParameter, InvalidAttributeValue and
// InvalidMessageContents with the AWS.SimpleQueueService. prefix.
func TestConformanceFauxqs(t *testing.T) {
	emu := fauxqs.StartT(t)
	sqstest.Run(t, sqstest.Harness{Client: emu.Client(), Prefix: "sqskit-", Skip: fauxqs.Skips(), PrefixedErrorCodes: true})
}

// Check passes fauxqs as Run does (every case not in its Skips), with the
// same skips: what sqskit conform prints against fauxqs.
func TestCheckFauxqs(t *testing.T) {
	emu := fauxqs.StartT(t)
	h := sqstest.Harness{Client: emu.Client(), Prefix: "sqskit-check-", Skip: fauxqs.Skips(), PrefixedErrorCodes: true}
	results, err := sqstest.Check(t.Context(), h, nil)
	if err != nil {
		t.Fatal(err)
	}
	skipped := 0
	for _, r := range results {
		switch {
		case r.Verdict == sqstest.Failed:
			t.Errorf("%s: expect it to pass, as under Run: %s", r.Case, r.Reason)
		case r.Verdict == sqstest.Skipped:
			skipped++
			if _, ok := fauxqs.Skips()[r.Case]; !ok && !strings.Contains(r.Reason, "lacks a clock") {
				t.Errorf("%s: expect it to run, got skipped: %s", r.Case, r.Reason)
			}
		}
	}
	if len(results) != len(sqstest.Names()) {
		t.Errorf("expect %d results, got %d", len(sqstest.Names()), len(results))
	}
	t.Logf("%d cases, %d skipped, the rest passed", len(results), skipped)
}

// fauxqs's skips name cases of the suite and give reasons, checked where
// the emulator is not installed too.
func TestFauxqsSkipsNameCasesWithReasons(t *testing.T) {
	names := map[string]bool{}
	for _, n := range sqstest.Names() {
		names[n] = true
	}
	for name, reason := range fauxqs.Skips() {
		if !names[name] {
			t.Errorf("fauxqs.Skips names %q: expect a case of sqstest.Names", name)
		}
		if reason == "" {
			t.Errorf("fauxqs.Skips[%q]: expect a reason, got none", name)
		}
	}
}

// TestConformanceEndpoint runs the suite against another SQS: the emulator
// at SQSKIT_SQS_ENDPOINT or SQSKIT_ENDPOINT (the examples' variable), or
// real AWS with SQSKIT_AWS=1 (the default credential chain and region). It
// creates and deletes queues named sqskit-*.
func TestConformanceEndpoint(t *testing.T) {
	endpoint := conformanceEndpoint()
	if endpoint == "" {
		t.Skip("none of SQSKIT_SQS_ENDPOINT, SQSKIT_ENDPOINT and SQSKIT_AWS is set")
	}
	api := endpointClient(t, endpoint)
	prefix := "sqskit-" + strconv.FormatInt(time.Now().Unix(), 36) + "-"
	sqstest.Run(t, sqstest.Harness{Client: api, Prefix: prefix})
}

// realAWS is what conformanceEndpoint returns for SQSKIT_AWS.
const realAWS = "aws"

// conformanceEndpoint returns the endpoint the environment names:
// SQSKIT_SQS_ENDPOINT first (this suite's own), then SQSKIT_ENDPOINT (the
// one the examples read, so one variable serves both), then realAWS for
// SQSKIT_AWS; "" for none.
func conformanceEndpoint() string {
	for _, name := range []string{"SQSKIT_SQS_ENDPOINT", "SQSKIT_ENDPOINT"} {
		if e := os.Getenv(name); e != "" {
			return e
		}
	}
	if os.Getenv("SQSKIT_AWS") != "" {
		return realAWS
	}
	return ""
}

// endpointClient returns a client for endpoint (a URL, or realAWS) whose
// idle connections are closed when t ends: left open, their read and write
// loops are goroutines goleak reports after every case has passed. At a
// URL it uses static test credentials unless the environment has AWS ones,
// and us-east-1 unless it names a region.
func endpointClient(t *testing.T, endpoint string) *sqs.Client {
	t.Helper()
	var loads []func(*config.LoadOptions) error
	if endpoint != realAWS && os.Getenv("AWS_ACCESS_KEY_ID") == "" && os.Getenv("AWS_PROFILE") == "" {
		loads = append(loads, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")))
	}
	cfg, err := config.LoadDefaultConfig(context.Background(), loads...)
	if err != nil {
		t.Fatalf("load AWS config: %v", err)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	transport := awshttp.NewBuildableClient().GetTransport() // the SDK's defaults, with a handle on the connections
	t.Cleanup(transport.CloseIdleConnections)
	return sqs.NewFromConfig(cfg, func(o *sqs.Options) {
		o.HTTPClient = &http.Client{Transport: transport}
		if endpoint != realAWS {
			o.BaseEndpoint = aws.String(endpoint)
		}
	})
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
