package s3payload

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/sqskit/sqskit/consumer"
	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/replay"
)

// ReceiverOptions configure a Receiver. Zero values mean the defaults.
type ReceiverOptions struct {
	// KeyPrefix: a pointer's key must start with it (and have more after
	// it), else the message fails with ReasonKey. Default "": any key.
	KeyPrefix string
	// MaxPayloadBytes bounds a payload read into memory: a message whose
	// size attribute says more fails with ReasonTooLarge before any S3
	// call. 1 byte to 2 GiB (the Java client's limit). Default 64 MiB.
	MaxPayloadBytes int64
	// Only objects whose key ends with a UUID, as Senders write them, are
	// ever deleted; a pointer to any other key is read, and its object
	// left in place.
	//
	// KeepObjects leaves objects in S3 after their message was deleted:
	// for SNS fan-out, where several queues' messages point to one object
	// (Sweep or a lifecycle rule removes them). Default false: deleted once
	// SQS confirmed the message's delete.
	KeepObjects bool
	// MaxPending bounds the objects waiting for their message's delete,
	// and those waiting for Run to delete them; past it, some are
	// left to Sweep (counted in ReceiverStats.Dropped). Default 10,000, at
	// most 1,048,576 (its queue is made at once).
	MaxPending int
	// DeleteConcurrency bounds the DeleteObjects calls Run keeps in flight,
	// each of up to 1,000 keys. Default 4.
	DeleteConcurrency int
	// Logger receives failed deletes, never bodies. Default silent.
	Logger *slog.Logger
}

// maxPending bounds ReceiverOptions.MaxPending: the queue of deletions is
// made at its size (about 32 MiB at this bound).
const maxPending = 1 << 20

// ReceiverStats counts a Receiver's work since it was made.
type ReceiverStats struct {
	// Resolved: payloads read from S3 and handed to the handler.
	Resolved int64
	// Deleted: objects deleted after their message's delete; DeleteFailed:
	// deletes S3 refused (left to Sweep); Dropped: objects left to Sweep
	// because MaxPending was reached (no Run going, or one too slow, or
	// the consumer's hook signals lost). Objects queued while no Run is
	// going are not counted until the queue is full.
	Deleted, DeleteFailed, Dropped int64
}

// Receiver resolves pointers for handlers (Middleware) and deletes each
// object once the consumer confirmed its message's delete (Hooks, Run).
// It is safe for concurrent use.
type Receiver struct {
	api     API
	buckets map[string]bool
	o       ReceiverOptions
	log     *slog.Logger

	hooked atomic.Bool
	mu     sync.Mutex         // protects handed
	handed map[string]Pointer // message id → object, after its handler succeeded
	queue  chan Pointer       // objects whose message SQS deleted
	stats  struct{ resolved, deleted, deleteFailed, dropped atomic.Int64 }
}

// NewReceiver returns a Receiver that reads payloads through api from
// buckets only: a pointer to any other bucket fails with ReasonBucket, so a
// message cannot choose what the consumer reads. Invalid options return an
// error matching ErrConfig; a nil option function is skipped.
func NewReceiver(api API, buckets []string, optFns ...func(*ReceiverOptions)) (*Receiver, error) {
	var o ReceiverOptions
	for _, fn := range optFns {
		if fn != nil {
			fn(&o)
		}
	}
	switch {
	case api == nil:
		return nil, fmt.Errorf("%w: nil S3 client", ErrConfig)
	case len(buckets) == 0 || slices.Contains(buckets, ""):
		return nil, fmt.Errorf("%w: no bucket allowed", ErrConfig)
	case o.MaxPayloadBytes < 0 || o.MaxPayloadBytes > 2<<30:
		return nil, fmt.Errorf("%w: MaxPayloadBytes %d: 1 to 2 GiB", ErrConfig, o.MaxPayloadBytes)
	case o.MaxPending < 0 || o.DeleteConcurrency < 0:
		return nil, fmt.Errorf("%w: negative MaxPending or DeleteConcurrency", ErrConfig)
	case o.MaxPending > maxPending:
		return nil, fmt.Errorf("%w: MaxPending %d: at most %d", ErrConfig, o.MaxPending, maxPending)
	}
	if o.MaxPayloadBytes == 0 {
		o.MaxPayloadBytes = 64 << 20
	}
	if o.MaxPending == 0 {
		o.MaxPending = 10000
	}
	if o.DeleteConcurrency == 0 {
		o.DeleteConcurrency = 4
	}
	r := &Receiver{api: api, buckets: map[string]bool{}, o: o, log: o.Logger,
		handed: map[string]Pointer{}, queue: make(chan Pointer, o.MaxPending)}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	for _, b := range buckets {
		r.buckets[b] = true
	}
	return r, nil
}

