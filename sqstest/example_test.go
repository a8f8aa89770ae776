package sqstest_test

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqskit/sqskit/sqstest"
)

// The suite runs in a test (sqstest.Run needs its *testing.T); this builds
// the harness that test takes, and shows which cases it will skip.
func ExampleHarness() {
	// A client for the SQS to check: an emulator here (go run ./cmd/sqsfake,
	// fauxqs, …); sqs.NewFromConfig(cfg) for real SQS.
	client := sqs.New(sqs.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String("http://127.0.0.1:9324"),
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
	})
	harness := sqstest.Harness{
		Client: client,
		Prefix: "myapp-", // each case creates its queues named so, and deletes them
		Skip: map[string]string{ // cases the backend fails, by name: they skip with the reason
			"move/to-a-destination": "our emulator has no message move tasks",
		},
	}
	// In a _test.go file, this runs every case as a subtest named for the
	// behaviour it checks (-run 'TestOurSQS/fifo/' runs one family). Time
	// passes for real here (no Clock), so the cases run in parallel and
	// those that need hours of it skip; on sqsfake, Clock is its ManualClock.
	//
	//	func TestOurSQS(t *testing.T) { sqstest.Run(t, harness) }
	for _, name := range sqstest.Names() {
		if reason, ok := harness.Skip[name]; ok {
			fmt.Printf("%s: skipped (%s)\n", name, reason)
		}
	}
	// Output:
	// move/to-a-destination: skipped (our emulator has no message move tasks)
}
