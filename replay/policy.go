package replay

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/internal/sqsrule"
)

// Reason says why a message is escalated to the operator queue.
type Reason string

// The reasons.
const (
	AttemptsExhausted Reason = "attempts-exhausted"
	InvalidCounter    Reason = "invalid-counter"
	AttributeBudget   Reason = "attribute-budget-exceeded"
	TooLarge          Reason = "too-large"
	NotRoutable       Reason = "not-routable"
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
// dead-letter queue. The zero value is usable: the sample's counter
// attribute, 3 attempts, full jitter from 2 s, delays up to 12 h.
type Policy struct {
	// CounterAttribute names the attempt counter (a Number attribute).
	// Default DefaultCounterAttribute.
	CounterAttribute string
	// MaxAttempts is how many replays a message gets before it is escalated.
	// Default 3.
	MaxAttempts int
	// Backoff gives the delay before replay n (n from 1). Default
	// FullJitter, 2 s base, 12 h cap, like the sample's base-2 full jitter.
	// Its randomness is reseeded per message and attempt (see Decide).
	Backoff backoff.Strategy
	// MaxDelay caps any delay. Default and maximum 12 h.
	MaxDelay time.Duration
	// MaxMessageBytes is the target queues' size limit. Default 1 MiB.
	MaxMessageBytes int
	// KeepAttributesInPlace escalates a message that already has ten
	// attributes (AttributeBudget) instead of moving one of them into the
	// metadata attribute to make room. Default false: such messages are
	// replayed, and Restore gives the moved attribute back.
	KeepAttributesInPlace bool
}

// counterSanityLimit: a counter above this is forged, whatever MaxAttempts.
const counterSanityLimit = 1_000_000

func (p Policy) resolved() Policy {
	if p.CounterAttribute == "" {
		p.CounterAttribute = DefaultCounterAttribute
	}
	if p.MaxAttempts == 0 {
		p.MaxAttempts = 3
	}
	if p.Backoff == nil {
		p.Backoff = backoff.FullJitter{Base: 2 * time.Second, Cap: sqsrule.MaxVisibility}
	}
	if p.MaxDelay == 0 || p.MaxDelay > sqsrule.MaxVisibility {
		p.MaxDelay = sqsrule.MaxVisibility
	}
	if p.MaxMessageBytes == 0 {
		p.MaxMessageBytes = sqsrule.MaxMessageBytes
	}
	return p
}

// Validate reports settings that make no sense.
func (p Policy) Validate() error {
	switch {
	case p.MaxAttempts < 0 || p.MaxAttempts > counterSanityLimit:
		return fmt.Errorf("%w: MaxAttempts %d must be 0 to %d", ErrConfig, p.MaxAttempts, counterSanityLimit)
	case p.MaxDelay < 0:
		return fmt.Errorf("%w: MaxDelay %v is negative", ErrConfig, p.MaxDelay)
	case p.MaxMessageBytes < 0 || p.MaxMessageBytes > sqsrule.MaxMessageBytes:
		return fmt.Errorf("%w: MaxMessageBytes %d must be at most 1 MiB", ErrConfig, p.MaxMessageBytes)
	case p.CounterAttribute != "" && sqsrule.CheckAttributeName(p.CounterAttribute) != nil:
		return fmt.Errorf("%w: CounterAttribute %q is not a valid attribute name", ErrConfig, p.CounterAttribute)
	}
	if p.Backoff != nil {
		if err := backoff.Validate(p.Backoff); err != nil {
			return fmt.Errorf("%w: Backoff: %w", ErrConfig, err)
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
	// Delay is the delay before this replay, counted from when the message
	// was last sent (its SentTimestamp).
	Delay time.Duration
	// Reason and Detail explain an escalation.
	Reason Reason
	Detail string
	// Metadata is the provenance the outgoing message carries.
	Metadata Metadata
}

// Decide reads the counter defensively and decides. A missing counter is
// attempt 0; a non-numeric, negative, fractional or absurdly large one
// escalates as InvalidCounter. Past MaxAttempts it escalates as
// AttemptsExhausted. A message whose body and attributes, with the
// replayer's own, would exceed MaxMessageBytes escalates as TooLarge.
//
// The delay is random but reproducible: the strategy draws from a source
// seeded by the original MessageId and the attempt, so every replayer
// instance, and every receive of the same message, computes the same delay.
// That is how a held message is known to be due.
func (p Policy) Decide(m *types.Message, now time.Time) Decision {
	p = p.resolved()
	md, _ := readMetadata(m.MessageAttributes)
	if md.OriginalID == "" {
		md.OriginalID = aws.ToString(m.MessageId)
	}
	if md.FirstFailure.IsZero() {
		md.FirstFailure = now.UTC().Truncate(time.Millisecond)
	}
	if src := m.Attributes[string(types.MessageSystemAttributeNameDeadLetterQueueSourceArn)]; src != "" {
		md.SourceArn = src
	}
	d := Decision{Metadata: md}
	escalate := func(r Reason, format string, args ...any) Decision {
		d.Action, d.Reason, d.Detail = Escalate, r, fmt.Sprintf(format, args...)
		d.Metadata.Reason, d.Metadata.Detail = d.Reason, d.Detail
		return d
	}
	count, err := p.counter(m.MessageAttributes, md)
	if err != nil {
		return escalate(InvalidCounter, "%v", err)
	}
	d.Attempt = count + 1
	if d.Attempt > p.MaxAttempts {
		return escalate(AttemptsExhausted, "replayed %d times, the maximum is %d", count, p.MaxAttempts)
	}
	if p.KeepAttributesInPlace && len(userAttributes(m.MessageAttributes, p.CounterAttribute)) >= sqsrule.MaxAttributes {
		return escalate(AttributeBudget, "the message has %d attributes and no room for the replay metadata", sqsrule.MaxAttributes)
	}
	if size := sqsrule.MessageSize(aws.ToString(m.Body), userAttributes(m.MessageAttributes, p.CounterAttribute)) + metadataAllowance; size > p.MaxMessageBytes {
		return escalate(TooLarge, "%d bytes with the replay metadata exceed %d", size, p.MaxMessageBytes)
	}
	strategy := reseeded(p.Backoff, d.Metadata.OriginalID, d.Attempt)
	delay := strategy.Delay(d.Attempt, md.LastDelay)
	if delay == backoff.Stop {
		return escalate(AttemptsExhausted, "the backoff strategy stopped at attempt %d", d.Attempt)
	}
	d.Action, d.Delay = Replay, min(max(delay, 0), p.MaxDelay)
	d.Metadata.LastDelay = d.Delay
	return d
}

// metadataAllowance is room kept for the replayer's attributes when
// checking a message's size.
const metadataAllowance = 2048

// counter reads the attempt counter: the counter attribute, or the count
// kept in the metadata when the attribute did not fit.
func (p Policy) counter(attrs map[string]types.MessageAttributeValue, md Metadata) (int, error) {
	v, ok := attrs[p.CounterAttribute]
	if !ok {
		if md.Attempt < 0 || md.Attempt > counterSanityLimit {
			return 0, fmt.Errorf("counter %d in %s is out of range", md.Attempt, MetadataAttribute)
		}
		return md.Attempt, nil
	}
	s := strings.TrimSpace(aws.ToString(v.StringValue))
	n, err := strconv.ParseInt(s, 10, 64)
	switch {
	case err != nil:
		return 0, fmt.Errorf("counter %s=%q is not a whole number", p.CounterAttribute, s)
	case n < 0:
		return 0, fmt.Errorf("counter %s=%d is negative", p.CounterAttribute, n)
	case n > counterSanityLimit:
		return 0, fmt.Errorf("counter %s=%d is beyond any real count", p.CounterAttribute, n)
	}
	return int(n), nil
}

// reseeded returns s drawing from a source seeded by the message and
// attempt, for strategies that take a source (WithRand, as package backoff's
// jitter strategies do); others are used as they are.
func reseeded(s backoff.Strategy, id string, attempt int) backoff.Strategy {
	w, ok := s.(interface {
		WithRand(backoff.Random) backoff.Strategy
	})
	if !ok {
		return s
	}
	sum := sha256.Sum256([]byte(id + "\x00" + strconv.Itoa(attempt)))
	return w.WithRand(rand.New(rand.NewPCG(binary.BigEndian.Uint64(sum[:8]), binary.BigEndian.Uint64(sum[8:16]))))
}
