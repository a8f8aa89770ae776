package sqsrule

import "time"

// Limits of the SQS API, as documented by AWS (message size raised to 1 MiB in
// August 2025).
const (
	MaxMessageBytes       = 1 << 20 // body + attributes, and a whole batch
	MinMessageBytesAttr   = 1024    // lowest MaximumMessageSize a queue accepts
	MaxBatchEntries       = 10
	MaxBatchEntryIDLength = 80
	MaxAttributes         = 10
	MaxAttributeNameLen   = 256
	MaxDataTypeLen        = 256
	MaxIDLength           = 128 // group, deduplication and receive-attempt ids
	MaxDelaySeconds       = 900
	MaxVisibilitySeconds  = 43200 // 12 hours
	MaxWaitSeconds        = 20
	MaxReceiveMessages    = 10
	MinRetentionSeconds   = 60
	MaxRetentionSeconds   = 1209600 // 14 days
	MinMaxReceiveCount    = 1
	MaxMaxReceiveCount    = 1000
	MaxQueueNameLength    = 80

	// A Number attribute is zero or between 10^MinNumberExponent and
	// 10^MaxNumberExponent in magnitude.
	MinNumberExponent = -128
	MaxNumberExponent = 126

	// DedupWindow is how long SQS remembers a FIFO deduplication id.
	DedupWindow = 5 * time.Minute
	// AttemptIDWindow is how long a ReceiveRequestAttemptId can be reused.
	AttemptIDWindow = 5 * time.Minute
	// MaxVisibility is the longest a message can stay in flight after its
	// first receive.
	MaxVisibility = MaxVisibilitySeconds * time.Second
)

// Seconds is d in SQS's whole seconds, rounded up, so that a delay or a
// hold never ends before it was asked to; a negative d is 0. Every package
// converts durations for SQS with it.
func Seconds(d time.Duration) int32 {
	if d <= 0 {
		return 0
	}
	return int32((d + time.Second - 1) / time.Second)
}