// Stats returns the counters.
func (r *Receiver) Stats() ReceiverStats {
	return ReceiverStats{Resolved: r.stats.resolved.Load(), Deleted: r.stats.deleted.Load(),
		DeleteFailed: r.stats.deleteFailed.Load(), Dropped: r.stats.dropped.Load()}
}

// Middleware returns handler middleware that replaces an offloaded
// message's body by its payload before the next handler runs: a message
// carrying SizeAttribute or LegacySizeAttribute (as the Java client marks
// them; or moved into package replay's metadata by a replay that needed
// the room) is a pointer, directly or inside an SNS notification (unwrapped as
// handler.UnwrapEnvelope does). The handler gets a copy with the payload
// as Body and the size attribute removed; the received message, which the
// runtime parks or hooks report, keeps its pointer. Any other message
// passes through untouched.
//
// A bad pointer fails at once, permanently (handler.Escalate with a Reason
// constant and a *PointerError): not a pointer body or size, a bucket not
// allowed, a key outside KeyPrefix, no such object, a size over
// MaxPayloadBytes, an object whose size is not the declared one. Other S3
// errors are ordinary failures, retried. Works in consumer.Options.Middleware
// and handler.LambdaOptions.Middleware.
func (r *Receiver) Middleware() handler.Middleware {
	return func(next handler.Handler) handler.Handler {
		return func(ctx context.Context, m *handler.Message) error {
			cp, p, err := r.open(ctx, m)
			if err != nil {
				return err
			}
			if p == nil {
				return next(ctx, m) // not ours: Envelopes or the handler decide
			}
			if err := next(ctx, cp); err != nil {
				return err
			}
			r.handedOver(m.ID, *p)
			return nil
		}
	}
}

// batchReads bounds the pointers BatchMiddleware resolves at once: a
// Lambda batch can hold 10,000 messages.
const batchReads = 16

// BatchMiddleware is Middleware for consumer.NewBatch and
// handler.NewBatchLambda: the batch's pointers are resolved, 16 at a time,
// the messages whose pointer is bad fail (each with its own outcome) and
// the others reach the BatchHandler, with their payloads, in order. The
// handler gets copies of offloaded messages, so handler.MessageContext
// gives their call's ctx.
func (r *Receiver) BatchMiddleware() handler.BatchMiddleware {
	return func(next handler.BatchHandler) handler.BatchHandler {
		return func(ctx context.Context, msgs []*handler.Message) []error {
			results := make([]error, len(msgs))
			opened := make([]*handler.Message, len(msgs))
			ptrs := make([]*Pointer, len(msgs))
			var wg sync.WaitGroup
			sem := make(chan struct{}, batchReads)
			for i, m := range msgs {
				sem <- struct{}{}
				wg.Go(func() {
					defer func() { <-sem }()
					opened[i], ptrs[i], results[i] = r.open(ctx, m)
				})
			}
			wg.Wait()
			var pass []*handler.Message
			var index []int
			for i, m := range msgs {
				if results[i] != nil {
					continue
				}
				if ptrs[i] == nil {
					opened[i] = m
				}
				pass = append(pass, opened[i])
				index = append(index, i)
			}
			if len(pass) == 0 {
				return results
			}
			rs := next(ctx, pass)
			for k, i := range index {
				if k >= len(rs) {
					results[i] = handler.ErrNoResult
					continue
				}
				results[i] = rs[k]
				if rs[k] == nil && ptrs[i] != nil {
					r.handedOver(msgs[i].ID, *ptrs[i])
				}
			}
			return results
		}
	}
}

// open resolves m: a copy with the payload as Body and the pointer, or a
// nil pointer for a message that is not offloaded, or the outcome of a bad
// pointer (an Escalate) or of an S3 failure (retried).
func (r *Receiver) open(ctx context.Context, m *handler.Message) (*handler.Message, *Pointer, error) {
	cp := *m
	cp.MessageAttributes = maps.Clone(m.MessageAttributes)
	size, ok, err := sizeOf(cp.MessageAttributes)
	if !ok && err == nil {
		if v, moved := movedSize(cp.MessageAttributes); moved {
			cp.MessageAttributes[SizeAttribute] = v
			size, ok, err = sizeOf(cp.MessageAttributes)
		}
	}
	if !ok && err == nil {
		env, uerr := handler.UnwrapEnvelope(&cp)
		if uerr != nil || env == nil || env.Kind != handler.EnvelopeSNS {
			return nil, nil, nil
		}
		if size, ok, err = sizeOf(cp.MessageAttributes); !ok && err == nil {
			return nil, nil, nil
		}
	}
	if err != nil {
		return nil, nil, handler.Escalate(ReasonMalformed, err)
	}
	p, body, err := r.resolve(ctx, cp.Body, size)
	if err != nil {
		var pe *PointerError
		if errors.As(err, &pe) {
			return nil, nil, handler.Escalate(pe.Reason, err)
		}
		return nil, nil, err
	}
	r.stats.resolved.Add(1)
	cp.Body = body
	delete(cp.MessageAttributes, SizeAttribute)
	delete(cp.MessageAttributes, LegacySizeAttribute)
	return &cp, &p, nil
}

