package replay

import (
	"testing"
	"time"

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
