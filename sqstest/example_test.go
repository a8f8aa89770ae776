package sqstest_test

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqskit/sqskit/sqstest"
)

// The suite runs in a test (sqstest.Run needs its *testing.T); this builds
// the harness that test takes, and shows what it will check.
func ExampleRemoteHarness() {
	// A client for the SQS to check: an emulator here (go run ./cmd/sqsfake,
	// fauxqs, …); sqs.NewFromConfig(cfg) for real SQS.
	client := sqs.New(sqs.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String("http://127.0.0.1:9324"),
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
	})
	harness := &sqstest.RemoteHarness{
		API:    client,
		Prefix: "myapp-", // each case creates its queues named so, and deletes them
		Gaps: map[sqstest.Capability]string{ // what the backend lacks: those cases skip with the reason
			sqstest.MoveTasks: "our emulator has no message move tasks",
		},
	}
	// In a _test.go file, this runs every case as a subtest, in parallel:
	//
	//	func TestOurSQS(t *testing.T) { sqstest.Run(t, harness) }
	//
	// (sqstest.Run(t, sqstest.NewFakeHarness()) runs them on sqsfake.)
	names := sqstest.Names()
	fmt.Println(len(names), "cases, from", names[0], "to", names[len(names)-1])
	for _, c := range []sqstest.Capability{sqstest.Tags, sqstest.MoveTasks, sqstest.FakeTime} {
		if reason := harness.Unsupported(c); reason != "" {
			fmt.Printf("%s: skipped (%s)\n", c, reason)
		} else {
			fmt.Printf("%s: checked\n", c)
		}
	}
	// Output:
	// 183 cases, from queue/create-and-get-url to sdk/service-errors-carry-status-and-request-id
	// queue tags: checked
	// message move tasks: skipped (our emulator has no message move tasks)
	// fake time: skipped (time passes for real on this backend; the case needs minutes or hours of it)
}
