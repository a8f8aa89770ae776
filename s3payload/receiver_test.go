package s3payload_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/consumer"
	"github.com/sqskit/sqskit/fifo"
	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/s3payload"
	"github.com/sqskit/sqskit/sqsfake"
)

// seen records what a handler was given, by body length and content.
type seen struct {
	mu     sync.Mutex
	bodies []string
	attrs  []map[string]handler.AttributeValue
}

func (s *seen) handle(_ context.Context, m *handler.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bodies = append(s.bodies, m.Body)
	s.attrs = append(s.attrs, m.MessageAttributes)
	return nil
}

// failFirst returns a handler whose first call fails (so the message goes
// to the DLQ) and whose later calls record into s, with its call count.
func (s *seen) failFirst() (handler.Handler, *atomic.Int32) {
	calls := new(atomic.Int32)
	return func(ctx context.Context, m *handler.Message) error {
		if calls.Add(1) == 1 {
			return errors.New("downstream down")
		}
		return s.handle(ctx, m)
	}, calls
}

func (s *seen) sorted() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(slices.Values(s.bodies))
}

// drain runs a consumer of q with recv's middleware and hooks until the
// queue is empty, with recv.Run beside it, and returns what was parked, by
// reason. Call it inside a synctest bubble.
func drain(t *testing.T, sqsapi consumer.API, q string, recv *s3payload.Receiver, h handler.Handler, optFns ...func(*consumer.Options)) map[string]int {
	t.Helper()
	var mu sync.Mutex
	parked := map[string]int{}
	c, err := consumer.New(sqsapi, q, h, func(o *consumer.Options) {
		o.Middleware = []handler.Middleware{recv.Middleware()}
		o.Hooks = recv.Hooks(consumer.Hooks{Parked: func(_ context.Context, _ *handler.Message, reason string) {
			mu.Lock()
			parked[reason]++
			mu.Unlock()
		}})
		o.VisibilityTimeout = 30 * time.Second
		o.WaitTime = time.Second
	}, func(o *consumer.Options) {
		for _, fn := range optFns {
			fn(o)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- recv.Run(ctx) }()
	if err := c.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return parked
}

func newSender(t *testing.T, s3api s3payload.API, sqsapi fifo.API, q string, optFns ...func(*s3payload.SenderOptions)) *s3payload.Sender {
	t.Helper()
	fs, err := fifo.NewSender(sqsapi, q)
	if err != nil {
		t.Fatal(err)
	}
	s, err := s3payload.NewSender(s3api, fs, "payloads", optFns...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestRoundTripThroughConsumer: a 5 MiB body, one just over the threshold
// and a small one reach the handler byte for byte; the offloaded objects
// are deleted after their messages' deletes, and the small one never
// touched S3.
func TestRoundTripThroughConsumer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s3api := newFaultyS3(newS3(t, nil), 0)
		sqsapi := sqsfake.New().Client()
		q := createQueue(t, sqsapi, "orders", nil)
		s := newSender(t, s3api, sqsapi, q)
		bodies := []string{payload(5<<20, 1), payload(s3payload.DefaultThreshold+1, 2), "small"}
		msgs := []fifo.Message{{Body: bodies[0]}, {Body: bodies[1]}, {Body: bodies[2]}}
		for i, r := range s.SendBatch(ctx, msgs) {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			if (r.Pointer != nil) != (i < 2) {
				t.Errorf("message %d: expect offloaded %v, got pointer %v", i, i < 2, r.Pointer)
			}
		}
		if n := s3api.Calls("PutObject"); n != 2 {
			t.Errorf("expect 2 puts, got %d", n)
		}
		recv, err := s3payload.NewReceiver(s3api, []string{"payloads"})
		if err != nil {
			t.Fatal(err)
		}
		var got seen
		drain(t, sqsapi, q, recv, got.handle)
		if want := slices.Sorted(slices.Values(bodies)); !slices.Equal(got.sorted(), want) {
			t.Errorf("expect the three bodies byte for byte, got %d bodies", len(got.bodies))
		}
		for _, a := range got.attrs {
			if _, ok := a[s3payload.SizeAttribute]; ok {
				t.Errorf("expect the size attribute removed, got %v", a)
			}
		}
		if ks := keys(t, s3api, "payloads"); len(ks) != 0 {
			t.Errorf("expect no object left, got %v", ks)
		}
		if st := recv.Stats(); st.Resolved != 2 || st.Deleted != 2 {
			t.Errorf("expect 2 resolved and deleted, got %+v", st)
		}
	})
}

// TestKeepObjects: with KeepObjects (SNS fan-out) nothing is deleted.
func TestKeepObjects(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s3api := newS3(t, nil)
		sqsapi := sqsfake.New().Client()
		q := createQueue(t, sqsapi, "orders", nil)
		if _, err := newSender(t, s3api, sqsapi, q).Send(context.Background(), fifo.Message{Body: payload(300_000, 3)}); err != nil {
			t.Fatal(err)
		}
		recv, err := s3payload.NewReceiver(s3api, []string{"payloads"}, func(o *s3payload.ReceiverOptions) { o.KeepObjects = true })
		if err != nil {
			t.Fatal(err)
		}
		var got seen
		drain(t, sqsapi, q, recv, got.handle)
		if len(got.bodies) != 1 || len(keys(t, s3api, "payloads")) != 1 {
			t.Errorf("expect 1 message handled and its object kept, got %d, %v", len(got.bodies), keys(t, s3api, "payloads"))
		}
	})
}

