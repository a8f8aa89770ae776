package replay

import (
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// New refuses a typed-nil client (a nil *sqs.Client inside the API
// interface) with ErrConfig. Accepted, it would make Run panic on a
// goroutine Run started, where no recover of the caller's reaches, and
// crash the process.
func TestNewRefusesTypedNilClient(t *testing.T) {
	var client *sqs.Client
	_, err := New(client, "https://sqs.us-east-1.amazonaws.com/123456789012/dlq", "https://sqs.us-east-1.amazonaws.com/123456789012/ops",
		func(o *Options) { o.Target = "https://sqs.us-east-1.amazonaws.com/123456789012/main" })
	if !errors.Is(err, ErrConfig) {
		t.Fatalf("expect ErrConfig, got %v", err)
	}
}