// handedOver records that the handler of message id succeeded, so its
// object goes once SQS confirms the delete (with Hooks, and without
// KeepObjects).
func (r *Receiver) handedOver(id string, p Pointer) {
	if !r.hooked.Load() || r.o.KeepObjects || !senderKey(p.Key, r.o.KeyPrefix) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.handed) >= r.o.MaxPending {
		// Full: the consumer dropped hook signals (its hook queue
		// overflowed) or deletes are stuck. Forget one entry, leaving its
		// object to Sweep, so newer messages' objects are still deleted.
		for id := range r.handed {
			delete(r.handed, id)
			r.stats.dropped.Add(1)
			break
		}
	}
	r.handed[id] = p
}

// senderKey reports whether key is one a Sender writes (ours, the Java or
// the Python client): under prefix, ending with a UUID (the Sender's own
// prefix may be longer than the Receiver's). Only such objects are deleted
// after their message: a pointer may name any object the Receiver may
// read, and reading it is not a licence to delete it.
func senderKey(key, prefix string) bool {
	if !strings.HasPrefix(key, prefix) || len(key)-len(prefix) < 36 {
		return false
	}
	for i, c := range []byte(key[len(key)-36:]) {
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return false
			}
		case !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'):
			return false
		}
	}
	return true
}

// movedSize returns the size attribute that package replay, before it kept
// the size attributes in place, moved into its metadata attribute to make
// room for its own (a message with ten attributes), as replay.Restore gives
// it back; such messages may still wait in a DLQ. The metadata is as
// untrusted as the attribute itself, and is checked the same way.
func movedSize(attrs map[string]handler.AttributeValue) (handler.AttributeValue, bool) {
	if _, ok := attrs[replay.MetadataAttribute]; !ok {
		return handler.AttributeValue{}, false
	}
	restored := replay.Restore(consumer.SDKAttributes(attrs), replay.DefaultCounterAttribute)
	for _, name := range []string{SizeAttribute, LegacySizeAttribute} {
		if v, ok := restored[name]; ok {
			return handler.AttributeValue{DataType: aws.ToString(v.DataType), StringValue: aws.ToString(v.StringValue), BinaryValue: v.BinaryValue}, true
		}
	}
	return handler.AttributeValue{}, false
}

// resolve checks a pointer body against the options and reads its payload.
func (r *Receiver) resolve(ctx context.Context, body string, size int64) (Pointer, string, error) {
	p, err := ParsePointer(body)
	if err != nil {
		return p, "", err
	}
	if !r.buckets[p.Bucket] {
		return p, "", &PointerError{Reason: ReasonBucket, Pointer: p}
	}
	if err := validKey(p.Key, r.o.KeyPrefix); err != nil {
		return p, "", &PointerError{Reason: ReasonKey, Pointer: p, Err: err}
	}
	if size > r.o.MaxPayloadBytes {
		return p, "", &PointerError{Reason: ReasonTooLarge, Pointer: p, Err: fmt.Errorf("%d bytes declared, at most %d", size, r.o.MaxPayloadBytes)}
	}
	out, err := r.api.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(p.Bucket), Key: aws.String(p.Key)})
	if err != nil {
		var nk *s3types.NoSuchKey
		var nb *s3types.NoSuchBucket
		if errors.As(err, &nk) || errors.As(err, &nb) {
			return p, "", &PointerError{Reason: ReasonMissing, Pointer: p, Err: err}
		}
		return p, "", fmt.Errorf("s3payload: get s3://%s/%s: %w", p.Bucket, p.Key, err)
	}
	defer out.Body.Close()
	if n := aws.ToInt64(out.ContentLength); out.ContentLength != nil && n != size {
		return p, "", &PointerError{Reason: ReasonSizeMismatch, Pointer: p, Err: fmt.Errorf("object has %d bytes, message says %d", n, size)}
	}
	// One buffer of the declared size (and a byte to spot a longer
	// object), which becomes the body without a copy: io.ReadAll's doubling
	// and a string conversion held about three times the payload.
	var b strings.Builder
	if n := size + 1; int64(int(n)) == n { // not on 32-bit platforms past 2 GiB
		b.Grow(int(n))
	}
	if _, err := io.Copy(&b, io.LimitReader(out.Body, size+1)); err != nil {
		return p, "", fmt.Errorf("s3payload: read s3://%s/%s: %w", p.Bucket, p.Key, err)
	}
	if int64(b.Len()) != size {
		return p, "", &PointerError{Reason: ReasonSizeMismatch, Pointer: p, Err: fmt.Errorf("object has %d bytes or more, message says %d", b.Len(), size)}
	}
	return p, b.String(), nil
}

