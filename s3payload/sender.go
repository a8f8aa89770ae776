package s3payload

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/fifo"
)

// DefaultThreshold is the size, body and attributes together, above which a
// message is offloaded: 262,144 bytes (256 KiB), the default of the Java
// Extended Client today (SQSExtendedClientConstants.DEFAULT_MESSAGE_SIZE_THRESHOLD,
// shared with the SNS Extended Client). SQS itself takes 1 MiB since
// August 2025, but many consumers and tools still assume 256 KiB; keeping
// the Java default means a mixed fleet offloads the same messages.
const DefaultThreshold = 262144

// maxAttributes is SQS's budget of message attributes per message; an
// offloaded message spends one on SizeAttribute.
const maxAttributes = 10

// ErrConfig matches every invalid option with errors.Is.
var ErrConfig = errors.New("s3payload: invalid options")

// ErrInvalid matches a message that cannot be offloaded as it is: it
// carries a size attribute already, or has no room for one (ten attributes).
// Nothing was put in S3 or sent.
var ErrInvalid = errors.New("s3payload: message cannot be offloaded")

// OffloadError is the failure of an S3 put: nothing was sent.
type OffloadError struct {
	Pointer
	Err error
}

func (e *OffloadError) Error() string {
	return fmt.Sprintf("s3payload: put s3://%s/%s: %v", e.Bucket, e.Key, e.Err)
}

func (e *OffloadError) Unwrap() error { return e.Err }

// SenderOptions configure a Sender. Zero values mean the defaults.
type SenderOptions struct {
	// KeyPrefix starts every object's key (the key is KeyPrefix and a random
	// UUID, as the Java client writes): "payloads/", say. Up to 988 bytes
	// of [A-Za-z0-9./_-], the Java client's rule, without a "." or ".."
	// path segment (Receivers refuse those keys). Default "". Sweep and
	// ReceiverOptions.KeyPrefix take the same prefix (Sweep refuses "" but
	// with SweepOptions.WholeBucket).
	KeyPrefix string
	// Threshold is the size in bytes (body and attributes, as the Java
	// client counts them) above which a message is offloaded, 1 to 1 MiB.
	// Default DefaultThreshold.
	Threshold int
	// AlwaysThroughS3 offloads every message, whatever its size. Default
	// false.
	AlwaysThroughS3 bool
	// LegacyAttribute writes the size under LegacySizeAttribute
	// ("SQSLargePayloadSize") instead of SizeAttribute, for consumers on
	// the Java client's version 1. Default false.
	LegacyAttribute bool
	// ServerSideEncryption and SSEKMSKeyID pass through to PutObject
	// (aws:kms with a key id, say). Default: the bucket's own encryption.
	ServerSideEncryption s3types.ServerSideEncryption
	SSEKMSKeyID          string
	// Tags are set on every object (PutObject's Tagging): a lifecycle rule
	// can expire objects by tag. Default none.
	Tags map[string]string
	// Concurrency bounds the puts one SendBatch keeps in flight. Default
	// 10, the SQS sends it keeps in flight; negative is an error.
	Concurrency int
	// Rand is the source of the keys' random UUIDs. Default crypto/rand.
	Rand io.Reader
}

var prefixChars = regexp.MustCompile(`^[A-Za-z0-9./_-]*$`)

// Sender offloads large messages to S3 and sends the rest of each through
// a fifo.Sender, whose batching, ordering, retries and validation stay as
// they are: the Sender only swaps a large body for a pointer before the
// fifo.Sender sees it. It is safe for concurrent use.
type Sender struct {
	api    API
	sender *fifo.Sender
	bucket string
	o      SenderOptions
	tags   string
	mu     sync.Mutex // guards o.Rand
}

// NewSender returns a Sender that puts payloads in bucket through api and
// sends through sender. Invalid options return an error matching ErrConfig;
// a nil option function is skipped.
func NewSender(api API, sender *fifo.Sender, bucket string, optFns ...func(*SenderOptions)) (*Sender, error) {
	var o SenderOptions
	for _, fn := range optFns {
		if fn != nil {
			fn(&o)
		}
	}
	switch {
	case api == nil || sender == nil:
		return nil, fmt.Errorf("%w: nil S3 client or sender", ErrConfig)
	case bucket == "":
		return nil, fmt.Errorf("%w: no bucket", ErrConfig)
	case len(o.KeyPrefix) > 988 || !prefixChars.MatchString(o.KeyPrefix):
		return nil, fmt.Errorf("%w: KeyPrefix %q: up to 988 bytes of [A-Za-z0-9./_-]", ErrConfig, o.KeyPrefix)
	case validKey(o.KeyPrefix+"00000000-0000-4000-8000-000000000000", o.KeyPrefix) != nil:
		// Receivers refuse such keys as traversals: every message would fail.
		return nil, fmt.Errorf("%w: KeyPrefix %q: a \".\" or \"..\" path segment", ErrConfig, o.KeyPrefix)
	case o.Threshold < 0 || o.Threshold > 1<<20:
		return nil, fmt.Errorf("%w: Threshold %d: 1 to 1 MiB", ErrConfig, o.Threshold)
	case o.Concurrency < 0:
		return nil, fmt.Errorf("%w: Concurrency %d is negative", ErrConfig, o.Concurrency)
	}
	if o.Threshold == 0 {
		o.Threshold = DefaultThreshold
	}
	if o.Concurrency == 0 {
		o.Concurrency = 10
	}
	if o.Rand == nil {
		o.Rand = rand.Reader
	}
	s := &Sender{api: api, sender: sender, bucket: bucket, o: o}
	if len(o.Tags) > 0 {
		v := url.Values{}
		for k, t := range o.Tags {
			v.Set(k, t)
		}
		s.tags = v.Encode()
	}
	return s, nil
}