func put(t testing.TB, api s3payload.API, bucket, key, body string) {
	t.Helper()
	_, err := api.PutObject(context.Background(), &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: strings.NewReader(body), ContentLength: aws.Int64(int64(len(body)))})
	if err != nil {
		t.Fatal(err)
	}
}

// sizeAttr is a size attribute; SQS refuses a Number that is not one, so a
// value that is not a number goes as a String.
func sizeAttr(name string, v string) map[string]types.MessageAttributeValue {
	typ := "Number"
	if _, err := strconv.ParseFloat(v, 64); err != nil {
		typ = "String"
	}
	return map[string]types.MessageAttributeValue{name: {DataType: aws.String(typ), StringValue: aws.String(v)}}
}

// TestBadPointersArePermanent: each hostile pointer is parked at once with
// its reason, without reaching the handler, and the parked message is the
// pointer as received; a pointer to a bucket not allowed is never read.
func TestBadPointersArePermanent(t *testing.T) {
	ptr := func(bucket, key string) string { return s3payload.Pointer{Bucket: bucket, Key: key}.Body() }
	cases := []struct {
		name, body, attr, size, reason string
	}{
		{"non-JSON", "not a pointer", s3payload.SizeAttribute, "5", s3payload.ReasonMalformed},
		{"wrong-shape", `{"s3BucketName":"payloads","s3Key":"in/a"}`, s3payload.SizeAttribute, "5", s3payload.ReasonMalformed},
		{"size-not-a-number", ptr("payloads", "in/a"), s3payload.SizeAttribute, "five", s3payload.ReasonMalformed},
		{"negative-size", ptr("payloads", "in/a"), s3payload.SizeAttribute, "-1", s3payload.ReasonMalformed},
		{"forged-bucket", ptr("secrets", "in/a"), s3payload.SizeAttribute, "5", s3payload.ReasonBucket},
		{"forged-key-outside-prefix", ptr("payloads", "config/db-password"), s3payload.SizeAttribute, "5", s3payload.ReasonKey},
		{"forged-key-dot-dot", ptr("payloads", "in/../config"), s3payload.SizeAttribute, "5", s3payload.ReasonKey},
		{"missing-object", ptr("payloads", "in/gone"), s3payload.SizeAttribute, "5", s3payload.ReasonMissing},
		{"size-lie-smaller", ptr("payloads", "in/a"), s3payload.SizeAttribute, "4", s3payload.ReasonSizeMismatch},
		{"size-lie-larger", ptr("payloads", "in/a"), s3payload.LegacySizeAttribute, "6", s3payload.ReasonSizeMismatch},
		{"oversized", ptr("payloads", "in/a"), s3payload.SizeAttribute, "2000", s3payload.ReasonTooLarge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				base := newS3(t, nil)
				if _, err := base.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("secrets")}); err != nil {
					t.Fatal(err)
				}
				put(t, base, "payloads", "in/a", "hello")
				put(t, base, "payloads", "config/db-password", "hunter")
				put(t, base, "secrets", "in/a", "hello")
				s3api := newFaultyS3(base, 0)
				sqsapi := sqsfake.New().Client()
				q := createQueue(t, sqsapi, "orders", nil)
				parking := createQueue(t, sqsapi, "operator", nil)
				if _, err := sqsapi.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &q, MessageBody: &tc.body, MessageAttributes: sizeAttr(tc.attr, tc.size)}); err != nil {
					t.Fatal(err)
				}
				recv, err := s3payload.NewReceiver(s3api, []string{"payloads"}, func(o *s3payload.ReceiverOptions) {
					o.KeyPrefix = "in/"
					o.MaxPayloadBytes = 1000
				})
				if err != nil {
					t.Fatal(err)
				}
				var got seen
				parked := drain(t, sqsapi, q, recv, got.handle, func(o *consumer.Options) { o.ParkingQueue = parking })
				if len(got.bodies) != 0 || parked[tc.reason] != 1 {
					t.Fatalf("expect parked under %s, handler not called; got parked %v, %d handled", tc.reason, parked, len(got.bodies))
				}
				if tc.reason == s3payload.ReasonBucket || tc.reason == s3payload.ReasonKey || tc.reason == s3payload.ReasonTooLarge || tc.reason == s3payload.ReasonMalformed {
					if n := s3api.Calls("GetObject"); n != 0 {
						t.Errorf("expect no S3 read, got %d", n)
					}
				}
				out, err := sqsapi.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &parking})
				if err != nil || len(out.Messages) != 1 || aws.ToString(out.Messages[0].Body) != tc.body {
					t.Errorf("expect the pointer as received on the parking queue, got %v %v", out, err)
				}
			})
		})
	}
}

