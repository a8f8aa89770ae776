package handler

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Idempotency records: a Store keeps one per key, in one of two states.
const (
	// StatusInProgress: a handler holds the key until the record's Until,
	// which follows its message's visibility lease.
	StatusInProgress = "INPROGRESS"
	// StatusCompleted: the handler succeeded; duplicates are done at once
	// until the record's Until (the TTL).
	StatusCompleted = "COMPLETED"
)

// ErrNotHeld is what a Store returns from Extend, Complete or Release
// when token no longer holds the key: its in-progress record expired and
// another claim took it, or the key is completed.
var ErrNotHeld = errors.New("handler: idempotency record not held by this token")

// Record is an idempotency record as a Store keeps it.
type Record struct {
	// Status is StatusInProgress or StatusCompleted.
	Status string
	// Until is when the record expires: an in-progress record may then be
	// claimed again, a completed one is forgotten.
	Until time.Time
	// Result is what the handler recorded with SetResult (completed only).
	Result []byte
}

// Store keeps idempotency records for the Idempotent middleware. Keys are
// fixed-length hex strings; tokens name one receive of a message. Every
// method is conditional, as a database's conditional writes are, and safe
// for concurrent use by many processes when the store is shared
// (MemoryStore is one process's; package
// github.com/sqskit/sqskit/idempotency/dynamodb shares one through
// DynamoDB). A Store is user code: its panic fails the message.
type Store interface {
	// Claim creates key's in-progress record for token, expiring at until,
	// unless a record exists whose Until is after now: then it returns that
	// record and claimed false.
	Claim(ctx context.Context, key, token string, now, until time.Time) (existing Record, claimed bool, err error)
	// Extend moves the expiry of token's in-progress record to until.
	Extend(ctx context.Context, key, token string, until time.Time) error
	// Complete replaces token's in-progress record with a completed one
	// holding result and expiring at expires.
	Complete(ctx context.Context, key, token string, result []byte, expires time.Time) error
	// Release deletes token's in-progress record.
	Release(ctx context.Context, key, token string) error
}

// IdempotencyOptions configure Idempotent. Zero values mean the defaults.
type IdempotencyOptions struct {
	// Key returns the key duplicates share; "" handles the message without
	// a record. ctx is the handler's: EnvelopeFrom reads what Envelopes
	// unwrapped, when it runs first. Default DefaultIdempotencyKey. The message is untrusted
	// input: the key is the sender's choice, so a sender can make two of
	// its own messages duplicates, and nothing more, when Namespace
	// separates senders that must not share keys.
	Key func(ctx context.Context, m *Message) string
	// Namespace prefixes every key: set it to the queue's name when one
	// table serves several queues. Default "".
	Namespace string
	// TTL is how long a completed record suppresses duplicates. Default
	// 24 h; at least 1 s.
	TTL time.Duration
	// InProgress is an in-progress record's lifetime where the ctx has no
	// lease and no deadline. Default 5 min; at least 1 s.
	InProgress time.Duration
	// OnDuplicate is called for a duplicate of a completed message, with
	// the result its handler recorded (SetResult), before it is reported
	// done: to answer a request again, say. Default none. It is user code:
	// a panic fails the message.
	OnDuplicate func(ctx context.Context, m *Message, result []byte)
}

// DefaultIdempotencyKey is the default key: the MessageGroupId and the
// MessageDeduplicationId together when the message has a deduplication id
// (the same id is legitimate in two groups under DeduplicationScope
// messageGroup); else the id of the SNS notification or EventBridge event
// Envelopes unwrapped (SNS keeps a notification's MessageId when it
// delivers it again); else the MessageId, which suppresses SQS's own
// duplicate deliveries only. To suppress a producer's resends, give Key a
// function of the body's own id.
func DefaultIdempotencyKey(ctx context.Context, m *Message) string {
	if d := m.Attributes["MessageDeduplicationId"]; d != "" {
		return "dedup\x00" + m.GroupID() + "\x00" + d
	}
	if e := EnvelopeFrom(ctx); e != nil && e.ID != "" {
		return e.Kind + "\x00" + e.ID
	}
	return "id\x00" + m.ID
}

// cleanupTimeout bounds a record's Complete or Release after the handler
// returned, on a ctx of its own (the handler's may be cancelled).
const cleanupTimeout = 10 * time.Second

