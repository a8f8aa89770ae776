package s3payload_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/sqskit/sqskit/consumer"
	"github.com/sqskit/sqskit/fifo"
	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/s3payload"
	"github.com/sqskit/sqskit/sqsfake"
)

// handOver resolves a pointer to bucket/key through recv's middleware with
// a handler that succeeds, then reports its message deleted through hooks,
// as a consumer does: the object is then queued for Run.
func handOver(t *testing.T, recv *s3payload.Receiver, hooks consumer.Hooks, id, key string, size int) {
	t.Helper()
	m := &handler.Message{ID: id, Body: s3payload.Pointer{Bucket: "payloads", Key: key}.Body(),
		MessageAttributes: map[string]handler.AttributeValue{s3payload.SizeAttribute: {DataType: "Number", StringValue: fmt.Sprint(size)}}}
	if err := recv.Middleware()(func(context.Context, *handler.Message) error { return nil })(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	hooks.Deleted(context.Background(), m)
}

// TestRunCancelFinishesDeletesInFlight: cancelling Run's ctx while a
// DeleteObjects call is in flight lets that call finish (within the drain's
// 10 s), as Run promises for what is queued: the objects of messages SQS
// deleted are not left to Sweep because Run was asked to stop.
func TestRunCancelFinishesDeletesInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newS3(t, nil)
		api := newFaultyS3(base, time.Second) // every S3 call takes 1 s
		recv, err := s3payload.NewReceiver(api, []string{"payloads"})
		if err != nil {
			t.Fatal(err)
		}
		hooks := recv.Hooks(consumer.Hooks{})
		for i := range 3 {
			key := fmt.Sprintf("00000000-0000-4000-8000-00000000000%d", i)
			put(t, base, "payloads", key, "hello")
			handOver(t, recv, hooks, key, key, 5)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- recv.Run(ctx) }()
		time.Sleep(500 * time.Millisecond) // the delete call is in flight
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if st := recv.Stats(); st.Deleted != 3 || st.DeleteFailed != 0 {
			t.Errorf("expect 3 deleted, none failed, got %+v", st)
		}
		if ks := keys(t, base, "payloads"); len(ks) != 0 {
			t.Errorf("expect the objects deleted, got %v", ks)
		}
	})
}

// hangingDeletes is an S3 API whose DeleteObjects calls wait for their ctx.
type hangingDeletes struct{ s3payload.API }

func (h hangingDeletes) DeleteObjects(ctx context.Context, _ *s3.DeleteObjectsInput, _ ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestRunReturnsWhenDeletesHang: with S3 deletes hanging and Run waiting
// for a free place for its next call, cancelling Run's ctx still ends it
// within the drain's 10 s.
func TestRunReturnsWhenDeletesHang(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newS3(t, nil)
		recv, err := s3payload.NewReceiver(hangingDeletes{base}, []string{"payloads"}, func(o *s3payload.ReceiverOptions) { o.DeleteConcurrency = 1 })
		if err != nil {
			t.Fatal(err)
		}
		hooks := recv.Hooks(consumer.Hooks{})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- recv.Run(ctx) }()
		for i := range 2 {
			key := fmt.Sprintf("00000000-0000-4000-8000-00000000000%d", i)
			put(t, base, "payloads", key, "hello")
			handOver(t, recv, hooks, key, key, 5)
			synctest.Wait() // the first call hangs; Run waits to start the second
		}
		start := time.Now()
		cancel()
		<-done
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("expect Run to end within 10 s of its cancel, took %v", took)
		}
		if st := recv.Stats(); st.DeleteFailed != 2 {
			t.Errorf("expect both deletes failed, got %+v", st)
		}
	})
}

