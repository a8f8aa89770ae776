package replay

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/internal/parking"
	"github.com/sqskit/sqskit/internal/sqsrule"
)

// Reason says why a message is escalated to the operator queue.
type Reason = parking.Reason

// The reasons.
const (
	// AttemptsExhausted: replayed MaxAttempts times, or the Backoff stopped.
	AttemptsExhausted Reason = "attempts-exhausted"
	// InvalidCounter: the attempt counter is not a whole number in range, or
	// it is in both the counter attribute and the metadata.
	InvalidCounter = parking.InvalidCounter
	// InvalidMetadata: the sqskit-replay attribute is not what the replayer
	// writes (unreadable, a delay out of range, moved attributes that clash).
	InvalidMetadata = parking.InvalidMetadata
	// AttributeBudget: ten attributes and KeepAttributesInPlace.
	AttributeBudget Reason = "attribute-budget-exceeded"
	// TooLarge: no room for the replay metadata within MaxMessageBytes.
	TooLarge = parking.TooLarge
	// NotRoutable: no allow-listed target, or a FIFO target and no valid
	// group id.
	NotRoutable Reason = "not-routable"
	// Unsendable: SQS refuses the message as it is (an attribute it does not
	// accept); the escalation carries what it refuses moved aside.
	Unsendable = parking.Unsendable
	// BackoffFailed: the Policy's Backoff strategy panicked for this replay
	// (a bug in it): the message goes to a human rather than being held in a
	// loop, and the policy needs fixing.
	BackoffFailed Reason = "backoff-failed"
)

// Action is what to do with a dead-lettered message.
type Action int

// The actions.
const (
	Replay Action = iota + 1
	Escalate
)

func (a Action) String() string {
	switch a {
	case Replay:
		return "replay"
	case Escalate:
		return "escalate"
	}
	return "unknown"
}

// Policy decides, without I/O, what happens to a message received from a
// dead-letter queue. The zero value is the default policy: the sample's
// counter attribute, 3 replays, delays from EqualJitter with a 1 min base
// (30 s to 1 min, then 1 to 2 min, then 2 to 4 min), at most 12 h.
type Policy struct {
	// CounterAttribute names the attempt counter (a Number attribute). It
	// must be a valid attribute name other than MetadataAttribute. Default
	// DefaultCounterAttribute.
	CounterAttribute string
	// MaxAttempts is how many replays a message gets before it is escalated:
	// 1 to 1,000,000; 0 is the default, 3; NoReplays escalates every
	// message at once.
	MaxAttempts int
	// Backoff gives the delay before each replay: Delay(n, prev) for replay
	// n+1, so n counts from 0 as in every backoff.Strategy and
	// backoff.MaxAttempts{N: 3} allows three replays, as MaxAttempts: 3
	// does. Its randomness is reseeded per message and replay (see Decide):
	// strategies that draw randomness need a WithRand method, as package
	// backoff's have, decorators included. Default EqualJitter, 1 min base,
	// 12 h cap: never less than half the exponential delay, so each replay
	// waits at least as long as the one before.
	Backoff backoff.Strategy
	// MaxBackoff caps any delay: 0 (the default, 12 h) to 12 h, the longest
	// SQS keeps a message invisible.
	MaxBackoff time.Duration
	// MaxMessageBytes is the target and operator queues' size limit, 1 KiB
	// to 1 MiB. Default 1 MiB.
	MaxMessageBytes int
	// KeepAttributesInPlace escalates a message that already has ten
	// attributes (AttributeBudget) instead of moving one of them into the
	// metadata attribute to make room. Default false: such messages are
	// replayed, and Restore gives the moved attribute back.
	KeepAttributesInPlace bool
	// ResetCounter sends each replay without a counter (none in the
	// attribute, none in the metadata), so that the next replayer to see the
	// message counts its attempts from the start again: for an operator who
	// replays messages after fixing their cause. Decide still counts (the
	// Decision's Attempt, MaxAttempts, the delay), and the deduplication id
	// still comes from that attempt, so a reset never reuses the id of an
	// earlier replay. Default false: the counter goes on.
	ResetCounter bool
}

// NoReplays is the Policy.MaxAttempts that replays nothing: every message
// is escalated at once, as AttemptsExhausted.
const NoReplays = -1