// Idempotent returns middleware that runs a message's handler once per
// key, across every consumer and Lambda sharing store:
//
//   - the first receive of a key claims it: an in-progress record whose
//     expiry follows the message's visibility lease (LeaseFrom), renewed
//     as the consumer's heartbeat extends it, so a handler is never run
//     twice because it ran long, and a crashed consumer's claim ends when
//     its message becomes visible again;
//   - a duplicate while the key is in progress is held (Hold) until the
//     claim's expiry, then looks again: it is not a failure;
//   - on success the record becomes completed for TTL, with what the
//     handler gave SetResult; duplicates are then done at once
//     (OnDuplicate sees the result);
//   - on a failure, an Escalate or Hold outcome, or a lost lease, the claim
//     is released so the next delivery (or the replay of a parked message)
//     runs it.
//
// A store error before the handler is a failure (retried); so is one
// recording success, since the message is then not known to be done. In
// Lambda the in-progress record ends at the invocation's deadline (there
// is no heartbeat), and a held duplicate needs LambdaOptions.Parker.
// Invalid options return an error matching ErrConfig.
func Idempotent(store Store, optFns ...func(*IdempotencyOptions)) (Middleware, error) {
	o := IdempotencyOptions{}
	for _, fn := range optFns {
		if fn != nil {
			fn(&o)
		}
	}
	switch {
	case store == nil:
		return nil, fmt.Errorf("%w: Idempotent: a nil Store", ErrConfig)
	case o.TTL < 0 || o.TTL > 0 && o.TTL < time.Second:
		return nil, fmt.Errorf("%w: Idempotent: TTL %v, want 0 (24 h) or at least 1s", ErrConfig, o.TTL)
	case o.InProgress < 0 || o.InProgress > 0 && o.InProgress < time.Second:
		return nil, fmt.Errorf("%w: Idempotent: InProgress %v, want 0 (5 min) or at least 1s", ErrConfig, o.InProgress)
	}
	if o.Key == nil {
		o.Key = DefaultIdempotencyKey
	}
	if o.TTL == 0 {
		o.TTL = 24 * time.Hour
	}
	if o.InProgress == 0 {
		o.InProgress = 5 * time.Minute
	}
	return func(next Handler) Handler {
		return func(ctx context.Context, m *Message) error {
			return idempotent(ctx, m, store, &o, next)
		}
	}, nil
}

// IdempotencyKey returns the Store key Idempotent uses for a key and
// namespace: a SHA-256 in hex, so any key fits any store.
func IdempotencyKey(namespace, key string) string {
	sum := sha256.Sum256([]byte(namespace + "\x00" + key))
	return hex.EncodeToString(sum[:])
}

func idempotent(ctx context.Context, m *Message, store Store, o *IdempotencyOptions, next Handler) error {
	k := o.Key(ctx, m)
	if k == "" {
		return next(ctx, m)
	}
	key := IdempotencyKey(o.Namespace, k)
	tok := sha256.Sum256([]byte(m.ID + "\x00" + m.ReceiptHandle))
	token := hex.EncodeToString(tok[:16])

	now := time.Now()
	lease := LeaseFrom(ctx)
	until := now.Add(o.InProgress)
	if lease != nil {
		until = lease.Until()
	}
	if !until.After(now) {
		return errors.New("handler: idempotency: the message's lease has lapsed")
	}
	rec, claimed, err := store.Claim(ctx, key, token, now, until)
	if err != nil {
		return fmt.Errorf("handler: idempotency: claim: %w", err)
	}
	if !claimed {
		if rec.Status == StatusCompleted {
			if o.OnDuplicate != nil {
				o.OnDuplicate(ctx, m, rec.Result)
			}
			return nil
		}
		return Hold(max(rec.Until.Sub(now), time.Second))
	}

	var res result
	hctx := context.WithValue(ctx, resultKey{}, &res)
	stop := func() {}
	if _, fixed := lease.(deadlineLease); lease != nil && !fixed {
		stop = follow(ctx, lease, until, func(u time.Time) error { return store.Extend(ctx, key, token, u) })
	}
	// The claim ends however the handler does: a panic or runtime.Goexit
	// in it releases the claim too (and goes on up to the runtime).
	settled := false
	defer func() {
		if !settled {
			stop()
			release(ctx, store, key, token)
		}
	}()
	herr := next(hctx, m)
	settled = true
	stop()
	if herr != nil {
		release(ctx, store, key, token)
		return herr
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	err = store.Complete(cctx, key, token, res.get(), time.Now().Add(o.TTL))
	if err != nil && !errors.Is(err, ErrNotHeld) {
		return fmt.Errorf("handler: idempotency: record success: %w", err)
	}
	return nil
}

// release gives up a claim, on a ctx of its own: the handler's may be
// cancelled. A failure is left to the record's expiry.
func release(ctx context.Context, store Store, key, token string) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	_ = store.Release(cctx, key, token)
}

