package fifo

import (
	"errors"
	"fmt"
	"time"

	"github.com/sqskit/sqskit/internal/sqsrule"
)

// ErrInvalid matches every ValidationError with errors.Is.
var ErrInvalid = errors.New("fifo: invalid message")

// ErrClosed is returned by a Batcher after Close.
var ErrClosed = errors.New("fifo: batcher closed")

// ValidationError is a message SQS would refuse, caught before any call.
// Code is the error SQS would have answered with.
type ValidationError struct {
	Index  int // position in the SendBatch call; 0 for Send
	Field  string
	Code   string
	Reason string
	// Err is the error behind Reason when there is one: the Dedup
	// strategy's (ErrNoDedupKey, ErrNoDedupID, or a custom strategy's own).
	Err error
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("fifo: message %d: %s: %s", e.Index, e.Field, e.Reason)
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }

// Unwrap returns Err, so errors.Is(err, ErrNoDedupKey) holds too.
func (e *ValidationError) Unwrap() error { return e.Err }

func invalid(index int, err error) error {
	var v *sqsrule.Violation
	if errors.As(err, &v) {
		return &ValidationError{Index: index, Field: v.Field, Code: v.Code, Reason: v.Reason}
	}
	return err
}

// WindowExceededError means a message could not be sent within the
// deduplication window (5 minutes from its first attempt, less a margin).
// Sending it again with the same deduplication id could no longer be
// deduplicated by SQS: if an earlier attempt did reach the queue, a new send
// may enqueue a second copy.
type WindowExceededError struct {
	DeduplicationID string
	FirstAttempt    time.Time
	Last            error // the last attempt's failure
}

func (e *WindowExceededError) Error() string {
	return fmt.Sprintf("fifo: not sent within the deduplication window since %s (dedup id %s); the message may be duplicated if sent again: %v",
		e.FirstAttempt.Format(time.RFC3339), e.DeduplicationID, e.Last)
}

func (e *WindowExceededError) Unwrap() error { return e.Last }

// EntryError is a batch entry SQS refused (Failed[] with SenderFault true),
// or one whose retries ran out.
type EntryError struct {
	Code        string
	Message     string
	SenderFault bool
}

func (e *EntryError) Error() string {
	return fmt.Sprintf("fifo: entry failed: %s: %s", e.Code, e.Message)
}

// GroupBlockedError is the result of a FIFO message that was not sent
// because an earlier message of its group failed for good: sending it would
// have put it ahead of that message.
type GroupBlockedError struct {
	GroupID string
	// Index is the position, in the SendBatch call, of the message whose
	// failure blocked this one; -1 in a Batcher, where that message came
	// from another Send call.
	Index int
	// Cause is that message's error.
	Cause error
}

func (e *GroupBlockedError) Error() string {
	if e.Index < 0 {
		return fmt.Sprintf("fifo: not sent: an earlier message of group %q failed: %v", e.GroupID, e.Cause)
	}
	return fmt.Sprintf("fifo: not sent: message %d of group %q failed before it: %v", e.Index, e.GroupID, e.Cause)
}

func (e *GroupBlockedError) Unwrap() error { return e.Cause }
