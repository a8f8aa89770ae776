package s3payload_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/sqskit/sqskit/s3payload"
)

// inMemory hands each request to an http.Handler in process: the SDK's
// S3 client talks to gofakes3 with no socket and no goroutine.
type inMemory struct{ h http.Handler }

func (t inMemory) RoundTrip(r *http.Request) (*http.Response, error) {
	// A server reads the length from the header, where the client's
	// transport would have written it.
	if r.ContentLength >= 0 && r.Header.Get("Content-Length") == "" {
		r.Header.Set("Content-Length", strconv.FormatInt(r.ContentLength, 10))
	}
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}

// clock is gofakes3's time source from a func (time.Now in a synctest
// bubble is the bubble's).
type clock struct{ now func() time.Time }

func (c clock) Now() time.Time                  { return c.now() }
func (c clock) Since(t time.Time) time.Duration { return c.now().Sub(t) }

// newS3 returns an S3 client for a fresh gofakes3 with the bucket
// "payloads", its objects timed by now (time.Now when nil).
func newS3(t testing.TB, now func() time.Time) *s3.Client {
	t.Helper()
	if now == nil {
		now = time.Now
	}
	ts := clock{now}
	fake := gofakes3.New(s3mem.New(s3mem.WithTimeSource(ts)), gofakes3.WithTimeSource(ts), gofakes3.WithTimeSkewLimit(0))
	api := s3Client("http://s3.test", &http.Client{Transport: inMemory{fake.Server()}})
	if _, err := api.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String("payloads")}); err != nil {
		t.Fatal(err)
	}
	return api
}

func s3Client(endpoint string, hc aws.HTTPClient) *s3.Client {
	return s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		HTTPClient:   hc,
	})
}

// keys lists the bucket's keys.
func keys(t testing.TB, api s3payload.API, bucket string) []string {
	t.Helper()
	out, err := api.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	var ks []string
	for _, o := range out.Contents {
		ks = append(ks, aws.ToString(o.Key))
	}
	return ks
}

var errInjected = errors.New("injected fault")

// faultyS3 wraps an S3 API: it counts calls by operation, adds latency to
// each, and fails the next n calls of an operation on request.
type faultyS3 struct {
	s3payload.API
	latency time.Duration
	mu      sync.Mutex
	fail    map[string]int
	calls   map[string]*atomic.Int64
}

func newFaultyS3(api s3payload.API, latency time.Duration) *faultyS3 {
	f := &faultyS3{API: api, latency: latency, fail: map[string]int{}, calls: map[string]*atomic.Int64{}}
	for _, op := range []string{"PutObject", "GetObject", "DeleteObjects", "ListObjectsV2"} {
		f.calls[op] = new(atomic.Int64)
	}
	return f
}

func (f *faultyS3) failNext(op string, n int) { f.mu.Lock(); f.fail[op] += n; f.mu.Unlock() }

func (f *faultyS3) Calls(op string) int64 { return f.calls[op].Load() }

func (f *faultyS3) before(ctx context.Context, op string) error {
	f.calls[op].Add(1)
	if f.latency > 0 {
		select {
		case <-time.After(f.latency):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail[op] > 0 {
		f.fail[op]--
		return errInjected
	}
	return nil
}

func (f *faultyS3) PutObject(ctx context.Context, in *s3.PutObjectInput, o ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	if err := f.before(ctx, "PutObject"); err != nil {
		return nil, err
	}
	return f.API.PutObject(ctx, in, o...)
}

func (f *faultyS3) GetObject(ctx context.Context, in *s3.GetObjectInput, o ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	if err := f.before(ctx, "GetObject"); err != nil {
		return nil, err
	}
	return f.API.GetObject(ctx, in, o...)
}

func (f *faultyS3) DeleteObjects(ctx context.Context, in *s3.DeleteObjectsInput, o ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error) {
	if err := f.before(ctx, "DeleteObjects"); err != nil {
		return nil, err
	}
	return f.API.DeleteObjects(ctx, in, o...)
}

func (f *faultyS3) ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, o ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	if err := f.before(ctx, "ListObjectsV2"); err != nil {
		return nil, err
	}
	return f.API.ListObjectsV2(ctx, in, o...)
}

// payload returns n bytes of text that differ by seed, so a mix-up shows.
func payload(n, seed int) string {
	var b strings.Builder
	b.Grow(n)
	for i := 0; b.Len() < n; i++ {
		b.WriteByte("abcdefghijklmnopqrstuvwxyz0123456789"[(i*7+seed)%36])
	}
	return b.String()
}

// createQueue creates a standard queue.
func createQueue(t testing.TB, api *sqs.Client, name string, attrs map[string]string) string {
	t.Helper()
	out, err := api.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		t.Fatal(err)
	}
	return *out.QueueUrl
}

type s3GetInput = s3.GetObjectInput

func readAll(t testing.TB, r io.Reader) string {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func eventRecord(id, body string, size int) events.SQSMessage {
	return events.SQSMessage{
		MessageId: id, ReceiptHandle: "rh-" + id, Body: body,
		EventSourceARN: "arn:aws:sqs:us-east-1:000000000000:orders",
		MessageAttributes: map[string]events.SQSMessageAttribute{
			"ExtendedPayloadSize": {DataType: "Number", StringValue: aws.String(strconv.Itoa(size))},
		},
	}
}