func (p Policy) resolved() Policy {
	if p.CounterAttribute == "" {
		p.CounterAttribute = DefaultCounterAttribute
	}
	if p.MaxAttempts == 0 {
		p.MaxAttempts = 3
	}
	if p.MaxBackoff == 0 {
		p.MaxBackoff = sqsrule.MaxVisibility
	}
	if p.Backoff == nil {
		p.Backoff = backoff.EqualJitter{Base: time.Minute, Cap: p.MaxBackoff}
	}
	if p.MaxMessageBytes == 0 {
		p.MaxMessageBytes = sqsrule.MaxMessageBytes
	}
	return p
}

// Validate reports settings that make no sense, as errors matching
// ErrConfig.
func (p Policy) Validate() error {
	switch {
	case p.MaxAttempts < NoReplays || p.MaxAttempts > counterSanityLimit:
		return configError("MaxAttempts %d must be 0 (the default), NoReplays (%d) or 1 to %d", p.MaxAttempts, NoReplays, counterSanityLimit)
	case p.MaxBackoff < 0 || p.MaxBackoff > sqsrule.MaxVisibility:
		return configError("MaxBackoff %v must be 0 to 12h", p.MaxBackoff)
	case p.MaxMessageBytes != 0 && (p.MaxMessageBytes < sqsrule.MinMessageBytesAttr || p.MaxMessageBytes > sqsrule.MaxMessageBytes):
		return configError("MaxMessageBytes %d must be 1 KiB to 1 MiB", p.MaxMessageBytes)
	case p.CounterAttribute == MetadataAttribute:
		return configError("CounterAttribute is %s, the metadata attribute: the metadata would overwrite the counter", MetadataAttribute)
	case p.CounterAttribute != "" && sqsrule.CheckAttributeName(p.CounterAttribute) != nil:
		return configError("CounterAttribute %q is not a valid attribute name", p.CounterAttribute)
	}
	if p.Backoff != nil {
		if err := backoff.Validate(p.Backoff); err != nil {
			return configError("Backoff: %w", err)
		}
	}
	return nil
}

// Decision is the policy's verdict on one message.
type Decision struct {
	Action Action
	// Attempt is the replay this would be (1 for the first), the counter
	// value the replayed message carries.
	Attempt int
	// Delay is the delay before this replay (see the package doc for what
	// it counts from).
	Delay time.Duration
	// Reason and Detail explain an escalation. Detail names attributes, but
	// never quotes a body or an attribute value.
	Reason Reason
	Detail string
	// Metadata is the provenance the outgoing message carries.
	Metadata Metadata
}

