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

// fromViolation turns a broken rule into the error SQS answers with, its
// message worded as SQS words it (the API reference's text for each error
// shape, "The request must contain the parameter X.", "Invalid value for
// the parameter X. Reason: …") and never repeating the code, which every
// SDK prints beside it.
func fromViolation(err error) error {
	var v *sqsrule.Violation
	if !errors.As(err, &v) {
		return err
	}
	text := violationMessage(v)
	msg := aws.String(text)
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
	return &smithy.GenericAPIError{Code: v.Code, Message: text, Fault: smithy.FaultClient}
}

// allowedCharacters is how SQS's InvalidMessageContents message lists them.
const allowedCharacters = "#x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF"

func violationMessage(v *sqsrule.Violation) string {
	reason := upperFirst(v.Reason) + "."
	switch v.Code {
	case sqsrule.CodeMissingParameter:
		return "The request must contain the parameter " + v.Field + "."
	case sqsrule.CodeInvalidMessageContents:
		return "Invalid binary character was found in the message body (" + v.Reason + "); the set of allowed characters is " + allowedCharacters + "."
	case sqsrule.CodeEmptyBatchRequest:
		return "The batch request doesn't contain any entries."
	case sqsrule.CodeTooManyEntries:
		return "The batch request contains more entries than permissible. " + reason
	case sqsrule.CodeBatchEntryIDsNotDist:
		return "Two or more batch entries in the request have the same Id. " + reason
	case sqsrule.CodeInvalidBatchEntryID:
		return "A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long. " + reason
	case sqsrule.CodeBatchRequestTooLong:
		return reason
	}
	if v.Field == "MessageBody" {
		return "One or more parameters are invalid. Reason: " + reason
	}
	if v.Field != "" {
		return "Invalid value for the parameter " + v.Field + ". Reason: " + reason
	}
	return reason
}

func upperFirst(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
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
