package sqsfake_test

import (
	"testing"

	"github.com/sqskit/sqskit/sqstest"
)

// The conformance suite runs on sqsfake in process (the SDK client over the
// in-memory transport) and over HTTP (the SDK client with its defaults on a
// loopback port): both pass every case.
func TestConformance(t *testing.T) {
	sqstest.Run(t, sqstest.NewFakeHarness())
}

func TestConformanceHTTP(t *testing.T) {
	sqstest.Run(t, sqstest.NewFakeHTTPHarness(t))
}

// Over the query protocol: the SDK client with smithy-go's awsquery.
func TestConformanceQuery(t *testing.T) {
	sqstest.Run(t, sqstest.NewFakeQueryHarness(t))
}
