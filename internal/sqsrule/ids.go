package sqsrule

import (
	"slices"
	"strings"
)

// CheckGroupID reports a MessageGroupId SQS would refuse: empty, longer than
// 128 characters, or holding a character other than alphanumerics and
// ASCII punctuation.
func CheckGroupID(id string) error { return checkID("MessageGroupId", id) }

// CheckDedupID reports a MessageDeduplicationId SQS would refuse (same rules
// as the group id).
func CheckDedupID(id string) error { return checkID("MessageDeduplicationId", id) }

// CheckAttemptID reports a ReceiveRequestAttemptId SQS would refuse (same rules
// as the group id).
func CheckAttemptID(id string) error { return checkID("ReceiveRequestAttemptId", id) }

func checkID(field, id string) error {
	if id == "" || len(id) > MaxIDLength {
		return violation(CodeInvalidParameterValue, field, "must be 1 to %d characters, is %d", MaxIDLength, len(id))
	}
	for i := 0; i < len(id); i++ {
		if !isIDChar(id[i]) {
			return violation(CodeInvalidParameterValue, field, "character %q at %d is not alphanumeric or punctuation", id[i], i)
		}
	}
	return nil
}

// isIDChar: alphanumerics and !"#$%&'()*+,-./:;<=>?@[\]^_`{|}~, which is every
// printable ASCII character but space.
func isIDChar(c byte) bool { return c > ' ' && c < 0x7f }

// CheckBatchEntryID reports a batch entry Id SQS would refuse.
func CheckBatchEntryID(id string) error {
	if id == "" || len(id) > MaxBatchEntryIDLength {
		return violation(CodeInvalidBatchEntryID, "Id", "batch entry id must be 1 to %d characters, is %d", MaxBatchEntryIDLength, len(id))
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(isAlnum(c) || c == '_' || c == '-') {
			return violation(CodeInvalidBatchEntryID, "Id", "batch entry id %q has a character outside [A-Za-z0-9_-]", id)
		}
	}
	return nil
}

// CheckBatchIDs reports a batch SQS would refuse as a whole: empty, more than
// ten entries, a malformed id, or ids that repeat.
func CheckBatchIDs(ids []string) error {
	switch {
	case len(ids) == 0:
		return violation(CodeEmptyBatchRequest, "Entries", "the batch request has no entries")
	case len(ids) > MaxBatchEntries:
		return violation(CodeTooManyEntries, "Entries", "%d entries exceed the maximum of %d", len(ids), MaxBatchEntries)
	}
	for i, id := range ids {
		if err := CheckBatchEntryID(id); err != nil {
			return err
		}
		// At most ten ids: comparing with the earlier ones costs less than
		// a map allocated for every batch.
		if slices.Contains(ids[:i], id) {
			return violation(CodeBatchEntryIDsNotDist, "Id", "batch entry id %q is used twice", id)
		}
	}
	return nil
}

// CheckDelaySeconds reports a per-message delay outside 0 to 900 seconds.
func CheckDelaySeconds(d int32) error {
	if d < 0 || d > MaxDelaySeconds {
		return violation(CodeInvalidParameterValue, "DelaySeconds", "must be 0 to %d, is %d", MaxDelaySeconds, d)
	}
	return nil
}

// CheckQueueName reports a queue name SQS would refuse: 1 to 80 characters of
// alphanumerics, hyphens and underscores, with ".fifo" allowed at the end.
func CheckQueueName(name string) error {
	if name == "" || len(name) > MaxQueueNameLength {
		return violation(CodeInvalidParameterValue, "QueueName", "must be 1 to %d characters, is %d", MaxQueueNameLength, len(name))
	}
	base := strings.TrimSuffix(name, ".fifo")
	if base == "" {
		return violation(CodeInvalidParameterValue, "QueueName", "%q has nothing before .fifo", name)
	}
	for i := 0; i < len(base); i++ {
		c := base[i]
		if !(isAlnum(c) || c == '_' || c == '-') {
			return violation(CodeInvalidParameterValue, "QueueName", "%q can only hold alphanumerics, hyphens and underscores", name)
		}
	}
	return nil
}

// IsFIFO reports whether a queue URL, ARN or name names a FIFO queue. The
// .fifo suffix is the only reliable sign: fair queues put MessageGroupId on
// standard queues.
func IsFIFO(queue string) bool { return strings.HasSuffix(queue, ".fifo") }