// TestS3ErrorIsRetried: an S3 failure other than a missing object is an
// ordinary failure: the message comes back and is resolved then.
func TestS3ErrorIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s3api := newFaultyS3(newS3(t, nil), 0)
		sqsapi := sqsfake.New().Client()
		q := createQueue(t, sqsapi, "orders", nil)
		body := payload(300_000, 4)
		if _, err := newSender(t, s3api, sqsapi, q).Send(context.Background(), fifo.Message{Body: body}); err != nil {
			t.Fatal(err)
		}
		s3api.failNext("GetObject", 1)
		recv, err := s3payload.NewReceiver(s3api, []string{"payloads"})
		if err != nil {
			t.Fatal(err)
		}
		var got seen
		var failed []error
		drain(t, sqsapi, q, recv, got.handle, func(o *consumer.Options) {
			o.OnFailure = consumer.ReleaseNow
			inner := o.Hooks.Failed
			o.Hooks.Failed = func(ctx context.Context, m *handler.Message, err error) {
				failed = append(failed, err)
				inner(ctx, m, err)
			}
		})
		if len(got.bodies) != 1 || got.bodies[0] != body || len(failed) != 1 || !errors.Is(failed[0], errInjected) {
			t.Errorf("expect one failure then the body, got %d bodies, failures %v", len(got.bodies), failed)
		}
	})
}

// snsNotification wraps body as SNS delivers a notification to a queue
// without raw message delivery.
func snsNotification(body string, size int) string {
	return `{"Type":"Notification","MessageId":"0b6b8c9e-1111-2222-3333-444455556666","TopicArn":"arn:aws:sns:us-east-1:000000000000:orders",` +
		`"Message":` + strconv.Quote(body) + `,"Timestamp":"2026-01-01T00:00:00.000Z","SignatureVersion":"1",` +
		`"MessageAttributes":{"ExtendedPayloadSize":{"Type":"Number","Value":"` + strconv.Itoa(size) + `"}}}`
}

