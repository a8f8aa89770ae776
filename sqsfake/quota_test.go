package sqsfake_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"

	"github.com/sqskit/sqskit/sqsfake"
)

func throttled(err error) bool {
	var apiErr smithy.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode() == "ThrottlingException"
}

// sendUntilThrottled sends to group g until a call is throttled and returns
// how many succeeded; it fails t on any other error or past limit.
func sendUntilThrottled(t *testing.T, f *fixture, url, g string, limit int) int {
	t.Helper()
	for i := range limit + 1 {
		_, err := f.client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("m"), MessageGroupId: aws.String(g), MessageDeduplicationId: aws.String(g + strconv.Itoa(i) + "-" + strconv.FormatInt(f.clock.Now().UnixNano(), 10))})
		if throttled(err) {
			return i
		}
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	t.Fatalf("expect throttling within %d calls", limit+1)
	return 0
}

func TestQuotaFIFODefault300PerSecondPerAction(t *testing.T) {
	f := newFixture(func(o *sqsfake.Options) { o.Quota = &sqsfake.Quota{} })
	url := f.queue(t, "q.fifo", map[string]string{"FifoQueue": "true"})
	if n := sendUntilThrottled(t, f, url, "g", 300); n != 300 {
		t.Fatalf("expect 300 sends in one instant, got %d", n)
	}
	// Another action has its own quota.
	if _, err := f.client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url)}); err != nil {
		t.Fatalf("expect a receive within its own quota, got %v", err)
	}
	f.clock.Advance(10 * time.Millisecond) // 3 calls' worth at 300/s
	if n := sendUntilThrottled(t, f, url, "g", 3); n != 3 {
		t.Fatalf("expect 3 sends after 10 ms, got %d", n)
	}
	f.clock.Advance(time.Hour) // the bucket holds one second's worth, no more
	if n := sendUntilThrottled(t, f, url, "g", 300); n != 300 {
		t.Fatalf("expect 300 sends after an idle hour, got %d", n)
	}
}

func TestQuotaOptIn(t *testing.T) {
	f := newFixture()
	url := f.queue(t, "q.fifo", map[string]string{"FifoQueue": "true"})
	for i := range 400 {
		_, err := f.client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("m"), MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String(strconv.Itoa(i))})
		if err != nil {
			t.Fatalf("send %d without a quota: %v", i, err)
		}
	}
}

func TestQuotaStandardUnlimitedByDefault(t *testing.T) {
	f := newFixture(func(o *sqsfake.Options) { o.Quota = &sqsfake.Quota{} })
	url := f.queue(t, "std", nil)
	for i := range 400 {
		if err := f.send(url, strconv.Itoa(i)); err != nil {
			t.Fatalf("send %d to a standard queue: %v", i, err)
		}
	}
}

func TestQuotaStandardAndBurst(t *testing.T) {
	f := newFixture(func(o *sqsfake.Options) { o.Quota = &sqsfake.Quota{Standard: 10, Burst: 2 * time.Second} })
	url := f.queue(t, "std", nil)
	n := 0
	for ; n < 100; n++ {
		if err := f.send(url, "m"); throttled(err) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if n != 20 {
		t.Fatalf("expect a burst of 20 (10/s for 2 s), got %d", n)
	}
}

// In high-throughput mode each message group's partition has its own 300
// calls a second: a group on another partition is not throttled when one
// partition is spent, and calls naming no group share the queue's total.
func TestQuotaHighThroughputPartitions(t *testing.T) {
	f := newFixture(func(o *sqsfake.Options) { o.Quota = &sqsfake.Quota{Partitions: 4} })
	url := f.queue(t, "ht.fifo", map[string]string{"FifoQueue": "true", "DeduplicationScope": "messageGroup", "FifoThroughputLimit": "perMessageGroupId"})
	if n := sendUntilThrottled(t, f, url, "a", 300); n != 300 {
		t.Fatalf("expect 300 sends to one group's partition, got %d", n)
	}
	others := 0
	for i := range 20 {
		_, err := f.client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("m"), MessageGroupId: aws.String("g" + strconv.Itoa(i)), MessageDeduplicationId: aws.String("x" + strconv.Itoa(i))})
		switch {
		case err == nil:
			others++
		case !throttled(err):
			t.Fatal(err)
		}
	}
	if others == 0 || others == 20 {
		t.Fatalf("expect groups on other partitions accepted and those on a's throttled, got %d of 20 accepted", others)
	}
	for i := range 1200 { // 4 partitions × 300
		if _, err := f.client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url)}); err != nil {
			t.Fatalf("receive %d within the queue's total: %v", i, err)
		}
	}
	_, err := f.client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url)})
	if !throttled(err) {
		t.Fatalf("expect the 1201st receive throttled, got %v", err)
	}
}

// Over HTTP the SDK reads the throttling answer as a retryable throttle.
func TestQuotaOverHTTP(t *testing.T) {
	clock := sqsfake.NewManualClock(start)
	hs := sqsfake.StartHTTP(t, sqsfake.New(func(o *sqsfake.Options) { o.Clock = clock; o.Quota = &sqsfake.Quota{FIFO: 1} }))
	client := hs.SDKClient(func(o *sqs.Options) { o.Retryer = aws.NopRetryer{} })
	ctx := context.Background()
	out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("q.fifo"), Attributes: map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"}})
	if err != nil {
		t.Fatal(err)
	}
	send := func() error {
		_, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: out.QueueUrl, MessageBody: aws.String(clock.Now().String()), MessageGroupId: aws.String("g")})
		return err
	}
	if err := send(); err != nil {
		t.Fatal(err)
	}
	err = send()
	if !throttled(err) {
		t.Fatalf("expect ThrottlingException, got %v", err)
	}
	var re interface{ HTTPStatusCode() int }
	if !errors.As(err, &re) || re.HTTPStatusCode() != 400 {
		t.Fatalf("expect HTTP 400, got %v", err)
	}
}
