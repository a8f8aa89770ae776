package replay_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/replay"
)

// Policy.ResetCounter sends a replay without a counter, so the next
// replayer counts from the start, while the decision (and so the
// deduplication id) still counts the attempt.
func TestResetCounterSendsNoCounter(t *testing.T) {
	for _, reset := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			w := newWorld(t, true)
			w.seedDLQ(t, "m", "g", map[string]types.MessageAttributeValue{
				replay.DefaultCounterAttribute: {DataType: aws.String("Number"), StringValue: aws.String("2")},
			})
			var attempt int
			r := w.replayer(t, func(o *replay.Options) {
				o.Policy.MaxAttempts = 10
				o.Policy.ResetCounter = reset
				o.Hooks.Replayed = func(_ context.Context, _ *types.Message, d replay.Decision, _ string) { attempt = d.Attempt }
			})
			if rep := w.drain(t, r); rep.Replayed != 1 {
				t.Fatalf("expect 1 replayed, got %+v", rep)
			}
			got := w.receiveAll(t, w.main)
			if len(got) != 1 {
				t.Fatalf("expect the message on its queue, got %d", len(got))
			}
			counter, has := got[0].MessageAttributes[replay.DefaultCounterAttribute]
			md := metadataOf(t, got[0])
			switch {
			case attempt != 3:
				t.Errorf("reset %v: expect the decision to count attempt 3, got %d", reset, attempt)
			case reset && (has || md.Attempt != 0):
				t.Errorf("expect no counter after a reset, got %v and metadata %d", aws.ToString(counter.StringValue), md.Attempt)
			case !reset && aws.ToString(counter.StringValue) != "3":
				t.Errorf("expect the counter to go on to 3, got %v", aws.ToString(counter.StringValue))
			}
		})
	}
}
