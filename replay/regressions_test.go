package replay

import (
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Decide(nil, now) used to panic reading the message id. A nil message is
// decided as an empty one: no counter, so the first replay.
func TestDecideNilMessageIsAnEmptyMessage(t *testing.T) {
	p := Policy{MaxAttempts: 2}
	got := p.Decide(nil, now)
	want := p.Decide(&types.Message{}, now)
	if got.Action != Replay || got.Attempt != 1 {
		t.Fatalf("expect the first replay, got %+v", got)
	}
	if got.Delay != want.Delay || got.Metadata.FirstFailure != want.Metadata.FirstFailure || got.Delay < 0 || got.Delay > time.Minute {
		t.Fatalf("expect the empty message's decision %+v, got %+v", want, got)
	}
}

// New used to accept a typed-nil client: Run then panicked on a goroutine
// it started, crashing the process.
func TestNewRefusesTypedNilClient(t *testing.T) {
	var client *sqs.Client
	_, err := New(client, "https://sqs.us-east-1.amazonaws.com/123456789012/dlq", "https://sqs.us-east-1.amazonaws.com/123456789012/ops",
		func(o *Options) { o.Target = "https://sqs.us-east-1.amazonaws.com/123456789012/main" })
	if !errors.Is(err, ErrConfig) {
		t.Fatalf("expect ErrConfig, got %v", err)
	}
}

// A sqskit-replay attribute holding JSON null used to pass as empty
// metadata; the replayer always writes an object, so null is metadata it
// did not write.
func TestNullMetadataIsInvalid(t *testing.T) {
	d := Policy{}.Decide(dlqMessage("m1", map[string]types.MessageAttributeValue{MetadataAttribute: {DataType: aws.String("String"), StringValue: aws.String("null")}}), now)
	if d.Action != Escalate || d.Reason != InvalidMetadata {
		t.Fatalf("expect an InvalidMetadata escalation, got %v %q", d.Action, d.Reason)
	}
	if got := Restore(map[string]types.MessageAttributeValue{MetadataAttribute: {DataType: aws.String("String"), StringValue: aws.String("null")}}, ""); got[MetadataAttribute].StringValue == nil {
		t.Fatalf("expect Restore to keep the producer's own attribute, got %v", got)
	}
}

// With two unreadable fields in the metadata, which one Decide reported
// (and so the reason: InvalidCounter or InvalidMetadata) depended on map
// iteration order: two receives of one message could escalate differently.
// Found by FuzzDecide.
func TestDecideIsDeterministicWithSeveralBadFields(t *testing.T) {
	m := dlqMessage("m1", map[string]types.MessageAttributeValue{MetadataAttribute: {DataType: aws.String("String"),
		StringValue: aws.String(`{"sd":900000000050,"prev":-1,"n":-4,"first":"then","moved":"x"}`)}})
	first := Policy{}.Decide(m, now)
	for range 50 {
		if d := (Policy{}).Decide(m, now); d.Reason != first.Reason || d.Detail != first.Detail {
			t.Fatalf("expect the same decision every time, got %q (%s), then %q (%s)", first.Reason, first.Detail, d.Reason, d.Detail)
		}
	}
}