// TestParsePointerFieldsExactlyOnce: field names match exactly and once
// each, as Jackson reads them: encoding/json would take a case variant
// for the field and the last of repeated fields, so a Go and a Java
// consumer of one queue could disagree on the object a message names.
func TestParsePointerFieldsExactlyOnce(t *testing.T) {
	const head = `["` + s3payload.PointerClass + `",`
	for _, obj := range []string{
		`{"S3BUCKETNAME":"payloads","s3Key":"in/a"}`,
		`{"s3bucketname":"payloads","s3Key":"in/a"}`,
		`{"s3BucketName":"payloads","s3key":"in/a"}`,
		`{"s3BucketName":"secrets","S3BucketName":"payloads","s3Key":"in/a"}`,
		`{"s3BucketName":"secrets","s3BucketName":"payloads","s3Key":"in/a"}`,
		`{"s3BucketName":"payloads","s3Key":"in/a","s3Key":"in/b"}`,
		`null`,
	} {
		_, err := s3payload.ParsePointer(head + obj + `]`)
		var pe *s3payload.PointerError
		if !errors.As(err, &pe) || pe.Reason != s3payload.ReasonMalformed {
			t.Errorf("%s: expect a malformed PointerError, got %v", obj, err)
		}
	}
	p, err := s3payload.ParsePointer(head + `{"s3Key":"in/a","s3BucketName":"payloads"}]`)
	if err != nil || p != (s3payload.Pointer{Bucket: "payloads", Key: "in/a"}) {
		t.Errorf("expect fields in any order, got %+v, %v", p, err)
	}
}

// TestSweepWholeBucketIsExplicit: Sweep deletes; without a KeyPrefix it
// would delete every old object of the bucket, payload or not (a shared
// bucket's backups, say), so the whole bucket must be asked for by
// WholeBucket, and is refused otherwise with nothing listed or deleted.
func TestSweepWholeBucketIsExplicit(t *testing.T) {
	ctx := context.Background()
	api := newFaultyS3(newS3(t, nil), 0)
	put(t, api, "payloads", "backups/db.tar", "x")
	later := func(o *s3payload.SweepOptions) {
		o.Retention = time.Hour
		o.Now = func() time.Time { return time.Now().Add(48 * time.Hour) }
	}
	if _, err := s3payload.Sweep(ctx, api, "payloads", later); !errors.Is(err, s3payload.ErrConfig) {
		t.Errorf("expect ErrConfig without a KeyPrefix, got %v", err)
	}
	if ks := keys(t, api, "payloads"); len(ks) != 1 || api.Calls("DeleteObjects") != 0 {
		t.Fatalf("expect nothing deleted, got %v, %d delete calls", ks, api.Calls("DeleteObjects"))
	}
	for name, fn := range map[string]func(*s3payload.SweepOptions){
		"both": func(o *s3payload.SweepOptions) { o.WholeBucket, o.KeyPrefix = true, "in/" },
	} {
		if _, err := s3payload.Sweep(ctx, api, "payloads", later, fn); !errors.Is(err, s3payload.ErrConfig) {
			t.Errorf("%s: expect ErrConfig, got %v", name, err)
		}
	}
	rep, err := s3payload.Sweep(ctx, api, "payloads", later, func(o *s3payload.SweepOptions) { o.WholeBucket = true })
	if err != nil || rep.Deleted != 1 {
		t.Errorf("expect the whole bucket swept when asked, got %+v, %v", rep, err)
	}
}

// TestNewReceiverBoundsMaxPending: MaxPending sizes a queue made at once,
// so a huge one is an ErrConfig, not a panic or gigabytes reserved.
func TestNewReceiverBoundsMaxPending(t *testing.T) {
	for _, n := range []int{1<<20 + 1, math.MaxInt} {
		_, err := s3payload.NewReceiver(newS3(t, nil), []string{"payloads"}, func(o *s3payload.ReceiverOptions) { o.MaxPending = n })
		if !errors.Is(err, s3payload.ErrConfig) {
			t.Errorf("MaxPending %d: expect ErrConfig, got %v", n, err)
		}
	}
}

