package fauxqs

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/sqsfake"
)

// Backend is an SQS to benchmark against, with its calls counted.
type Backend struct {
	Name string
	// Client is the backend's SDK client, for libraries that need a
	// *sqs.Client (every backend has one: sqsfake's in-process client is a
	// real *sqs.Client too).
	Client *sqs.Client
	API    sqsfake.API
	calls  func() int64
	reset  func()
	// throttled counts the requests answered with ThrottlingException, the
	// SDK's own retries included; nil where nothing can be throttled.
	throttled func() int64
}

// Throttled returns the requests answered with ThrottlingException since
// the last ResetCalls: every request the SDK sent, its own retries
// included. Only a backend with a quota (FakeQuota) throttles.
func (b Backend) Throttled() int64 {
	if b.throttled == nil {
		return 0
	}
	return b.throttled()
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

// Fake is sqsfake in process (its SDK client over the in-memory transport,
// retries off), counted by the server itself. A latency above zero delays
// every call by that much of real time.
func Fake(latency time.Duration) Backend {
	srv := sqsfake.New()
	if latency > 0 {
		srv.Inject(sqsfake.Fault{Latency: latency})
	}
	client := srv.Client()
	return Backend{Name: "sqsfake", Client: client, API: client, calls: func() int64 { return int64(srv.Calls().Total()) }, reset: srv.ResetCalls}
}

// FakeQuota is sqsfake in process with SQS's throughput quotas (see
// sqsfake.Quota), driven as production drives SQS: the SDK's standard
// retryer (3 requests per call, its backoff and retry quota), as a client
// from config.LoadDefaultConfig has, and latency added to every request
// before it reaches the server, so a throttled request costs a round trip
// as on SQS (a sqsfake Latency fault would answer it at once). Calls count
// every request, and Throttled those answered with ThrottlingException.
func FakeQuota(latency time.Duration, quota sqsfake.Quota) Backend {
	srv := sqsfake.New(func(o *sqsfake.Options) { o.Quota = &quota })
	var counter *countingHTTP
	client := srv.Client(func(o *sqs.Options) {
		counter = &countingHTTP{delay: latency, next: o.HTTPClient}
		o.HTTPClient = counter
		o.Retryer = retry.NewStandard()
	})
	return Backend{Name: "sqsfake-quota", Client: client, API: client, calls: counter.n.Load, throttled: counter.throttled.Load,
		reset: func() { counter.n.Store(0); counter.throttled.Store(0) }}
}

// FakeHTTP is sqsfake served over HTTP on a loopback port for tb, driven by
// the same SDK client as the emulator backend (the SDK's defaults and its
// default HTTP client, latency added per request), counted per request.
func FakeHTTP(tb testing.TB, latency time.Duration) Backend {
	hs := sqsfake.StartHTTP(tb, sqsfake.New())
	counter := &countingHTTP{delay: latency, next: awshttp.NewBuildableClient()}
	client := NewClient(hs.URL, func(o *sqs.Options) { o.HTTPClient = counter })
	return Backend{Name: "sqsfake-http", Client: client, API: client, calls: counter.n.Load, throttled: counter.throttled.Load,
		reset: func() { counter.n.Store(0); counter.throttled.Store(0) }}
}

// Backend is the emulator over HTTP, counted per request, with latency added
// to every request. The HTTP client is the SDK's default one, so connection
// reuse under many concurrent calls is what production gets.
func (e *Emulator) Backend(latency time.Duration) Backend {
	counter := &countingHTTP{delay: latency, next: awshttp.NewBuildableClient()}
	client := e.Client(func(o *sqs.Options) { o.HTTPClient = counter })
	return Backend{Name: "fauxqs", Client: client, API: client, calls: counter.n.Load, reset: func() { counter.n.Store(0) }}
}

// BackendNames lists the backends benchmarks compare in one run: sqsfake in
// process, sqsfake over HTTP with the real SDK client, and the fauxqs
// emulator with the same client.
func BackendNames() []string { return []string{"sqsfake", "sqsfake-http", "fauxqs"} }

// Latencies are the delays added per call that benchmarks run at: none, as
// on loopback, and 10 ms and 20 ms, a real region's round trip (5 to
// 20 ms). Ratios that hold at 0 ms can invert at 10 ms, where whatever
// sends one call at a time is capped near a hundred calls per second, and
// a library that keeps a fixed number of calls in flight loses half its
// throughput again at 20 ms.
func Latencies() []time.Duration {
	return []time.Duration{0, 10 * time.Millisecond, 20 * time.Millisecond}
}

// LatencyName names a latency in benchmark names: "0ms", "10ms".
func LatencyName(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) + "ms" }

// OpenBackend returns the named backend (one of BackendNames) with latency
// added to every call; the emulator or the HTTP server is started for tb
// (the emulator skipped or failed as StartT decides) and stopped when tb
// ends.
func OpenBackend(tb testing.TB, name string, latency time.Duration) Backend {
	switch name {
	case "fauxqs":
		return StartT(tb).Backend(latency)
	case "sqsfake-http":
		return FakeHTTP(tb, latency)
	}
	return Fake(latency)
}

// countingHTTP counts requests and delays each one, as a network round trip
// would, before handing it on; it counts the answers that say
// ThrottlingException too.
type countingHTTP struct {
	n         atomic.Int64
	throttled atomic.Int64
	delay     time.Duration
	next      sqs.HTTPClient
}

func (c *countingHTTP) Do(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	if c.delay > 0 {
		t := time.NewTimer(c.delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return nil, r.Context().Err()
		}
	}
	resp, err := c.next.Do(r)
	if err == nil && strings.HasPrefix(resp.Header.Get("X-Amzn-Query-Error"), "ThrottlingException;") {
		c.throttled.Add(1)
	}
	return resp, err
}
