package replay

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// attributesAPI is the optional call a Replayer checks its DLQ with: API
// leaves it out so that small client wrappers keep compiling, and
// *sqs.Client has it.
type attributesAPI interface {
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

// checkDLQ refuses, before a pass receives anything, the DLQ settings that
// would lose a held message: a retention no longer than the longest hold
// (Policy.MaxBackoff), or a redrive policy of the DLQ's own (a hold counts
// as a receive, so SQS would move the message on, out of reach). When the
// client cannot read the attributes, or the read fails (a role without
// sqs:GetQueueAttributes), the pass goes on and the failure is logged: the
// check protects, it is not a precondition of replaying.
func (r *Replayer) checkDLQ(ctx context.Context, dlq string) error {
	api, ok := r.client.API.(attributesAPI)
	if !ok {
		return nil
	}
	out, err := api.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(dlq), AttributeNames: []types.QueueAttributeName{
		types.QueueAttributeNameMessageRetentionPeriod, types.QueueAttributeNameRedrivePolicy,
	}})
	if err != nil {
		if ctx.Err() == nil {
			r.opts.Logger.LogAttrs(ctx, slog.LevelWarn, "replay: could not check the DLQ's retention and redrive policy", slog.String("error", err.Error()))
		}
		return nil
	}
	if rp := out.Attributes[string(types.QueueAttributeNameRedrivePolicy)]; rp != "" {
		return configError("the DLQ %s has a redrive policy of its own (%s): holding a message until its replay is due counts as a receive, so SQS would move it on, out of the replayer's reach; remove it", dlq, rp)
	}
	secs, err := strconv.Atoi(out.Attributes[string(types.QueueAttributeNameMessageRetentionPeriod)])
	if retention := time.Duration(secs) * time.Second; err == nil && retention <= r.policy.MaxBackoff {
		return configError("Policy.MaxBackoff %v is not shorter than the DLQ's MessageRetentionPeriod %v: a message held that long would expire in the DLQ; set MaxBackoff below the retention, or raise the retention", r.policy.MaxBackoff, retention)
	}
	return nil
}
