// Package sqserr classifies errors from SQS calls the same way in every
// sqskit package: worth retrying later, or final.
package sqserr

import (
	"context"
	"errors"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
)

// Code returns an API error's code without the legacy
// "AWS.SimpleQueueService." prefix, or "" for errors without one.
func Code(err error) string {
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		return ""
	}
	return strings.TrimPrefix(apiErr.ErrorCode(), "AWS.SimpleQueueService.")
}

// Transient reports whether a failed call may succeed if made again: a
// server fault, throttling, or a failure in transit (no API error at all:
// connection reset, timeout, lost response). Client faults (bad input,
// missing queue, access denied), input the SDK refused before sending
// (smithy.InvalidParamsError) and the caller's own cancellation are not.
func Transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || invalidParams(err) {
		return false
	}
	var throttled *types.RequestThrottled
	var kms *types.KmsThrottled
	if errors.As(err, &throttled) || errors.As(err, &kms) {
		return true
	}
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		return true // in transit: the request may or may not have arrived
	}
	switch Code(err) {
	case "RequestThrottled", "ThrottlingException", "Throttling", "KmsThrottled", "RequestLimitExceeded",
		"ServiceUnavailable", "InternalError", "InternalFailure":
		return true
	}
	return apiErr.ErrorFault() == smithy.FaultServer
}

// Final reports errors that will not go away by retrying and should stop a
// long-running loop: the queue does not exist, access is denied, or the SDK
// refused the input before sending it (a nil required member: the same call
// fails the same way every time).
func Final(err error) bool {
	var missing *types.QueueDoesNotExist
	if errors.As(err, &missing) || invalidParams(err) {
		return true
	}
	switch Code(err) {
	case "NonExistentQueue", "QueueDoesNotExist", "AccessDenied", "AccessDeniedException",
		"InvalidClientTokenId", "UnrecognizedClientException", "InvalidSecurity", "KmsAccessDenied",
		"KmsDisabled", "KmsNotFound", "KmsInvalidState", "KmsOptInRequired":
		return true
	}
	return false
}

// invalidParams reports the SDK's client-side validation error, which it
// returns (as a value) inside the *smithy.OperationError before any request.
func invalidParams(err error) bool {
	var v smithy.InvalidParamsError
	var p *smithy.InvalidParamsError
	return errors.As(err, &v) || errors.As(err, &p)
}
