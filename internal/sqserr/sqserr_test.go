package sqserr

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
)

func TestClassification(t *testing.T) {
	op := func(err error) error {
		return &smithy.OperationError{ServiceID: "SQS", OperationName: "SendMessage", Err: err}
	}
	cases := []struct {
		name             string
		err              error
		transient, final bool
	}{
		{"throttled", op(&types.RequestThrottled{}), true, false},
		{"kms throttled", op(&types.KmsThrottled{}), true, false},
		{"server fault", op(&smithy.GenericAPIError{Code: "InternalFailure", Fault: smithy.FaultServer}), true, false},
		{"service unavailable", op(&smithy.GenericAPIError{Code: "ServiceUnavailable"}), true, false},
		{"network", op(&net.OpError{Op: "read", Err: errors.New("connection reset")}), true, false},
		{"deadline of the attempt", fmt.Errorf("send: %w", context.DeadlineExceeded), true, false},
		{"caller cancelled", op(context.Canceled), false, false},
		{"bad input", op(&smithy.GenericAPIError{Code: "InvalidParameterValue", Fault: smithy.FaultClient}), false, false},
		{"missing queue", op(&types.QueueDoesNotExist{ErrorCodeOverride: aws.String("AWS.SimpleQueueService.NonExistentQueue")}), false, true},
		{"access denied", op(&smithy.GenericAPIError{Code: "AccessDenied", Fault: smithy.FaultClient}), false, true},
		{"kms access denied", op(&types.KmsAccessDenied{}), false, true},
		{"nil", nil, false, false},
		{"client-side validation", op(invalidInput()), false, true},
		{"client-side validation by pointer", op(func() error { e := invalidInput(); return &e }()), false, true},
	}
	for _, c := range cases {
		if got := Transient(c.err); got != c.transient {
			t.Errorf("%s: Transient: expect %v, got %v", c.name, c.transient, got)
		}
		if got := Final(c.err); got != c.final {
			t.Errorf("%s: Final: expect %v, got %v", c.name, c.final, got)
		}
	}
	if got := Code(op(&types.BatchEntryIdsNotDistinct{ErrorCodeOverride: aws.String("AWS.SimpleQueueService.BatchEntryIdsNotDistinct")})); got != "BatchEntryIdsNotDistinct" {
		t.Errorf("expect the prefix trimmed, got %s", got)
	}
}

func invalidInput() smithy.InvalidParamsError {
	e := smithy.InvalidParamsError{Context: "SendMessageInput"}
	e.Add(smithy.NewErrParamRequired("MessageBody"))
	return e
}

// The real SDK client refuses a nil required member before sending: that
// error is final, never retried.
func TestSDKValidationErrorIsFinal(t *testing.T) {
	client := sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String("http://127.0.0.1:1")})
	_, err := client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String("http://127.0.0.1:1/1/q")})
	var invalid smithy.InvalidParamsError
	if !errors.As(err, &invalid) {
		t.Fatalf("expect the SDK's InvalidParamsError, got %T: %v", err, err)
	}
	if Transient(err) || !Final(err) {
		t.Errorf("expect final and not transient, got Transient %v, Final %v", Transient(err), Final(err))
	}
}