// TestSendFailedAfterSDKRetryKeepsObject: the SDK's own retries are
// invisible in a failed call's error: here its first request stored the
// message and got a server error back, and its retry was refused (a 403,
// say credentials expired between the two). The call's error is a client
// error, so the fifo.Sender counts nothing unconfirmed, but the pointer is
// on the queue: its object must stay.
func TestSendFailedAfterSDKRetryKeepsObject(t *testing.T) {
	api := newS3(t, nil)
	srv := sqsfake.New()
	sqsapi := srv.Client(func(o *sqs.Options) {
		o.Retryer = retry.NewStandard(func(o *retry.StandardOptions) {
			o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
		})
	})
	q := createQueue(t, sqsapi, "q", nil)
	srv.Inject(sqsfake.Fault{Op: "SendMessageBatch", AfterApply: true, Times: 1})
	srv.Inject(sqsfake.Fault{Op: "SendMessageBatch", Times: 1, Status: 403,
		Err: &smithy.GenericAPIError{Code: "ExpiredToken", Message: "The security token included in the request is expired", Fault: smithy.FaultClient}})
	s := newSender(t, api, sqsapi, q, func(o *s3payload.SenderOptions) { o.AlwaysThroughS3 = true })
	if _, err := s.Send(context.Background(), fifo.Message{Body: "hello"}); err == nil {
		t.Fatal("expect the send to fail")
	}
	out, err := sqsapi.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: &q})
	if err != nil || len(out.Messages) != 1 {
		t.Fatalf("expect the first request's message on the queue, got %v, %v", out, err)
	}
	if ks := keys(t, api, "payloads"); len(ks) != 1 {
		t.Errorf("expect the object of the stored pointer kept, got %v", ks)
	}
}

// listing answers ListObjectsV2 with fixed pages, by continuation token
// ("" for the first), and records what DeleteObjects was asked to delete.
type listing struct {
	s3payload.API
	pages   map[string]*s3.ListObjectsV2Output
	calls   int
	deleted []string
}

func (l *listing) ListObjectsV2(_ context.Context, in *s3.ListObjectsV2Input, _ ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	l.calls++
	if l.calls > 100 {
		return nil, errors.New("listing: called more than 100 times")
	}
	return l.pages[aws.ToString(in.ContinuationToken)], nil
}

func (l *listing) DeleteObjects(_ context.Context, in *s3.DeleteObjectsInput, _ ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error) {
	for _, o := range in.Delete.Objects {
		l.deleted = append(l.deleted, aws.ToString(o.Key))
	}
	return &s3.DeleteObjectsOutput{}, nil
}

// TestSweepDistrustsTheListing: Sweep deletes only what its listing says,
// so it checks what the listing says: a page that claims more but gives
// no new token is an error (not an endless loop, nor a silent half
// sweep), and an entry outside KeyPrefix or without a key (a store that
// ignored Prefix) is never deleted.
func TestSweepDistrustsTheListing(t *testing.T) {
	old := aws.Time(time.Now().Add(-365 * 24 * time.Hour))
	obj := func(key *string) s3types.Object { return s3types.Object{Key: key, LastModified: old} }
	opts := func(o *s3payload.SweepOptions) { o.KeyPrefix, o.Retention = "in/", time.Hour }
	for name, pages := range map[string]map[string]*s3.ListObjectsV2Output{
		"same-token": {
			"":   {Contents: []s3types.Object{obj(aws.String("in/a"))}, IsTruncated: aws.Bool(true), NextContinuationToken: aws.String("t1")},
			"t1": {Contents: []s3types.Object{obj(aws.String("in/b"))}, IsTruncated: aws.Bool(true), NextContinuationToken: aws.String("t1")},
		},
		"no-token": {
			"": {Contents: []s3types.Object{obj(aws.String("in/a"))}, IsTruncated: aws.Bool(true)},
		},
	} {
		l := &listing{pages: pages}
		if _, err := s3payload.Sweep(context.Background(), l, "payloads", opts); err == nil || l.calls > 2 {
			t.Errorf("%s: expect an error after at most 2 listings, got %v after %d", name, err, l.calls)
		}
	}
	l := &listing{pages: map[string]*s3.ListObjectsV2Output{"": {Contents: []s3types.Object{
		obj(aws.String("in/a")), obj(aws.String("backups/db.tar")), obj(nil), obj(aws.String("")),
	}}}}
	rep, err := s3payload.Sweep(context.Background(), l, "payloads", opts)
	if err != nil || !slices.Equal(l.deleted, []string{"in/a"}) || rep.Expired != 1 {
		t.Errorf("expect only in/a deleted, got %v, %+v, %v", l.deleted, rep, err)
	}
}

