package replay

import (
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/internal/parking"
)

// DefaultCounterAttribute is the counter attribute of the AWS sample
// (amazon-sqs-dlq-replay-backoff), so messages replayed by either are
// understood by the other.
const DefaultCounterAttribute = parking.DefaultCounterAttribute

// MetadataAttribute holds the replayer's provenance (original MessageId,
// first failure, source queue, the queue it was parked from, last delay,
// escalation reason) as JSON, and, when the message has no room, the
// counter and any user attribute moved aside to make room. The name is
// reserved: a message that carries it with content the replayer did not
// write is escalated as InvalidMetadata. Package consumer's Parker writes
// the same format.
const MetadataAttribute = parking.MetadataAttribute

// Metadata is the content of MetadataAttribute. It is informational, not
// trusted: the replayer reads the count (by the sample's contract), the
// previous delay (within MaxBackoff) and the DelaySeconds it sent with
// (within 900 s), and nothing else of it decides where a message goes, with
// which deduplication id, or when. Its fields:
//
//   - OriginalID: the MessageId the message had when it first failed;
//   - FirstFailure: when it was first seen failing (replayer or Parker);
//   - SourceArn: the queue it was dead-lettered from, as SQS's
//     DeadLetterQueueSourceArn names it, or "" when SQS set none (the "src"
//     of a metadata attribute received is the sender's to forge, and is not
//     carried on);
//   - From: on an escalation, the URL of the queue it was parked from;
//   - Attempt: the counter, kept here when the counter attribute did not fit;
//   - LastDelay: the previous replay's delay, for strategies that grow from
//     it (decorrelated jitter);
//   - SentDelay: the DelaySeconds it was last sent with, 0 to 900 s: its
//     life on the main queue began that long after its SentTimestamp;
//   - Reason and Detail: set on escalations;
//   - Moved: attributes moved aside to make room for the replayer's own, or,
//     on an escalation, the ones SQS refused or the replayer did not trust,
//     as [handler.AttributeValue]s. Restore puts them back.
type Metadata = parking.Metadata

// Restore returns a message's attributes as its producer sent them: the
// replayer's attributes removed and any attribute it moved aside put back.
// Handlers of replayed messages that care about every attribute call it.
func Restore(attrs map[string]types.MessageAttributeValue, counterAttribute string) map[string]types.MessageAttributeValue {
	return parking.Restore(attrs, counterAttribute)
}

// counterSanityLimit: a counter above this is forged, whatever MaxAttempts.
const counterSanityLimit = parking.CounterSanityLimit

// badMetadata says why a message's metadata cannot be used, and under which
// reason the message is escalated.
type badMetadata struct {
	reason Reason
	detail string
}

// readMetadata is parking.Read, in the terms Decide uses.
func readMetadata(attrs map[string]types.MessageAttributeValue, counterAttribute string) (Metadata, *badMetadata) {
	md, bad := parking.Read(attrs, counterAttribute)
	if bad != nil {
		return md, &badMetadata{reason: bad.Reason, detail: bad.Detail}
	}
	return md, nil
}

func keepAside(attrs map[string]types.MessageAttributeValue, name string) map[string]handler.AttributeValue {
	return parking.KeepAside(attrs, name)
}

func mergeMoved(a, b map[string]handler.AttributeValue) map[string]handler.AttributeValue {
	return parking.MergeMoved(a, b)
}

func userAttributes(attrs map[string]types.MessageAttributeValue, counterAttribute string) map[string]types.MessageAttributeValue {
	return parking.UserAttributes(attrs, counterAttribute)
}

func pack(user map[string]types.MessageAttributeValue, counterAttribute string, attempt int, md Metadata) (map[string]types.MessageAttributeValue, error) {
	return parking.Pack(user, counterAttribute, attempt, md)
}
