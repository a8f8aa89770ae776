package sqstest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqskit/sqskit/sqsfake"
	"github.com/sqskit/sqskit/sqstest"
)

// The suite runs in a test (sqstest.Run needs its *testing.T; Check runs
// it elsewhere); this builds the harness that test takes, and shows which
// cases it will skip.
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

// Check runs the same cases outside go test, as a command would, and
// returns each case's verdict; here on sqsfake with its manual clock, one
// case skipped by the harness.
func ExampleCheck() {
	clock := sqsfake.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	srv := sqsfake.New(func(o *sqsfake.Options) { o.Clock = clock })
	harness := sqstest.Harness{
		Client: srv.Client(),
		Clock:  clock,
		Skip:   map[string]string{"move/to-a-destination": "to show a skip"},
	}
	results, err := sqstest.Check(context.Background(), harness, func(r sqstest.Result) {
		// called as each case ends: a progress bar goes here
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	count := map[sqstest.Verdict]int{}
	for _, r := range results {
		count[r.Verdict]++
		if r.Verdict != sqstest.Passed {
			fmt.Printf("%s %s: %s\n", r.Verdict, r.Case, r.Reason)
		}
	}
	fmt.Println("every case has a result:", len(results) == len(sqstest.Names()))
	fmt.Println("skipped:", count[sqstest.Skipped], "failed:", count[sqstest.Failed])
	// Output:
	// skip move/to-a-destination: SKIP move/to-a-destination: backend lacks this behaviour: to show a skip
	// every case has a result: true
	// skipped: 1 failed: 0
}