// Hooks returns next with the Receiver's own calls added (next's run
// first): Deleted queues the object of a message whose handler succeeded
// for Run to delete, now that SQS confirmed the message's delete; the
// other outcomes (DeleteFailed, LeaseLost, Failed, Held) forget it, since
// the message will be delivered again, and so does Parked, as the
// parking queue has its pointer. Set the result as consumer.Options.Hooks.
// Without it (in Lambda, say) no object is ever deleted: Sweep or an S3
// lifecycle rule removes them.
func (r *Receiver) Hooks(next consumer.Hooks) consumer.Hooks {
	r.hooked.Store(true)
	h := next
	h.Deleted = func(ctx context.Context, m *handler.Message) {
		if next.Deleted != nil {
			next.Deleted(ctx, m)
		}
		if p, ok := r.take(m.ID); ok {
			select {
			case r.queue <- p:
			default:
				r.stats.dropped.Add(1)
			}
		}
	}
	h.DeleteFailed = func(ctx context.Context, m *handler.Message, err error) {
		if next.DeleteFailed != nil {
			next.DeleteFailed(ctx, m, err)
		}
		r.take(m.ID)
	}
	h.LeaseLost = func(ctx context.Context, m *handler.Message, err error) {
		if next.LeaseLost != nil {
			next.LeaseLost(ctx, m, err)
		}
		r.take(m.ID)
	}
	h.Failed = func(ctx context.Context, m *handler.Message, err error) {
		if next.Failed != nil {
			next.Failed(ctx, m, err)
		}
		r.take(m.ID)
	}
	// A middleware outside the Receiver's can still escalate or hold a
	// message whose handler succeeded: its pointer is then parked, or
	// comes back, and no Deleted follows.
	h.Parked = func(ctx context.Context, m *handler.Message, reason string) {
		if next.Parked != nil {
			next.Parked(ctx, m, reason)
		}
		r.take(m.ID)
	}
	h.Held = func(ctx context.Context, m *handler.Message, d time.Duration) {
		if next.Held != nil {
			next.Held(ctx, m, d)
		}
		r.take(m.ID)
	}
	return h
}

func (r *Receiver) take(id string) (Pointer, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.handed[id]
	delete(r.handed, id)
	return p, ok
}

// Run deletes the objects Hooks queued, in DeleteObjects calls of up to
// 1,000 keys with up to DeleteConcurrency in flight, until ctx is done; it
// then finishes the calls in flight and deletes what is queued already,
// within 10 s, and returns nil. Start
// it before the consumer and cancel its ctx after the consumer's Run
// returned, so the last deletes are not left to Sweep. Objects queued while
// no Run is going wait for the next (up to MaxPending); a process that ends
// leaves them to Sweep.
func (r *Receiver) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	// Deletes run on dctx, not ctx: cancelling ctx must not abort the calls
	// in flight, whose objects' messages SQS deleted already; dctx ends 10 s
	// after ctx, with the drain.
	dctx, dcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer dcancel()
	var deadline atomic.Pointer[time.Timer]
	stop := context.AfterFunc(ctx, func() { deadline.Store(time.AfterFunc(10*time.Second, dcancel)) })
	defer func() {
		stop()
		if t := deadline.Load(); t != nil {
			t.Stop()
		}
	}()
	sem := make(chan struct{}, r.o.DeleteConcurrency)
	run := func(batch []Pointer) {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			n, err := deleteObjects(dctx, r.api, batch)
			r.stats.deleted.Add(int64(n))
			if failed := len(batch) - n; failed > 0 {
				r.stats.deleteFailed.Add(int64(failed))
				r.log.Warn("s3payload: objects not deleted; Sweep will find them", "count", failed, "err", err)
			}
		}()
	}
	collect := func(first Pointer) []Pointer {
		batch := []Pointer{first}
		for len(batch) < 1000 {
			select {
			case p := <-r.queue:
				batch = append(batch, p)
			default:
				return batch
			}
		}
		return batch
	}
	for {
		select {
		case p := <-r.queue:
			run(collect(p))
		case <-ctx.Done():
			for dctx.Err() == nil {
				select {
				case p := <-r.queue:
					run(collect(p))
					continue
				default:
				}
				break
			}
			wg.Wait()
			return nil
		}
	}
}
