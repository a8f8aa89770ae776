package s3payload

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// SweepOptions configure Sweep. Zero values mean the defaults, except
// Retention, which is required.
type SweepOptions struct {
	// KeyPrefix limits the sweep to the Sender's objects
	// (SenderOptions.KeyPrefix). Required, unless WholeBucket.
	KeyPrefix string
	// WholeBucket sweeps every object of the bucket, for a Sender with no
	// KeyPrefix: only for a bucket that holds nothing but payloads, as any
	// other object older than the bound is deleted too. Default false: an
	// empty KeyPrefix is an error, so no sweep deletes a bucket's other
	// objects by default.
	WholeBucket bool
	// Retention is the longest a pointer can wait in queues: the source
	// queue's MessageRetentionPeriod, plus, where messages move on, the
	// dead-letter queue's (a standard DLQ keeps the original enqueue time,
	// a FIFO DLQ restarts it), plus every replay's new life in the source
	// queue and the operator queue's retention when messages are parked or
	// replayed (package replay sends the pointer again, with a new
	// retention). Required: 1 minute to 1 year.
	Retention time.Duration
	// MaxVisibility is the longest a consumer can hold a message past its
	// retention: SQS's 12 h cap. Default 12 h.
	MaxVisibility time.Duration
	// Margin is added for clock skew and in-flight handlers. Default 1 h.
	Margin time.Duration
	// Now returns the current time. Default time.Now. When S3's answer
	// carries its time (the Date header) and that is earlier, S3's counts:
	// a local clock running ahead must not expire live objects.
	Now func() time.Time
}

// SweepReport counts what one Sweep saw and did.
type SweepReport struct {
	// Listed objects under the prefix; Expired, those older than the
	// bound; Deleted, those S3 confirmed deleted; Failed, expired ones
	// still there.
	Listed, Expired, Deleted, Failed int
	// Bound is the age past which an object was expired.
	Bound time.Duration
}

// Sweep deletes the objects under KeyPrefix (or, with WholeBucket, all)
// in bucket that no message can still point to: those last modified longer
// ago than Retention + MaxVisibility + Margin. They are the orphans a crash leaves (between the
// put and the send, or between the message's delete and the object's),
// the objects of messages that expired unread, those of Lambda consumers
// and those kept for fan-out. Run it daily, or use an S3 lifecycle rule
// expiring the prefix after the same bound. It returns the counts and the
// first error; an error listing stops it, a failed delete does not.
func Sweep(ctx context.Context, api API, bucket string, optFns ...func(*SweepOptions)) (SweepReport, error) {
	var o SweepOptions
	for _, fn := range optFns {
		if fn != nil {
			fn(&o)
		}
	}
	switch {
	case api == nil || bucket == "":
		return SweepReport{}, fmt.Errorf("%w: nil S3 client or no bucket", ErrConfig)
	case o.Retention < time.Minute || o.Retention > 366*24*time.Hour:
		return SweepReport{}, fmt.Errorf("%w: Retention %v: 1 minute to 1 year", ErrConfig, o.Retention)
	case o.KeyPrefix == "" && !o.WholeBucket:
		return SweepReport{}, fmt.Errorf("%w: no KeyPrefix: set WholeBucket to sweep the whole bucket", ErrConfig)
	case o.KeyPrefix != "" && o.WholeBucket:
		return SweepReport{}, fmt.Errorf("%w: KeyPrefix %q and WholeBucket", ErrConfig, o.KeyPrefix)
	case o.MaxVisibility < 0 || o.Margin < 0:
		return SweepReport{}, fmt.Errorf("%w: negative MaxVisibility or Margin", ErrConfig)
	}
	if o.MaxVisibility == 0 {
		o.MaxVisibility = 12 * time.Hour
	}
	if o.Margin == 0 {
		o.Margin = time.Hour
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	rep := SweepReport{Bound: o.Retention + o.MaxVisibility + o.Margin}
	var first error
	in := &s3.ListObjectsV2Input{Bucket: aws.String(bucket)}
	if o.KeyPrefix != "" {
		in.Prefix = aws.String(o.KeyPrefix)
	}
	for {
		out, err := api.ListObjectsV2(ctx, in)
		if err != nil {
			return rep, fmt.Errorf("s3payload: list s3://%s/%s: %w", bucket, o.KeyPrefix, err)
		}
		// Messages age by AWS's clock and objects by S3's: a local clock
		// running ahead would make live messages' objects look expired,
		// so the earlier of it and S3's (the answer's Date) counts.
		now := o.Now()
		if st, ok := awsmiddleware.GetServerTime(out.ResultMetadata); ok && st.Before(now) {
			now = st
		}
		cutoff := now.Add(-rep.Bound)
		var expired []Pointer
		for _, obj := range out.Contents {
			rep.Listed++
			// The listing decides what is deleted: an entry outside the
			// prefix (a store that ignored it) or without a key is never.
			key := aws.ToString(obj.Key)
			if key != "" && strings.HasPrefix(key, o.KeyPrefix) && obj.LastModified != nil && obj.LastModified.Before(cutoff) {
				expired = append(expired, Pointer{Bucket: bucket, Key: key})
			}
		}
		rep.Expired += len(expired)
		n, err := deleteObjects(ctx, api, expired)
		rep.Deleted += n
		rep.Failed += len(expired) - n
		if err != nil && first == nil {
			first = err
		}
		if !aws.ToBool(out.IsTruncated) {
			return rep, first
		}
		next := aws.ToString(out.NextContinuationToken)
		if next == "" || next == aws.ToString(in.ContinuationToken) {
			// More to list, and no way to get it: an error, not a sweep
			// that silently stops halfway or lists one page forever.
			return rep, fmt.Errorf("s3payload: list s3://%s/%s: truncated listing without a new continuation token", bucket, o.KeyPrefix)
		}
		in.ContinuationToken = aws.String(next)
	}
}