// concurrentGets counts the GetObject calls in flight, and the most at once.
type concurrentGets struct {
	s3payload.API
	mu       sync.Mutex
	now, max int
}

func (c *concurrentGets) GetObject(ctx context.Context, in *s3.GetObjectInput, o ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	c.mu.Lock()
	c.now++
	c.max = max(c.max, c.now)
	c.mu.Unlock()
	time.Sleep(time.Second)
	defer func() { c.mu.Lock(); c.now--; c.mu.Unlock() }()
	return c.API.GetObject(ctx, in, o...)
}

// TestBatchMiddlewareBoundsReads: a Lambda batch can hold up to 10,000
// messages; their pointers are resolved a bounded number at a time, not
// with one S3 read (and connection) per message at once.
func TestBatchMiddlewareBoundsReads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newS3(t, nil)
		put(t, base, "payloads", "k", "hello")
		api := &concurrentGets{API: base}
		recv, err := s3payload.NewReceiver(api, []string{"payloads"})
		if err != nil {
			t.Fatal(err)
		}
		msgs := make([]*handler.Message, 200)
		for i := range msgs {
			msgs[i] = &handler.Message{ID: fmt.Sprint(i), Body: s3payload.Pointer{Bucket: "payloads", Key: "k"}.Body(),
				MessageAttributes: map[string]handler.AttributeValue{s3payload.SizeAttribute: {DataType: "Number", StringValue: "5"}}}
		}
		var got int
		for _, err := range recv.BatchMiddleware()(func(_ context.Context, ms []*handler.Message) []error {
			got = len(ms)
			return make([]error, len(ms))
		})(context.Background(), msgs) {
			if err != nil {
				t.Fatal(err)
			}
		}
		if got != len(msgs) || api.max > 16 {
			t.Errorf("expect %d messages resolved at most 16 at a time, got %d, %d at once", len(msgs), got, api.max)
		}
	})
}

// TestPointerErrorIsOneLine: a forged pointer's bucket and key are the
// sender's text, written into logs and the parking queue by the error:
// control characters are escaped (no forged log line) and a long key is
// cut (a 1 MiB body cannot make a 1 MiB error).
func TestPointerErrorIsOneLine(t *testing.T) {
	recv, err := s3payload.NewReceiver(newS3(t, nil), []string{"payloads"}, func(o *s3payload.ReceiverOptions) { o.KeyPrefix = "in/" })
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []s3payload.Pointer{
		{Bucket: "payloads", Key: "x\nlevel=ERROR msg=\"forged\""},
		{Bucket: "pay\r\nloads", Key: "in/a"},
		{Bucket: "payloads", Key: "x" + strings.Repeat("a", 1<<20)},
	} {
		m := &handler.Message{ID: "m", Body: p.Body(), MessageAttributes: map[string]handler.AttributeValue{s3payload.SizeAttribute: {DataType: "Number", StringValue: "5"}}}
		err := recv.Middleware()(func(context.Context, *handler.Message) error { return nil })(context.Background(), m)
		if err == nil {
			t.Fatal("expect a refusal")
		}
		if s := err.Error(); strings.ContainsAny(s, "\r\n") || len(s) > 2048 {
			t.Errorf("expect one short line, got %d bytes: %.200q", len(s), s)
		}
	}
}