// Send offloads m if it is large and sends it; the error is the Result's
// Err. See SendBatch.
func (s *Sender) Send(ctx context.Context, m fifo.Message) (fifo.Result, error) {
	r := s.SendBatch(ctx, []fifo.Message{m})[0]
	return r.Result, r.Err
}

// Result is a fifo.Result with the pointer a message was sent as.
type Result struct {
	fifo.Result
	// Pointer is where the payload went; nil when it was sent inline.
	Pointer *Pointer
}

// SendBatch puts the payloads of msgs' large messages in S3 (up to
// Concurrency at once), then sends every message with the fifo.Sender's
// SendBatch, and returns one Result per message, in order.
//
// An object is in S3 before its pointer is sent, so a crash between the two
// leaves an orphan object, never a pointer without its payload. When a
// send certainly stored nothing (no call carried the message, or SQS
// refused its entry in a batch's answer) the object is deleted again;
// when SQS may have stored it (Unconfirmed > 0, or a call that failed as a
// whole, as the SDK may have retried inside it) it stays, for the consumer
// or Sweep. A message whose put fails is not sent (its Err is
// an OffloadError), and the later messages of its group (GroupID) fail
// with a fifo.GroupBlockedError, as the fifo.Sender does, so a group's
// order holds.
//
// SQS sees the pointer, not the payload, and each object's key is random:
// on a FIFO queue, deduplicate with fifo.KeyDedup or your own
// DeduplicationID, since content-based deduplication (fifo.ContentDedup,
// or the queue's ContentBasedDeduplication) would only catch retries of
// one call.
func (s *Sender) SendBatch(ctx context.Context, msgs []fifo.Message) []Result {
	results := make([]Result, len(msgs))
	out := make([]fifo.Message, len(msgs))
	errs := make([]error, len(msgs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, s.o.Concurrency)
	for i, m := range msgs {
		if !s.large(m) {
			out[i] = m
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			out[i], results[i].Pointer, errs[i] = s.offload(ctx, m)
		}()
	}
	wg.Wait()

	var send []fifo.Message
	var index []int
	var discard []Pointer
	blocked := map[string]int{}
	for i, m := range msgs {
		if errs[i] != nil {
			results[i].Err = errs[i]
			if _, ok := blocked[m.GroupID]; !ok && m.GroupID != "" {
				blocked[m.GroupID] = i
			}
			continue
		}
		if j, ok := blocked[m.GroupID]; ok && m.GroupID != "" {
			results[i].Err = &fifo.GroupBlockedError{GroupID: m.GroupID, Index: j, Cause: errs[j]}
			if p := results[i].Pointer; p != nil {
				discard = append(discard, *p)
			}
			continue
		}
		send = append(send, out[i])
		index = append(index, i)
	}
	if len(send) > 0 {
		for k, r := range s.sender.SendBatch(ctx, send) {
			i := index[k]
			results[i].Result = r
			if p := results[i].Pointer; p != nil && r.Err != nil && notStored(r) {
				discard = append(discard, *p)
			}
		}
	}
	s.discard(ctx, discard)
	return results
}

// notStored reports whether the failed send r certainly left nothing on
// the queue, so its object can go: no call carried it, or one call did and
// SQS refused this entry in its answer (a call that succeeds reports the
// SDK's own retries, which Unconfirmed counts). A call that failed as a
// whole does not: the SDK may have retried inside it, after a request that
// stored the message and lost its answer, and its error is only the last
// request's — a client error says nothing of the earlier ones. Such an
// object stays, for the consumer or Sweep.
func notStored(r fifo.Result) bool {
	if r.Unconfirmed > 0 {
		return false
	}
	var entry *fifo.EntryError
	return r.Attempts == 0 || r.Attempts == 1 && errors.As(r.Err, &entry)
}

// Offload puts m's payload in S3 when it is large (or always, with
// AlwaysThroughS3) and returns the message to send in its place, with the
// pointer body and the size attribute, and the pointer; a small message
// comes back as it is, with a nil pointer. Use it to send through a
// fifo.Batcher or to publish to SNS; the object is then the caller's to
// delete if the send fails.
func (s *Sender) Offload(ctx context.Context, m fifo.Message) (fifo.Message, *Pointer, error) {
	if !s.large(m) {
		return m, nil, nil
	}
	return s.offload(ctx, m)
}

func (s *Sender) large(m fifo.Message) bool {
	if s.o.AlwaysThroughS3 {
		return true
	}
	n := len(m.Body)
	for name, v := range m.Attributes {
		n += len(name) + len(aws.ToString(v.DataType)) + len(aws.ToString(v.StringValue)) + len(v.BinaryValue)
	}
	return n > s.o.Threshold
}

func (s *Sender) offload(ctx context.Context, m fifo.Message) (fifo.Message, *Pointer, error) {
	if _, ok := m.Attributes[SizeAttribute]; ok {
		return m, nil, fmt.Errorf("%w: it carries %s already", ErrInvalid, SizeAttribute)
	}
	if _, ok := m.Attributes[LegacySizeAttribute]; ok {
		return m, nil, fmt.Errorf("%w: it carries %s already", ErrInvalid, LegacySizeAttribute)
	}
	if len(m.Attributes) >= maxAttributes {
		return m, nil, fmt.Errorf("%w: %d attributes leave no room for %s (SQS allows %d)", ErrInvalid, len(m.Attributes), SizeAttribute, maxAttributes)
	}
	key, err := s.newKey()
	if err != nil {
		return m, nil, &OffloadError{Pointer: Pointer{Bucket: s.bucket}, Err: err}
	}
	p := Pointer{Bucket: s.bucket, Key: key}
	in := &s3.PutObjectInput{
		Bucket:        aws.String(p.Bucket),
		Key:           aws.String(p.Key),
		Body:          bytes.NewReader([]byte(m.Body)),
		ContentLength: aws.Int64(int64(len(m.Body))),
	}
	if s.o.ServerSideEncryption != "" {
		in.ServerSideEncryption = s.o.ServerSideEncryption
	}
	if s.o.SSEKMSKeyID != "" {
		in.SSEKMSKeyId = aws.String(s.o.SSEKMSKeyID)
	}
	if s.tags != "" {
		in.Tagging = aws.String(s.tags)
	}
	if _, err := s.api.PutObject(ctx, in); err != nil {
		return m, nil, &OffloadError{Pointer: p, Err: err}
	}
	name := SizeAttribute
	if s.o.LegacyAttribute {
		name = LegacySizeAttribute
	}
	attrs := make(map[string]types.MessageAttributeValue, len(m.Attributes)+1)
	for k, v := range m.Attributes {
		attrs[k] = v
	}
	attrs[name] = types.MessageAttributeValue{DataType: aws.String("Number"), StringValue: aws.String(strconv.Itoa(len(m.Body)))}
	m.Body, m.Attributes = p.Body(), attrs
	return m, &p, nil
}

// newKey returns KeyPrefix and a random (version 4) UUID.
func (s *Sender) newKey() (string, error) {
	var u [16]byte
	s.mu.Lock()
	_, err := io.ReadFull(s.o.Rand, u[:])
	s.mu.Unlock()
	if err != nil {
		return "", fmt.Errorf("random key: %w", err)
	}
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%s%x-%x-%x-%x-%x", s.o.KeyPrefix, u[0:4], u[4:6], u[6:8], u[8:10], u[10:]), nil
}

// discard deletes the objects of messages certainly not sent, on a ctx
// that outlives the caller's cancellation by up to 10 s; what it cannot
// delete is left to Sweep.
func (s *Sender) discard(ctx context.Context, ps []Pointer) {
	if len(ps) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_, _ = deleteObjects(ctx, s.api, ps)
}

// deleteObjects deletes ps with one DeleteObjects call per bucket and
// thousand keys, and returns how many were deleted and the first error.
func deleteObjects(ctx context.Context, api API, ps []Pointer) (int, error) {
	byBucket := map[string][]s3types.ObjectIdentifier{}
	for _, p := range ps {
		byBucket[p.Bucket] = append(byBucket[p.Bucket], s3types.ObjectIdentifier{Key: aws.String(p.Key)})
	}
	deleted := 0
	var first error
	for _, bucket := range slices.Sorted(maps.Keys(byBucket)) {
		ids := byBucket[bucket]
		for chunk := range slices.Chunk(ids, 1000) {
			out, err := api.DeleteObjects(ctx, &s3.DeleteObjectsInput{
				Bucket: aws.String(bucket),
				Delete: &s3types.Delete{Objects: chunk, Quiet: aws.Bool(true)},
			})
			if err != nil {
				if first == nil {
					first = fmt.Errorf("delete objects: %w", err)
				}
				continue
			}
			deleted += len(chunk) - len(out.Errors)
			if len(out.Errors) > 0 && first == nil {
				e := out.Errors[0]
				first = fmt.Errorf("delete s3://%s/%s: %s: %s", bucket, aws.ToString(e.Key), aws.ToString(e.Code), aws.ToString(e.Message))
			}
		}
	}
	return deleted, first
}
