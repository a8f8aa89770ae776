package consumer

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/handler"
)

// Message is a received SQS message: package handler's, so that a handler
// written for the Consumer runs in Lambda too (handler.NewLambda). Its
// MessageAttributes are handler.AttributeValue; SDKAttributes converts
// them back for the SDK, to send the message on.
type Message = handler.Message

// AttributeValue is a message attribute (handler.AttributeValue).
type AttributeValue = handler.AttributeValue

// SDKAttributes returns a message's attributes as the SDK carries them, for
// sending it on (SendMessage, fifo.Message): nil for none.
func SDKAttributes(attrs map[string]AttributeValue) map[string]types.MessageAttributeValue {
	if len(attrs) == 0 {
		return nil
	}
	out := make(map[string]types.MessageAttributeValue, len(attrs))
	for name, v := range attrs {
		a := types.MessageAttributeValue{DataType: aws.String(v.DataType)}
		if v.BaseType() == "Binary" {
			a.BinaryValue = v.BinaryValue
		} else {
			a.StringValue = aws.String(v.StringValue)
		}
		out[name] = a
	}
	return out
}

// fromSDKAttributes converts received attributes; list values, which SQS
// does not support, are dropped.
func fromSDKAttributes(attrs map[string]types.MessageAttributeValue) map[string]AttributeValue {
	if len(attrs) == 0 {
		return nil
	}
	out := make(map[string]AttributeValue, len(attrs))
	for name, v := range attrs {
		out[name] = AttributeValue{DataType: aws.ToString(v.DataType), StringValue: aws.ToString(v.StringValue), BinaryValue: v.BinaryValue}
	}
	return out
}
