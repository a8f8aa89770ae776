package s3payload_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/fifo"
	"github.com/sqskit/sqskit/s3payload"
	"github.com/sqskit/sqskit/sqsfake"
)

// recordingS3 keeps the PutObject inputs.
type recordingS3 struct {
	s3payload.API
	mu   sync.Mutex
	puts []*s3.PutObjectInput
}

func (r *recordingS3) PutObject(ctx context.Context, in *s3.PutObjectInput, o ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	r.mu.Lock()
	r.puts = append(r.puts, in)
	r.mu.Unlock()
	return r.API.PutObject(ctx, in, o...)
}

func receiveAll(t *testing.T, api *sqs.Client, q string) []types.Message {
	t.Helper()
	out, err := api.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: &q, MaxNumberOfMessages: 10, MessageAttributeNames: []string{"All"}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Messages
}

// TestThreshold: a message offloads when its body and attributes together
// pass Threshold, as the Java client counts them; AlwaysThroughS3 offloads
// everything.
func TestThreshold(t *testing.T) {
	attrs := map[string]types.MessageAttributeValue{"k": {DataType: aws.String("String"), StringValue: aws.String("v")}} // 1+6+1 = 8 bytes
	cases := []struct {
		name    string
		body    int
		attrs   map[string]types.MessageAttributeValue
		always  bool
		offload bool
	}{
		{"at-threshold", 1000, nil, false, false},
		{"over-threshold", 1001, nil, false, true},
		{"attributes-count", 993, attrs, false, true},
		{"attributes-at-threshold", 992, attrs, false, false},
		{"always", 1, nil, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			api := newFaultyS3(newS3(t, nil), 0)
			sqsapi := sqsfake.New().Client()
			q := createQueue(t, sqsapi, "q", nil)
			s := newSender(t, api, sqsapi, q, func(o *s3payload.SenderOptions) { o.Threshold = 1000; o.AlwaysThroughS3 = tc.always })
			r := s.SendBatch(context.Background(), []fifo.Message{{Body: payload(tc.body, 0), Attributes: tc.attrs}})[0]
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			if got := r.Pointer != nil; got != tc.offload || (api.Calls("PutObject") == 1) != tc.offload {
				t.Errorf("expect offloaded %v, got %v (%d puts)", tc.offload, got, api.Calls("PutObject"))
			}
		})
	}
}

// TestLegacyAttributeAndPassThrough: LegacyAttribute writes the legacy
// name instead; SSE settings and tags reach PutObject; user attributes
// travel with the pointer.
func TestLegacyAttributeAndPassThrough(t *testing.T) {
	api := &recordingS3{API: newS3(t, nil)}
	sqsapi := sqsfake.New().Client()
	q := createQueue(t, sqsapi, "q", nil)
	s := newSender(t, api, sqsapi, q, func(o *s3payload.SenderOptions) {
		o.AlwaysThroughS3, o.LegacyAttribute = true, true
		o.ServerSideEncryption, o.SSEKMSKeyID = s3types.ServerSideEncryptionAwsKms, "alias/payloads"
		o.Tags = map[string]string{"kind": "sqs payload"}
	})
	if _, err := s.Send(context.Background(), fifo.Message{Body: "hello", Attributes: map[string]types.MessageAttributeValue{"type": {DataType: aws.String("String"), StringValue: aws.String("order")}}}); err != nil {
		t.Fatal(err)
	}
	in := api.puts[0]
	if in.ServerSideEncryption != s3types.ServerSideEncryptionAwsKms || aws.ToString(in.SSEKMSKeyId) != "alias/payloads" || aws.ToString(in.Tagging) != "kind=sqs+payload" {
		t.Errorf("expect SSE and tags passed through, got %v %v %v", in.ServerSideEncryption, aws.ToString(in.SSEKMSKeyId), aws.ToString(in.Tagging))
	}
	m := receiveAll(t, sqsapi, q)[0]
	if v := m.MessageAttributes[s3payload.LegacySizeAttribute]; aws.ToString(v.StringValue) != "5" || len(m.MessageAttributes) != 2 {
		t.Errorf("expect SQSLargePayloadSize=5 and the user's attribute, got %v", m.MessageAttributes)
	}
}

