package sqstest

import (
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
)

// refusedBeforeSending fails unless err is the SDK client's own refusal of
// input it validates before sending: no API error, as nothing was sent.
func refusedBeforeSending(t caseT, op string, err error) {
	t.Helper()
	var opErr *smithy.OperationError
	var invalid smithy.InvalidParamsError
	if !errors.As(err, &opErr) || !errors.As(err, &invalid) {
		t.Fatalf("%s: expect smithy.InvalidParamsError inside *smithy.OperationError, got %T: %v", op, err, err)
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		t.Fatalf("%s: expect no API error (nothing was sent), got %v", op, apiErr)
	}
}

// The sdk cases check what a caller of the SDK client sees, whatever the backend:
// the client's own validation, and service errors wrapped as the SDK wraps
// them. A backend that hands callers something else fails them.

func caseSDKNilRequiredMembersRefusedBeforeSending(t caseT, e *env) {
	url := aws.String(e.queue(t, nil))
	_, err := e.api.SendMessage(e.ctx(), &sqs.SendMessageInput{QueueUrl: url})
	refusedBeforeSending(t, "SendMessage without MessageBody", err)
	_, err = e.api.SendMessage(e.ctx(), &sqs.SendMessageInput{MessageBody: aws.String("x")})
	refusedBeforeSending(t, "SendMessage without QueueUrl", err)
	_, err = e.api.SendMessage(e.ctx(), &sqs.SendMessageInput{QueueUrl: url, MessageBody: aws.String("x"),
		MessageAttributes: map[string]types.MessageAttributeValue{"a": {StringValue: aws.String("v")}}})
	refusedBeforeSending(t, "SendMessage with an attribute without DataType", err)
	_, err = e.api.SendMessageBatch(e.ctx(), &sqs.SendMessageBatchInput{QueueUrl: url})
	refusedBeforeSending(t, "SendMessageBatch without Entries", err)
	_, err = e.api.SendMessageBatch(e.ctx(), &sqs.SendMessageBatchInput{QueueUrl: url, Entries: []types.SendMessageBatchRequestEntry{{MessageBody: aws.String("x")}}})
	refusedBeforeSending(t, "SendMessageBatch with an entry without Id", err)
	_, err = e.api.DeleteMessage(e.ctx(), &sqs.DeleteMessageInput{QueueUrl: url})
	refusedBeforeSending(t, "DeleteMessage without ReceiptHandle", err)
	v, _, _ := e.counts(t, *url)
	equal(t, "messages sent", 0, v)
}

func caseSDKSetAttributesWithoutAttributesRefused(t caseT, e *env) {
	_, err := e.api.SetQueueAttributes(e.ctx(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(e.queue(t, nil))})
	refusedBeforeSending(t, "SetQueueAttributes without Attributes", err)
}

func caseSDKServiceErrorsCarryStatusAndRequestID(t caseT, e *env) {
	_, err := e.api.GetQueueUrl(e.ctx(), &sqs.GetQueueUrlInput{QueueName: aws.String(e.queueName("missing"))})
	var opErr *smithy.OperationError
	var respErr *awshttp.ResponseError
	if !errors.As(err, &opErr) || !errors.As(err, &respErr) {
		t.Fatalf("expect *awshttp.ResponseError inside *smithy.OperationError, got %T: %v", err, err)
	}
	equal(t, "HTTP status", 400, respErr.HTTPStatusCode())
	if respErr.ServiceRequestID() == "" {
		t.Fatal("expect a request id")
	}
	wantType[types.QueueDoesNotExist](t, err)
}
