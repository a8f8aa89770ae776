package sqsrule

import "fmt"

// Error codes SQS answers with, as short names (the run-time codes of modeled
// errors carry an "AWS.SimpleQueueService." prefix; see SQS_RULES).
const (
	CodeInvalidParameterValue  = "InvalidParameterValue"
	CodeMissingParameter       = "MissingParameter"
	CodeInvalidMessageContents = "InvalidMessageContents"
	CodeInvalidBatchEntryID    = "InvalidBatchEntryId"
	CodeBatchEntryIDsNotDist   = "BatchEntryIdsNotDistinct"
	CodeEmptyBatchRequest      = "EmptyBatchRequest"
	CodeTooManyEntries         = "TooManyEntriesInBatchRequest"
	CodeBatchRequestTooLong    = "BatchRequestTooLong"
)

// Violation is a broken SQS rule: Code is the error code SQS would return,
// Field names what was wrong (a parameter, attribute name or entry id).
type Violation struct {
	Code   string
	Field  string
	Reason string
}

func (v *Violation) Error() string {
	if v.Field == "" {
		return fmt.Sprintf("%s: %s", v.Code, v.Reason)
	}
	return fmt.Sprintf("%s: %s: %s", v.Code, v.Field, v.Reason)
}

func violation(code, field, format string, args ...any) *Violation {
	return &Violation{Code: code, Field: field, Reason: fmt.Sprintf(format, args...)}
}
