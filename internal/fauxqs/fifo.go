package fauxqs

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/internal/sqserr"
	"github.com/sqskit/sqskit/sqsfake"
)

// FIFOQueue creates a uniquely named FIFO queue holding n messages spread
// over groups groups: message i is number i/groups of group GroupName(i %
// groups), and its body is that number (Seq reads it back), so a consumer
// can check that each group arrives in order. The groups interleave as a
// producer's would: the first ten of every group are sent, then the next
// ten, ten to a batch, several groups at once; a throttled call waits 5 ms
// and goes again (the SDK's own retries are off for the load).
// The call count is reset after the load.
func (b Backend) FIFOQueue(tb testing.TB, n, groups int) string {
	tb.Helper()
	ctx := context.Background()
	q, err := b.API.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("bench-" + strconv.FormatInt(time.Now().UnixNano(), 36) + ".fifo"),
		Attributes: map[string]string{"FifoQueue": "true"}})
	if err != nil {
		tb.Fatal(err)
	}
	// Round k sends the k-th ten of every group, several groups at once,
	// so that the groups interleave on the queue as a producer's would.
	const loaders = 8
	for first := 0; first < n; first += 10 * groups {
		work := make(chan int, groups)
		for g := range groups {
			work <- g
		}
		close(work)
		errs := make(chan error, loaders)
		var wg sync.WaitGroup
		for range min(loaders, groups) {
			wg.Go(func() {
				for g := range work {
					var seqs []int
					for i := first + g; i < min(first+10*groups, n); i += groups {
						seqs = append(seqs, i/groups)
					}
					if len(seqs) == 0 {
						continue
					}
					if err := sendGroup(ctx, b.API, *q.QueueUrl, GroupName(g), seqs); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			tb.Fatal(err)
		}
	}
	b.ResetCalls()
	return *q.QueueUrl
}

// sendGroup sends the messages of group with the sequence numbers seqs in
// one batch, again after 5 ms while it is throttled.
func sendGroup(ctx context.Context, api interface {
	SendMessageBatch(context.Context, *sqs.SendMessageBatchInput, ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
}, url, group string, seqs []int) error {
	entries := make([]types.SendMessageBatchRequestEntry, len(seqs))
	for i, s := range seqs {
		body := strconv.Itoa(s)
		entries[i] = types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(body),
			MessageGroupId: aws.String(group), MessageDeduplicationId: aws.String(group + "-" + body)}
	}
	for {
		out, err := api.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries},
			func(o *sqs.Options) { o.Retryer = aws.NopRetryer{} })
		if sqserr.Code(err) == "ThrottlingException" {
			time.Sleep(5 * time.Millisecond)
			continue
		}
		if err != nil {
			return err
		}
		if len(out.Failed) > 0 {
			return fmt.Errorf("load: an entry failed: %s", aws.ToString(out.Failed[0].Code))
		}
		return nil
	}
}

// GroupName names group k of FIFOQueue: "g<k>".
func GroupName(k int) string { return "g" + strconv.Itoa(k) }

// Seq reads the number of a FIFOQueue message within its group from its
// body; -1 when the body is not one.
func Seq(body string) int {
	n, err := strconv.Atoi(body)
	if err != nil {
		return -1
	}
	return n
}

// GroupOrder checks that the messages of FIFOQueue arrive in order within
// each group, each once: the next message of a group must be the one after
// the last. It is safe for concurrent use.
type GroupOrder struct {
	mu   sync.Mutex
	next map[string]int
	seen int
}

// See records the message of group with body and returns an error if it is
// not the next of its group.
func (o *GroupOrder) See(group, body string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.next == nil {
		o.next = map[string]int{}
	}
	want := o.next[group]
	if got := Seq(body); got != want {
		return fmt.Errorf("group %s: expect message %d, got %q", group, want, body)
	}
	o.next[group] = want + 1
	o.seen++
	return nil
}

// Seen returns how many messages arrived in order.
func (o *GroupOrder) Seen() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.seen
}

// QuotaMessages is the most messages a FIFO queue's quota q lets one action
// carry in elapsed, in batches of ten: its rate over elapsed plus the burst
// its bucket starts with (the Server's defaults fill in what q leaves
// zero). A run's messages over it is the fraction of the quota the run
// used, burst included.
func QuotaMessages(q sqsfake.Quota, elapsed time.Duration) float64 {
	rate, burst := q.FIFO, q.Burst
	if rate <= 0 {
		rate = 300
	}
	if burst <= 0 {
		burst = time.Second
	}
	return 10 * (rate*elapsed.Seconds() + max(1, rate*burst.Seconds()))
}