// TestNewSenderRefusesPrefixReceiversRefuse: a KeyPrefix with a "." or ".."
// path segment makes keys every Receiver refuses (ReasonKey, as a
// traversal): each message would be parked. NewSender refuses it; a ".."
// that the UUID completes ("in/..") is an ordinary key, and accepted.
func TestNewSenderRefusesPrefixReceiversRefuse(t *testing.T) {
	fs, err := fifo.NewSender(sqsfake.New().Client(), "https://sqs.us-east-1.amazonaws.com/000000000000/q")
	if err != nil {
		t.Fatal(err)
	}
	api := newS3(t, nil)
	for _, prefix := range []string{"../", "./", "in/../", "in/./x/", "a/../b"} {
		if _, err := s3payload.NewSender(api, fs, "payloads", func(o *s3payload.SenderOptions) { o.KeyPrefix = prefix }); !errors.Is(err, s3payload.ErrConfig) {
			t.Errorf("%q: expect ErrConfig, got %v", prefix, err)
		}
	}
	for _, prefix := range []string{"in/..", "in/", "in//x/", ".hidden/", "a..b/"} {
		if _, err := s3payload.NewSender(api, fs, "payloads", func(o *s3payload.SenderOptions) { o.KeyPrefix = prefix }); err != nil {
			t.Errorf("%q: expect accepted, got %v", prefix, err)
		}
	}
}

// TestSweepTrustsS3ClockOverAFastOne: messages age by AWS's clock and
// objects by S3's; a local clock running ahead (by more than Margin) made
// young objects look expired, and Sweep deleted payloads live messages
// still point to. Sweep takes the earlier of its clock and S3's (the Date
// of each listing's answer).
func TestSweepTrustsS3ClockOverAFastOne(t *testing.T) {
	fake := gofakes3.New(s3mem.New(), gofakes3.WithTimeSkewLimit(0))
	dated := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Date", time.Now().UTC().Format(http.TimeFormat))
		fake.Server().ServeHTTP(w, r)
	})
	api := s3Client("http://s3.test", &http.Client{Transport: inMemory{dated}})
	if _, err := api.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String("payloads")}); err != nil {
		t.Fatal(err)
	}
	put(t, api, "payloads", "in/live", "x")
	rep, err := s3payload.Sweep(context.Background(), api, "payloads", func(o *s3payload.SweepOptions) {
		o.KeyPrefix, o.Retention = "in/", time.Hour
		o.Now = func() time.Time { return time.Now().Add(48 * time.Hour) } // the local clock is 2 days ahead
	})
	if err != nil || rep.Deleted != 0 || len(keys(t, api, "payloads")) != 1 {
		t.Errorf("expect the young object kept, got %+v, %v", rep, err)
	}
}

// TestReceiverDeletesOnlySenderKeys: reading a pointer's object is allowed
// by bucket and prefix, but deleting it after the message is a stronger
// power: a forged pointer to any other object of an allowed bucket (the
// default KeyPrefix "" allows every key), with its size and a handler that
// accepts any body, had the Receiver delete it. The Receiver deletes only
// keys a Sender (ours, or the Java or Python client) writes, ending with a
// UUID (under a prefix the Receiver may not know); others are read and
// left in place.
func TestReceiverDeletesOnlySenderKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newS3(t, nil)
		const uuid = "0f8fad5b-d9cb-469f-a165-70867728950e"
		for _, k := range []string{"backups/db.tar", uuid, "orders/" + uuid, uuid + ".bak"} {
			put(t, base, "payloads", k, "hello")
		}
		recv, err := s3payload.NewReceiver(base, []string{"payloads"})
		if err != nil {
			t.Fatal(err)
		}
		hooks := recv.Hooks(consumer.Hooks{})
		for i, k := range []string{"backups/db.tar", uuid, "orders/" + uuid, uuid + ".bak"} {
			handOver(t, recv, hooks, fmt.Sprint(i), k, 5)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- recv.Run(ctx) }()
		synctest.Wait()
		cancel()
		<-done
		if ks := keys(t, base, "payloads"); !slices.Equal(ks, []string{uuid + ".bak", "backups/db.tar"}) {
			t.Errorf("expect only the UUID keys deleted, got %v left", ks)
		}
	})
}

