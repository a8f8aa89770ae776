package consumer

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/handler"
)

// SDKAttributes returns a message's attributes as the SDK carries them, for
// sending it on (SendMessage, fifo.Message): nil for none.
func SDKAttributes(attrs map[string]handler.AttributeValue) map[string]types.MessageAttributeValue {
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
func fromSDKAttributes(attrs map[string]types.MessageAttributeValue) map[string]handler.AttributeValue {
	if len(attrs) == 0 {
		return nil
	}
	out := make(map[string]handler.AttributeValue, len(attrs))
	for name, v := range attrs {
		out[name] = handler.AttributeValue{DataType: aws.ToString(v.DataType), StringValue: aws.ToString(v.StringValue), BinaryValue: v.BinaryValue}
	}
	return out
}