// Decide reads the counter defensively and decides. A missing counter is
// attempt 0; a non-numeric, negative, fractional or absurdly large one, or
// one in both the counter attribute and the metadata, escalates as
// InvalidCounter; a metadata attribute the replayer did not write escalates
// as InvalidMetadata, with the original attributes kept in Metadata.Moved.
// Past MaxAttempts it escalates as AttemptsExhausted. A message whose body
// and attributes, with the replayer's own, would exceed MaxMessageBytes
// escalates as TooLarge. A Backoff strategy that panics escalates it as
// BackoffFailed, and a nil m is decided as an empty message: Decide never
// panics.
//
// The delay is random but reproducible: the strategy draws from a source
// seeded by the DLQ message's MessageId, which SQS assigns, and the attempt,
// so every replayer, and every receive of the same message, computes the
// same delay. Nothing in the message's attributes chooses it; the previous
// delay recorded in the metadata only feeds strategies that grow from it
// (DecorrelatedJitter), within MaxBackoff.
func (p Policy) Decide(m *types.Message, now time.Time) Decision {
	p = p.resolved()
	if m == nil {
		m = &types.Message{}
	}
	id := aws.ToString(m.MessageId)
	md, bad := readMetadata(m.MessageAttributes, p.CounterAttribute)
	if md.OriginalID == "" {
		md.OriginalID = id
	}
	if md.FirstFailure.IsZero() {
		md.FirstFailure = now.UTC().Truncate(time.Millisecond)
	}
	// The source is what SQS says, or unknown: a "src" in the metadata is
	// the sender's to forge. Reason and Detail are an escalation's own.
	md.SourceArn = m.Attributes[string(types.MessageSystemAttributeNameDeadLetterQueueSourceArn)]
	md.Reason, md.Detail = "", ""
	d := Decision{Metadata: md}
	escalate := func(r Reason, format string, args ...any) Decision {
		d.Action, d.Reason, d.Detail = Escalate, r, fmt.Sprintf(format, args...)
		d.Metadata.Reason, d.Metadata.Detail = d.Reason, d.Detail
		return d
	}
	if bad != nil {
		d.Metadata = Metadata{OriginalID: id, FirstFailure: md.FirstFailure, SourceArn: md.SourceArn,
			Moved: mergeMoved(keepAside(m.MessageAttributes, MetadataAttribute), keepAside(m.MessageAttributes, p.CounterAttribute))}
		return escalate(bad.reason, "%s", bad.detail)
	}
	count, err := p.counter(m.MessageAttributes, md)
	if err != nil {
		d.Metadata.Attempt = 0
		d.Metadata.Moved = mergeMoved(d.Metadata.Moved, keepAside(m.MessageAttributes, p.CounterAttribute))
		return escalate(InvalidCounter, "%v", err)
	}
	d.Attempt = count + 1
	switch {
	case p.MaxAttempts == NoReplays:
		return escalate(AttemptsExhausted, "the policy replays nothing (NoReplays)")
	case d.Attempt > p.MaxAttempts:
		return escalate(AttemptsExhausted, "replayed %d times, the maximum is %d", count, p.MaxAttempts)
	}
	user := userAttributes(m.MessageAttributes, p.CounterAttribute)
	if p.KeepAttributesInPlace && len(user) >= sqsrule.MaxAttributes {
		return escalate(AttributeBudget, "the message has %d attributes and no room for the replay metadata", len(user))
	}
	if size := sqsrule.MessageSize(aws.ToString(m.Body), user) + metadataAllowance; size > p.MaxMessageBytes {
		return escalate(TooLarge, "%d bytes with the replay metadata exceed %d", size, p.MaxMessageBytes)
	}
	prev := min(md.LastDelay, p.MaxBackoff)
	delay, failure := p.delay(id, d.Attempt, prev)
	if failure != nil {
		return escalate(BackoffFailed, "the Backoff strategy panicked on replay %d: %v", d.Attempt, failure)
	}
	if delay == backoff.Stop {
		return escalate(AttemptsExhausted, "the backoff strategy stopped after %d replays", count)
	}
	d.Action, d.Delay = Replay, min(max(delay, 0), p.MaxBackoff)
	d.Metadata.LastDelay = d.Delay
	return d
}

// delay is the Backoff strategy's delay for replay attempt, reseeded for
// the message; failure is what it panicked with, if it did (a bug in a
// user's strategy New could not see): Decide escalates rather than crash
// the worker that called it.
func (p Policy) delay(id string, attempt int, prev time.Duration) (d time.Duration, failure any) {
	defer func() {
		if v := recover(); v != nil {
			d, failure = 0, v
		}
	}()
	return backoff.WithRand(p.Backoff, seeded(id, attempt)).Delay(attempt-1, prev), nil
}

// metadataAllowance is room kept for the replayer's attributes when
// checking a message's size; the exact size is checked again before
// sending.
const metadataAllowance = 2048

// counter reads the attempt counter: the counter attribute
// (parking.Counter's rule, which the Parker shares), or the count kept in
// the metadata when the attribute did not fit. Both at once is
// inconsistent: the replayer writes one or the other.
func (p Policy) counter(attrs map[string]types.MessageAttributeValue, md Metadata) (int, error) {
	n, ok, err := parking.Counter(attrs, p.CounterAttribute)
	switch {
	case !ok:
		return md.Attempt, nil
	case md.Attempt != 0:
		return 0, fmt.Errorf("counter %s is set and %s holds a count too", p.CounterAttribute, MetadataAttribute)
	}
	return n, err
}

// seeded returns a source seeded by a message id and an attempt.
func seeded(id string, attempt int) backoff.Random {
	sum := sha256.Sum256([]byte(id + "\x00" + strconv.Itoa(attempt)))
	return rand.New(rand.NewPCG(binary.BigEndian.Uint64(sum[:8]), binary.BigEndian.Uint64(sum[8:16])))
}