// bodyS3 answers every GetObject with one body, as a stream.
type bodyS3 struct {
	s3payload.API
	body string
}

func (b bodyS3) GetObject(context.Context, *s3.GetObjectInput, ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	return &s3.GetObjectOutput{Body: io.NopCloser(strings.NewReader(b.body)), ContentLength: aws.Int64(int64(len(b.body)))}, nil
}

// TestResolveHoldsOnePayload: MaxPayloadBytes bounds what a message makes
// the consumer hold in memory; reading a payload of the declared size
// allocates it about once, not the doubling buffer of io.ReadAll and then
// a copy into a string (about three times its size at the peak).
func TestResolveHoldsOnePayload(t *testing.T) {
	const size = 32 << 20
	body := strings.Repeat("x", size)
	recv, err := s3payload.NewReceiver(bodyS3{body: body}, []string{"payloads"})
	if err != nil {
		t.Fatal(err)
	}
	m := &handler.Message{ID: "m", Body: s3payload.Pointer{Bucket: "payloads", Key: "in/a"}.Body(),
		MessageAttributes: map[string]handler.AttributeValue{s3payload.SizeAttribute: {DataType: "Number", StringValue: fmt.Sprint(size)}}}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var got int
	if err := recv.Middleware()(func(_ context.Context, m *handler.Message) error { got = len(m.Body); return nil })(context.Background(), m); err != nil || got != size {
		t.Fatalf("expect the payload, got %d bytes, %v", got, err)
	}
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > size*3/2 {
		t.Errorf("expect about %d bytes allocated, got %d", size, alloc)
	}
}

// TestParkedAndHeldForgetTheObject: a handler behind the Receiver that
// succeeded, with a middleware outside it that then escalated or held the
// message, left its entry among those waiting for a delete that never
// comes (a parked message's delete reports Parked, a hold Held): each such
// entry took a place of MaxPending for good, and pushed out the objects of
// messages that were deleted (counted as Dropped, left to Sweep).
func TestParkedAndHeldForgetTheObject(t *testing.T) {
	base := newS3(t, nil)
	const key = "00000000-0000-4000-8000-000000000001"
	put(t, base, "payloads", key, "hello")
	recv, err := s3payload.NewReceiver(base, []string{"payloads"}, func(o *s3payload.ReceiverOptions) { o.MaxPending = 2 })
	if err != nil {
		t.Fatal(err)
	}
	hooks := recv.Hooks(consumer.Hooks{})
	ctx := context.Background()
	resolve := func(id string) *handler.Message {
		m := &handler.Message{ID: id, Body: s3payload.Pointer{Bucket: "payloads", Key: key}.Body(),
			MessageAttributes: map[string]handler.AttributeValue{s3payload.SizeAttribute: {DataType: "Number", StringValue: "5"}}}
		if err := recv.Middleware()(func(context.Context, *handler.Message) error { return nil })(ctx, m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	if m := resolve("parked"); hooks.Parked != nil {
		hooks.Parked(ctx, m, "outer-middleware")
	}
	if m := resolve("held"); hooks.Held != nil {
		hooks.Held(ctx, m, time.Minute)
	}
	for _, id := range []string{"a", "b"} {
		resolve(id)
	}
	if st := recv.Stats(); st.Dropped != 0 {
		t.Errorf("expect nothing dropped, got %+v", st)
	}
}