// TestAttributeBudget: a large message with ten attributes, or one that
// carries a size attribute already, fails with ErrInvalid before any S3
// or SQS call.
func TestAttributeBudget(t *testing.T) {
	ten := map[string]types.MessageAttributeValue{}
	for i := range 10 {
		ten[fmt.Sprintf("a%d", i)] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("v")}
	}
	reserved := map[string]types.MessageAttributeValue{s3payload.SizeAttribute: {DataType: aws.String("Number"), StringValue: aws.String("1")}}
	for name, attrs := range map[string]map[string]types.MessageAttributeValue{"ten": ten, "reserved": reserved} {
		t.Run(name, func(t *testing.T) {
			api := newFaultyS3(newS3(t, nil), 0)
			srv := sqsfake.New()
			sqsapi := srv.Client()
			q := createQueue(t, sqsapi, "q", nil)
			srv.ResetCalls()
			s := newSender(t, api, sqsapi, q, func(o *s3payload.SenderOptions) { o.AlwaysThroughS3 = true })
			_, err := s.Send(context.Background(), fifo.Message{Body: "x", Attributes: attrs})
			if !errors.Is(err, s3payload.ErrInvalid) || api.Calls("PutObject") != 0 || len(receiveAll(t, sqsapi, q)) != 0 {
				t.Errorf("expect ErrInvalid and no call, got %v, %d puts", err, api.Calls("PutObject"))
			}
		})
	}
}

// TestFailedSendDiscardsObject: a send SQS certainly refused (its entry,
// in the answer) leaves no object; one whose answer was lost (it may be
// stored) keeps its object, and so does one whose call was refused as a
// whole (the SDK may have retried inside it; see
// TestSendFailedAfterSDKRetryKeepsObject).
func TestFailedSendDiscardsObject(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault sqsfake.Fault
		want  int
	}{
		{"entry-refused", sqsfake.Fault{Op: "SendMessageBatch", Entries: &sqsfake.EntryFault{Code: "InvalidMessageContents", SenderFault: true}}, 0},
		{"call-refused", sqsfake.Fault{Op: "SendMessageBatch", Err: &types.InvalidMessageContents{Message: aws.String("refused")}}, 1},
		{"lost", sqsfake.Fault{Op: "SendMessageBatch", AfterApply: true}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := newS3(t, nil)
			srv := sqsfake.New()
			sqsapi := srv.Client()
			q := createQueue(t, sqsapi, "q", nil)
			srv.Inject(tc.fault)
			s := newSender(t, api, sqsapi, q, func(o *s3payload.SenderOptions) { o.AlwaysThroughS3 = true })
			_, err := s.Send(context.Background(), fifo.Message{Body: "hello"})
			if err == nil {
				t.Fatal("expect the send to fail")
			}
			want := tc.want
			if ks := keys(t, api, "payloads"); len(ks) != want {
				t.Errorf("expect %d objects, got %v", want, ks)
			}
		})
	}
}

// TestPutFailureBlocksGroup: a failed put sends nothing for that message,
// and the later messages of its group fail with GroupBlockedError while
// other groups go on.
func TestPutFailureBlocksGroup(t *testing.T) {
	api := newFaultyS3(newS3(t, nil), 0)
	sqsapi := sqsfake.New().Client()
	q := createQueue(t, sqsapi, "q.fifo", map[string]string{"FifoQueue": "true"})
	s := newSender(t, api, sqsapi, q, func(o *s3payload.SenderOptions) { o.Threshold = 10; o.Concurrency = 1 })
	api.failNext("PutObject", 1)
	rs := s.SendBatch(context.Background(), []fifo.Message{
		{Body: payload(20, 1), GroupID: "a"}, {Body: "small", GroupID: "a"}, {Body: payload(20, 2), GroupID: "b"},
	})
	var oe *s3payload.OffloadError
	var gb *fifo.GroupBlockedError
	if !errors.As(rs[0].Err, &oe) || !errors.Is(rs[0].Err, errInjected) || !errors.As(rs[1].Err, &gb) || rs[2].Err != nil {
		t.Errorf("expect put failure, group blocked, sent; got %v, %v, %v", rs[0].Err, rs[1].Err, rs[2].Err)
	}
}

// TestNewSenderOptions: invalid options match ErrConfig.
func TestNewSenderOptions(t *testing.T) {
	sqsapi := sqsfake.New().Client()
	fs, err := fifo.NewSender(sqsapi, "https://sqs.us-east-1.amazonaws.com/000000000000/q")
	if err != nil {
		t.Fatal(err)
	}
	api := newS3(t, nil)
	for name, tc := range map[string]struct {
		bucket string
		fn     func(*s3payload.SenderOptions)
	}{
		"no-bucket":        {"", nil},
		"prefix-chars":     {"b", func(o *s3payload.SenderOptions) { o.KeyPrefix = "a b" }},
		"threshold-high":   {"b", func(o *s3payload.SenderOptions) { o.Threshold = 1<<20 + 1 }},
		"negative-threads": {"b", func(o *s3payload.SenderOptions) { o.Concurrency = -1 }},
	} {
		if _, err := s3payload.NewSender(api, fs, tc.bucket, tc.fn); !errors.Is(err, s3payload.ErrConfig) {
			t.Errorf("%s: expect ErrConfig, got %v", name, err)
		}
	}
	if _, err := s3payload.NewReceiver(api, nil); !errors.Is(err, s3payload.ErrConfig) {
		t.Errorf("receiver without buckets: expect ErrConfig, got %v", err)
	}
}
