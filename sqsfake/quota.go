package sqsfake

import (
	"hash/fnv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"
)

// Quota models SQS's throughput quotas, per queue and per action (each
// operation name is its own action: SendMessage and SendMessageBatch have a
// quota each). Each action on each queue has a bucket that holds Burst's
// worth of calls and refills at its rate on the Server's Clock; a call that
// finds its bucket empty fails with ThrottlingException (HTTP 400), which the
// SDKs retry with backoff. A throttled call is still counted by Calls.
//
// The defaults are SQS's published FIFO quotas: 300 calls a second per
// action without high-throughput mode. In high-throughput mode
// (DeduplicationScope messageGroup and FifoThroughputLimit
// perMessageGroupId) a queue has Partitions partitions, each with 300 calls
// a second per action (SQS's per-partition quota); SendMessage and
// SendMessageBatch count on the partition of each message group they name
// (an FNV-1a hash of the group id), every other action against the
// queue's total, Partitions × 300. SQS adds partitions as load grows (up
// to 70,000 calls a second in some regions); a fixed number keeps a test
// deterministic. Standard queues are unlimited unless Standard is set.
type Quota struct {
	// FIFO is the calls per second of each action on a FIFO queue, and on
	// each partition of one in high-throughput mode. Default 300.
	FIFO float64
	// Partitions is the number of partitions of a FIFO queue in
	// high-throughput mode. Default 8.
	Partitions int
	// Standard is the calls per second of each action on a standard queue.
	// Default 0: unlimited.
	Standard float64
	// Burst is how much unused quota a bucket keeps, as time at its rate:
	// a bucket holds rate × Burst calls (at least one), and starts full.
	// Default 1 s.
	Burst time.Duration
}

func (q Quota) resolved() Quota {
	if q.FIFO <= 0 {
		q.FIFO = 300
	}
	if q.Partitions <= 0 {
		q.Partitions = 8
	}
	if q.Burst <= 0 {
		q.Burst = time.Second
	}
	return q
}

// errThrottled is what a call beyond its quota gets.
func errThrottled(op, queue string) error {
	return &smithy.GenericAPIError{Code: "ThrottlingException", Message: "Rate exceeded for " + op + " on queue " + queue + ".", Fault: smithy.FaultClient}
}

// bucket is a token bucket.
type bucket struct {
	tokens float64
	last   time.Time
}

// take takes one call from b at now, refilled at rate up to size.
func (b *bucket) take(now time.Time, rate, size float64) bool {
	if b.last.IsZero() {
		b.tokens = size
	} else if d := now.Sub(b.last); d > 0 {
		b.tokens = min(size, b.tokens+rate*d.Seconds())
	}
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

type bucketKey struct {
	op        string
	partition int // -1: the queue's total
}

// throttle charges a call of op with input in to the quota of the queue it
// names, and returns ThrottlingException when that is spent.
func (s *Server) throttle(op, queueName string, in any) error {
	if s.opts.Quota == nil || queueName == "" {
		return nil
	}
	switch op {
	case "CreateQueue", "GetQueueUrl", "ListQueues":
		return nil
	}
	quota := *s.opts.Quota
	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.queues[queueName]
	if !ok {
		return nil // the call fails on its own
	}
	now := s.now()
	burst := func(rate float64) float64 { return max(1, rate*quota.Burst.Seconds()) }
	rate := quota.Standard
	if q.fifo {
		rate = quota.FIFO
	}
	if rate <= 0 {
		return nil
	}
	if q.quota == nil {
		q.quota = map[bucketKey]*bucket{}
	}
	get := func(k bucketKey) *bucket {
		b := q.quota[k]
		if b == nil {
			b = &bucket{}
			q.quota[k] = b
		}
		return b
	}
	if !q.fifo || q.attrs.throughputLimit != "perMessageGroupId" || q.attrs.dedupScope != "messageGroup" {
		if !get(bucketKey{op, -1}).take(now, rate, burst(rate)) {
			return errThrottled(op, queueName)
		}
		return nil
	}
	// High-throughput mode: the partitions of the groups the call names,
	// or the queue's total.
	parts := map[int]bool{}
	switch in := in.(type) {
	case *sqs.SendMessageInput:
		if in.MessageGroupId != nil {
			parts[partition(*in.MessageGroupId, quota.Partitions)] = true
		}
	case *sqs.SendMessageBatchInput:
		for _, e := range in.Entries {
			if e.MessageGroupId != nil {
				parts[partition(aws.ToString(e.MessageGroupId), quota.Partitions)] = true
			}
		}
	}
	if len(parts) == 0 {
		total := rate * float64(quota.Partitions)
		if !get(bucketKey{op, -1}).take(now, total, burst(total)) {
			return errThrottled(op, queueName)
		}
		return nil
	}
	for p := range parts { // every partition must have room, or none is charged
		b := *get(bucketKey{op, p})
		if !b.take(now, rate, burst(rate)) {
			return errThrottled(op, queueName)
		}
	}
	for p := range parts {
		get(bucketKey{op, p}).take(now, rate, burst(rate))
	}
	return nil
}

// partition is the high-throughput partition of a message group.
func partition(group string, n int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(group))
	return int(h.Sum32() % uint32(n))
}
