package fauxqs

import (
	"context"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/sqsfake"
)

// Backend is an SQS to benchmark against, with its calls counted.
type Backend struct {
	Name string
	// Client is the SDK client of the emulator backend, for libraries that
	// need a *sqs.Client; nil for sqsfake.
	Client *sqs.Client
	API    sqsfake.API
	calls  func() int64
	reset  func()
}

// Calls returns the calls made since the last ResetCalls.
func (b Backend) Calls() int64 { return b.calls() }

// ResetCalls starts counting from zero, e.g. after loading a queue.
func (b Backend) ResetCalls() { b.reset() }

// Queue creates a uniquely named standard queue holding n small messages,
// sent in batches of ten, and resets the call count.
func (b Backend) Queue(tb testing.TB, n int) string {
	tb.Helper()
	ctx := context.Background()
	q, err := b.API.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("bench-" + strconv.FormatInt(time.Now().UnixNano(), 36))})
	if err != nil {
		tb.Fatal(err)
	}
	for i := 0; i < n; i += 10 {
		var entries []types.SendMessageBatchRequestEntry
		for j := i; j < min(i+10, n); j++ {
			entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(j)), MessageBody: aws.String(`{"order":42}`)})
		}
		if _, err := b.API.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: q.QueueUrl, Entries: entries}); err != nil {
			tb.Fatal(err)
		}
	}
	b.ResetCalls()
	return *q.QueueUrl
}

// Fake is sqsfake, counted by the server itself.
func Fake() Backend {
	srv := sqsfake.New()
	return Backend{Name: "sqsfake", API: srv.Client(), calls: func() int64 { return int64(srv.Calls().Total()) }, reset: srv.ResetCalls}
}

// Backend is the emulator over HTTP, counted per request.
func (e *Emulator) Backend() Backend {
	counter := &countingHTTP{}
	client := e.Client(func(o *sqs.Options) { o.HTTPClient = counter })
	return Backend{Name: "fauxqs", Client: client, API: client, calls: counter.n.Load, reset: func() { counter.n.Store(0) }}
}

// BackendNames lists the backends benchmarks compare in one run.
func BackendNames() []string { return []string{"sqsfake", "fauxqs"} }

// OpenBackend returns the named backend; the emulator is started for tb
// (skipped or failed as StartT decides) and stopped when tb ends.
func OpenBackend(tb testing.TB, name string) Backend {
	if name == "fauxqs" {
		return StartT(tb).Backend()
	}
	return Fake()
}

type countingHTTP struct{ n atomic.Int64 }

func (c *countingHTTP) Do(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultClient.Do(r)
}
