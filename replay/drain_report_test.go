package replay_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/internal/fauxqs"
	"github.com/sqskit/sqskit/replay"
	"github.com/sqskit/sqskit/sqsfake"
)

// TestDrainReportCountsEveryMessageWhileHooksLag drains a DLQ while the
// Replayed hook lags behind the moves: its first call blocks until every
// message is deleted from the DLQ, so the consumer settles all of them
// while none of their outcomes has been reported yet. The Report and the
// hooks must still count every message: the Report is what Drain did, and
// Hooks are called for each outcome. (They were counted off the consumer's
// hook signals, which drop what does not fit their queue, 256 to 4,096
// signals: BenchmarkReplay/sqsfake/0ms lost some whenever the hook
// goroutine fell behind, with the DLQ empty and every message on its
// target.)
func TestDrainReportCountsEveryMessageWhileHooksLag(t *testing.T) {
	const n = 2500 // three signals a message: more than the largest signal queue
	be := fauxqs.Fake(0)
	target, operator, dlq := be.Queue(t, 0), be.Queue(t, 0), be.Queue(t, n)
	api := &deleteGate{API: be.API, want: n, all: make(chan struct{})}
	var hooked atomic.Int64
	r, err := replay.New(api, dlq, operator, func(o *replay.Options) {
		o.Target = target
		o.Policy = replay.Policy{MaxAttempts: 3, Backoff: backoff.Constant{}}
		o.Hooks.Replayed = func(context.Context, *types.Message, replay.Decision, string) {
			<-api.all // lag until every message has left the DLQ
			hooked.Add(1)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := r.Drain(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := depth(t, be.API, dlq); got != 0 {
		t.Fatalf("the DLQ still holds %d messages", got)
	}
	if got := depth(t, be.API, target); got != n {
		t.Fatalf("the target holds %d messages, want %d", got, n)
	}
	if rep.Replayed != n || hooked.Load() != n {
		t.Fatalf("%d messages moved; the Report says %+v and the Replayed hook was called %d times", n, rep, hooked.Load())
	}
}

// deleteGate closes all once want messages were deleted through it.
type deleteGate struct {
	sqsfake.API
	want    int64
	deleted atomic.Int64
	once    sync.Once
	all     chan struct{}
}

func (g *deleteGate) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	out, err := g.API.DeleteMessageBatch(ctx, in, optFns...)
	if err == nil && g.deleted.Add(int64(len(out.Successful))) >= g.want {
		g.once.Do(func() { close(g.all) })
	}
	return out, err
}

// depth is how many messages q holds, visible or not.
func depth(t *testing.T, api sqsfake.API, q string) int {
	t.Helper()
	out, err := api.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(q),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, v := range out.Attributes {
		k, err := strconv.Atoi(v)
		if err != nil {
			t.Fatal(err)
		}
		n += k
	}
	return n
}