// follow renews an in-progress record as lease moves past until, until the
// returned stop is called (which waits for it) or ctx ends. It looks at
// half the time left, at least every second; an extend that fails is
// tried again at the next look. A panicking extend ends the renewal.
func follow(ctx context.Context, lease Lease, until time.Time, extend func(time.Time) error) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer func() { _ = recover() }()
		t := time.NewTimer(lookAfter(until))
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if u := lease.Until(); u.After(until) && extend(u) == nil {
				until = u
			}
			t.Reset(lookAfter(until))
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

func lookAfter(until time.Time) time.Duration {
	return max(time.Until(until)/2, time.Second)
}

// SetResult records b as the result of the message ctx belongs to, for
// Idempotent to keep in the completed record and give OnDuplicate: a
// reply to send again, an id created. Outside Idempotent it does nothing.
// Keep it small: a store may bound a record's size (DynamoDB: 400 KB).
func SetResult(ctx context.Context, b []byte) {
	if r, ok := ctx.Value(resultKey{}).(*result); ok {
		r.set(b)
	}
}

type resultKey struct{}

type result struct {
	mu sync.Mutex
	b  []byte
}

func (r *result) set(b []byte) {
	r.mu.Lock()
	r.b = append([]byte(nil), b...)
	r.mu.Unlock()
}

func (r *result) get() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.b
}

// MemoryStore is a Store in this process's memory: for tests, and for one
// consumer process that wants duplicates of SQS's own at-least-once
// delivery suppressed. Records expire at their Until; expired ones are
// swept as the store grows. The zero value is ready; safe for concurrent
// use.
type MemoryStore struct {
	mu      sync.Mutex
	records map[string]memRecord
	swept   int // len(records) after the last sweep
}

type memRecord struct {
	Record
	token string
}

var _ Store = (*MemoryStore)(nil)

// Claim implements Store.
func (s *MemoryStore) Claim(_ context.Context, key, token string, now, until time.Time) (Record, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.records == nil {
		s.records = make(map[string]memRecord)
	}
	if r, ok := s.records[key]; ok && r.Until.After(now) {
		return r.Record, false, nil
	}
	if len(s.records) >= 2*s.swept+64 {
		for k, r := range s.records {
			if !r.Until.After(now) {
				delete(s.records, k)
			}
		}
		s.swept = len(s.records)
	}
	s.records[key] = memRecord{Record: Record{Status: StatusInProgress, Until: until}, token: token}
	return Record{}, true, nil
}

// held returns key's record if token holds it in progress. Callers hold s.mu.
func (s *MemoryStore) held(key, token string) (memRecord, error) {
	r, ok := s.records[key]
	if !ok || r.token != token || r.Status != StatusInProgress {
		return memRecord{}, ErrNotHeld
	}
	return r, nil
}

// Extend implements Store.
func (s *MemoryStore) Extend(_ context.Context, key, token string, until time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.held(key, token)
	if err != nil {
		return err
	}
	r.Until = until
	s.records[key] = r
	return nil
}

// Complete implements Store.
func (s *MemoryStore) Complete(_ context.Context, key, token string, result []byte, expires time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.held(key, token)
	if err != nil {
		return err
	}
	r.Status, r.Until, r.Result = StatusCompleted, expires, append([]byte(nil), result...)
	s.records[key] = r
	return nil
}

// Release implements Store.
func (s *MemoryStore) Release(_ context.Context, key, token string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.held(key, token); err != nil {
		return err
	}
	delete(s.records, key)
	return nil
}
