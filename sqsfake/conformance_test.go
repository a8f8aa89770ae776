package sqsfake_test

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/schemas"
	"github.com/aws/smithy-go/transport/http/protocol/awsquery"

	"github.com/sqskit/sqskit/sqsfake"
	"github.com/sqskit/sqskit/sqstest"
)

// newConformanceServer returns a server on a manual clock for one run of
// the suite: with the clock in the harness, the cases that need hours run.
func newConformanceServer() (*sqsfake.Server, *sqsfake.ManualClock) {
	clock := sqsfake.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	return sqsfake.New(func(o *sqsfake.Options) { o.Clock = clock }), clock
}

// sqsfake passes every conformance case, skipping none: in process (the
// SDK client over the in-memory transport), over HTTP (the SDK client with
// its defaults on a loopback port), and over the query protocol.
func TestConformance(t *testing.T) {
	srv, clock := newConformanceServer()
	sqstest.Run(t, sqstest.Harness{Client: srv.Client(), Clock: clock})
}

func TestConformanceHTTP(t *testing.T) {
	srv, clock := newConformanceServer()
	sqstest.Run(t, sqstest.Harness{Client: sqsfake.StartHTTP(t, srv).SDKClient(), Clock: clock})
}

// Over the query protocol: the SDK client with smithy-go's awsquery, as
// older SDKs and distribution-packaged AWS CLIs speak it.
func TestConformanceQuery(t *testing.T) {
	srv, clock := newConformanceServer()
	query := func(o *sqs.Options) { o.Protocol = awsquery.New(schemas.AmazonSQS) }
	sqstest.Run(t, sqstest.Harness{Client: sqsfake.StartHTTP(t, srv).SDKClient(query), Clock: clock})
}