// TestSNSWrappedPointer: a pointer inside an SNS notification is resolved,
// alone and behind handler.Envelopes.
func TestSNSWrappedPointer(t *testing.T) {
	for _, withEnvelopes := range []bool{false, true} {
		t.Run("envelopes="+strconv.FormatBool(withEnvelopes), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				s3api := newS3(t, nil)
				sqsapi := sqsfake.New().Client()
				q := createQueue(t, sqsapi, "orders", nil)
				body := payload(300_000, 5)
				const key = "5b7e3c1a-9d2f-4e8b-a6c0-1f2e3d4c5b6a" // a key as Senders write them: the Receiver deletes only those
				put(t, s3api, "payloads", key, body)
				wrapped := snsNotification(s3payload.Pointer{Bucket: "payloads", Key: key}.Body(), len(body))
				if _, err := sqsapi.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &q, MessageBody: &wrapped}); err != nil {
					t.Fatal(err)
				}
				recv, err := s3payload.NewReceiver(s3api, []string{"payloads"})
				if err != nil {
					t.Fatal(err)
				}
				var got seen
				drain(t, sqsapi, q, recv, got.handle, func(o *consumer.Options) {
					if withEnvelopes {
						o.Middleware = []handler.Middleware{handler.Envelopes(), recv.Middleware()}
					}
				})
				if len(got.bodies) != 1 || got.bodies[0] != body {
					t.Errorf("expect the payload, got %d bodies", len(got.bodies))
				}
				if ks := keys(t, s3api, "payloads"); len(ks) != 0 {
					t.Errorf("expect the object deleted, got %v", ks)
				}
			})
		})
	}
}

// TestLambdaAdapterResolves: the middleware resolves in handler.NewLambda,
// and leaves the object (Lambda deletes the message after the invocation).
func TestLambdaAdapterResolves(t *testing.T) {
	s3api := newS3(t, nil)
	body := payload(300_000, 6)
	put(t, s3api, "payloads", "k1", body)
	recv, err := s3payload.NewReceiver(s3api, []string{"payloads"})
	if err != nil {
		t.Fatal(err)
	}
	var got seen
	l, err := handler.NewLambda(got.handle, func(o *handler.LambdaOptions) { o.Middleware = []handler.Middleware{recv.Middleware()} })
	if err != nil {
		t.Fatal(err)
	}
	ev := handler.Event{}
	ev.Records = append(ev.Records, eventRecord("m1", s3payload.Pointer{Bucket: "payloads", Key: "k1"}.Body(), len(body)))
	resp, err := l.Handle(context.Background(), ev)
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("expect success, got %v %v", resp, err)
	}
	if len(got.bodies) != 1 || got.bodies[0] != body || len(keys(t, s3api, "payloads")) != 1 {
		t.Errorf("expect the payload and the object left, got %d bodies, %v", len(got.bodies), keys(t, s3api, "payloads"))
	}
}

// TestLambdaBadPointerFails: in Lambda a forged pointer fails its message
// alone (reported in the response; a Parker would park it), and the
// handler never sees it.
func TestLambdaBadPointerFails(t *testing.T) {
	s3api := newS3(t, nil)
	put(t, s3api, "payloads", "k1", "hello")
	recv, err := s3payload.NewReceiver(s3api, []string{"payloads"})
	if err != nil {
		t.Fatal(err)
	}
	var got seen
	l, err := handler.NewLambda(got.handle, func(o *handler.LambdaOptions) { o.Middleware = []handler.Middleware{recv.Middleware()} })
	if err != nil {
		t.Fatal(err)
	}
	ev := handler.Event{}
	ev.Records = append(ev.Records,
		eventRecord("good", s3payload.Pointer{Bucket: "payloads", Key: "k1"}.Body(), 5),
		eventRecord("forged", s3payload.Pointer{Bucket: "secrets", Key: "k1"}.Body(), 5))
	resp, err := l.Handle(context.Background(), ev)
	if err != nil || len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "forged" {
		t.Fatalf("expect only the forged message failed, got %+v, %v", resp, err)
	}
	if len(got.bodies) != 1 || got.bodies[0] != "hello" {
		t.Errorf("expect the good payload only, got %v", got.bodies)
	}
}
