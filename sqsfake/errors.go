package sqsfake

import (
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/sqskit/sqskit/internal/sqsrule"
)

// legacyPrefix is the prefix real SQS puts on most modeled error codes at run
// time; ErrorCode() on errors from sqsfake returns the same codes as the
// service, so code that matches on ErrorCode() behaves the same here.
const legacyPrefix = "AWS.SimpleQueueService."

func legacy(code string) *string { return aws.String(legacyPrefix + code) }

func errQueueDoesNotExist() error {
	return &types.QueueDoesNotExist{
		Message:           aws.String("The specified queue does not exist."),
		ErrorCodeOverride: legacy("NonExistentQueue"),
	}
}

func errReceiptHandleInvalid(format string, args ...any) error {
	return &types.ReceiptHandleIsInvalid{Message: aws.String(fmt.Sprintf(format, args...))}
}

func errMessageNotInflight() error {
	return &types.MessageNotInflight{
		Message:           aws.String("The message referred to isn't in flight."),
		ErrorCodeOverride: legacy("MessageNotInflight"),
	}
}

func errInvalidAttributeName(name string) error {
	return &types.InvalidAttributeName{Message: aws.String(fmt.Sprintf("Unknown Attribute %s.", name))}
}

func errInvalidAttributeValue(format string, args ...any) error {
	return &types.InvalidAttributeValue{Message: aws.String(fmt.Sprintf(format, args...))}
}

func errQueueNameExists(name string) error {
	return &types.QueueNameExists{
		Message:           aws.String(fmt.Sprintf("A queue already exists with the same name %s and a different value for attributes.", name)),
		ErrorCodeOverride: aws.String("QueueAlreadyExists"),
	}
}

func errQueueDeletedRecently() error {
	return &types.QueueDeletedRecently{
		Message:           aws.String("You must wait 60 seconds after deleting a queue before you can create another with the same name."),
		ErrorCodeOverride: legacy("QueueDeletedRecently"),
	}
}

func errPurgeInProgress() error {
	return &types.PurgeQueueInProgress{
		Message:           aws.String("Only one PurgeQueue operation on a queue is allowed every 60 seconds."),
		ErrorCodeOverride: legacy("PurgeQueueInProgress"),
	}
}

func errOverLimit(format string, args ...any) error {
	return &types.OverLimit{Message: aws.String(fmt.Sprintf(format, args...))}
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
		return &types.InvalidBatchEntryId{Message: msg, ErrorCodeOverride: legacy(v.Code)}
	case sqsrule.CodeBatchEntryIDsNotDist:
		return &types.BatchEntryIdsNotDistinct{Message: msg, ErrorCodeOverride: legacy(v.Code)}
	case sqsrule.CodeEmptyBatchRequest:
		return &types.EmptyBatchRequest{Message: msg, ErrorCodeOverride: legacy(v.Code)}
	case sqsrule.CodeTooManyEntries:
		return &types.TooManyEntriesInBatchRequest{Message: msg, ErrorCodeOverride: legacy(v.Code)}
	case sqsrule.CodeBatchRequestTooLong:
		return &types.BatchRequestTooLong{Message: msg, ErrorCodeOverride: legacy(v.Code)}
	}
	return &smithy.GenericAPIError{Code: v.Code, Message: v.Error(), Fault: smithy.FaultClient}
}

// batchEntryError converts an entry's error into its Failed[] row.
func batchEntryError(id string, err error) types.BatchResultErrorEntry {
	code, msg, senderFault := "InternalError", err.Error(), false
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		code, msg = apiErr.ErrorCode(), apiErr.ErrorMessage()
		senderFault = apiErr.ErrorFault() != smithy.FaultServer
	}
	return types.BatchResultErrorEntry{Id: aws.String(id), Code: aws.String(code), Message: aws.String(msg), SenderFault: senderFault}
}

// opError wraps an error the way the SDK does, so errors.As and errors.Is
// find the same things in errors from sqsfake as in errors from *sqs.Client.
func opError(op string, err error) error {
	return &smithy.OperationError{ServiceID: "SQS", OperationName: op, Err: err}
}

// ErrInternal is the default error of an injected fault: a server-side fault
// the SDK would retry.
var ErrInternal error = &smithy.GenericAPIError{Code: "InternalFailure", Message: "sqsfake: injected internal failure", Fault: smithy.FaultServer}
