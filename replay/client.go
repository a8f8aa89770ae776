package replay

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/internal/queueref"
)

// errNotCalled answers the calls the engine never makes on a replayer's
// client: the consumer reads no queue attributes (VisibilityTimeout is
// always set) and the senders send in batches only.
var errNotCalled = errors.New("replay: the replayer's client does not make this call")

// engineClient serves the consumer, the senders and the Parker with the
// four calls of API. onReceive, when set, sees every receive's outcome
// (Drain counts the failures in a row).
type engineClient struct {
	API
	onReceive func(err error)
}

func (c engineClient) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	out, err := c.API.ReceiveMessage(ctx, in, optFns...)
	if c.onReceive != nil && ctx.Err() == nil {
		c.onReceive(err)
	}
	return out, err
}

func (engineClient) GetQueueAttributes(context.Context, *sqs.GetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	return nil, errNotCalled
}

func (engineClient) SendMessage(context.Context, *sqs.SendMessageInput, ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	return nil, errNotCalled
}

// ChangeMessageVisibility is a batch of one: the Parker's Hold, in Lambda.
func (c engineClient) ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	out, err := c.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: in.QueueUrl,
		Entries: []types.ChangeMessageVisibilityBatchRequestEntry{{Id: aws.String("0"), ReceiptHandle: in.ReceiptHandle, VisibilityTimeout: in.VisibilityTimeout}}}, optFns...)
	if err != nil {
		return nil, err
	}
	if len(out.Failed) > 0 {
		f := out.Failed[0]
		return nil, fmt.Errorf("%s: %s", aws.ToString(f.Code), aws.ToString(f.Message))
	}
	if len(out.Successful) == 0 {
		return nil, errors.New("MissingResult: the entry is missing from the answer")
	}
	return &sqs.ChangeMessageVisibilityOutput{ResultMetadata: out.ResultMetadata}, nil
}

// QueueResolver lets the consumer, the senders and the Parker resolve queue
// names with the user's client, when it has GetQueueUrl.
func (c engineClient) QueueResolver() queueref.Resolver { return queueref.Of(c.API) }
