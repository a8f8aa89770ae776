package sqsfake

import (
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/sqskit/sqskit/internal/sqsrule"
)

// The Server's operations fail with the SDK's modeled error types
// (*types.QueueDoesNotExist, …) or, for errors SQS does not model, a
// *smithy.GenericAPIError with the service's code. The wire layer turns them
// into the service's responses (status, __type, x-amzn-query-error), from
// which the SDK client builds exactly the errors real SQS gives it.

func errQueueDoesNotExist() error {
	return &types.QueueDoesNotExist{Message: aws.String("The specified queue does not exist.")}
}

func errReceiptHandleInvalid(format string, args ...any) error {
	return &types.ReceiptHandleIsInvalid{Message: aws.String(fmt.Sprintf(format, args...))}
}

func errMessageNotInflight() error {
	return &types.MessageNotInflight{Message: aws.String("The message referred to isn't in flight.")}
}

func errInvalidAttributeName(name string) error {
	return &types.InvalidAttributeName{Message: aws.String(fmt.Sprintf("Unknown Attribute %s.", name))}
}

func errInvalidAttributeValue(format string, args ...any) error {
	return &types.InvalidAttributeValue{Message: aws.String(fmt.Sprintf(format, args...))}
}

func errQueueNameExists(name string) error {
	return &types.QueueNameExists{Message: aws.String(fmt.Sprintf("A queue already exists with the same name %s and a different value for attributes.", name))}
}

func errQueueDeletedRecently() error {
	return &types.QueueDeletedRecently{Message: aws.String("You must wait 60 seconds after deleting a queue before you can create another with the same name.")}
}

func errPurgeInProgress() error {
	return &types.PurgeQueueInProgress{Message: aws.String("Only one PurgeQueue operation on a queue is allowed every 60 seconds.")}
}

func errOverLimit(format string, args ...any) error {
	return &types.OverLimit{Message: aws.String(fmt.Sprintf(format, args...))}
}

func errResourceNotFound(format string, args ...any) error {
	return &types.ResourceNotFoundException{Message: aws.String(fmt.Sprintf(format, args...))}
}

func errUnsupportedOperation(format string, args ...any) error {
	return &types.UnsupportedOperation{Message: aws.String(fmt.Sprintf(format, args...))}
}

// errInvalidParameter is an unmodeled error: the SDK returns it as a
// smithy.GenericAPIError.
func errInvalidParameter(format string, args ...any) error {
	return &smithy.GenericAPIError{Code: sqsrule.CodeInvalidParameterValue, Message: fmt.Sprintf(format, args...), Fault: smithy.FaultClient}
}

func errMissingParameter(name string) error {
	return &smithy.GenericAPIError{Code: sqsrule.CodeMissingParameter, Message: fmt.Sprintf("The request must contain the parameter %s.", name), Fault: smithy.FaultClient}
}

// fromViolation turns a broken rule into the error SQS answers with.
func fromViolation(err error) error {
	var v *sqsrule.Violation
	if !errors.As(err, &v) {
		return err
	}
	msg := aws.String(v.Error())
	switch v.Code {
	case sqsrule.CodeInvalidMessageContents:
		return &types.InvalidMessageContents{Message: msg}
	case sqsrule.CodeInvalidBatchEntryID:
		return &types.InvalidBatchEntryId{Message: msg}
	case sqsrule.CodeBatchEntryIDsNotDist:
		return &types.BatchEntryIdsNotDistinct{Message: msg}
	case sqsrule.CodeEmptyBatchRequest:
		return &types.EmptyBatchRequest{Message: msg}
	case sqsrule.CodeTooManyEntries:
		return &types.TooManyEntriesInBatchRequest{Message: msg}
	case sqsrule.CodeBatchRequestTooLong:
		return &types.BatchRequestTooLong{Message: msg}
	}
	return &smithy.GenericAPIError{Code: v.Code, Message: v.Error(), Fault: smithy.FaultClient}
}

// batchEntryError converts an entry's error into its Failed[] row.
func batchEntryError(id string, err error) types.BatchResultErrorEntry {
	code, msg, senderFault := "InternalError", err.Error(), false
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		code, msg = wireCode(apiErr), apiErr.ErrorMessage()
		senderFault = apiErr.ErrorFault() != smithy.FaultServer
	}
	return types.BatchResultErrorEntry{Id: aws.String(id), Code: aws.String(code), Message: aws.String(msg), SenderFault: senderFault}
}

// ErrInternal is the default error of an injected fault: a server-side
// failure, sent as HTTP 500 with the code InternalFailure, which the SDK's
// retryer retries.
var ErrInternal error = &smithy.GenericAPIError{Code: "InternalFailure", Message: "sqsfake: injected internal failure", Fault: smithy.FaultServer}

// ErrThrottled is SQS's throttling error (*types.RequestThrottled, HTTP 403,
// code RequestThrottled), which the SDK's retryer retries with backoff.
var ErrThrottled error = &types.RequestThrottled{Message: aws.String("sqsfake: injected throttling")}
