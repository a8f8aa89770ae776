package sqserr

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
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
