package fifo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/internal/sqserr"
	"github.com/sqskit/sqskit/internal/sqsrule"
)

// API is the part of the SQS client a Sender calls.
type API interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
}

var _ API = (*sqs.Client)(nil)

// Message is one message to send.
type Message struct {
	Body       string
	Attributes map[string]types.MessageAttributeValue
	// GroupID is the MessageGroupId; when empty, Options.GroupID computes it.
	// Required on FIFO queues; on standard queues it names a fair-queue
	// tenant.
	GroupID string
	// DeduplicationID, when set, is sent as is; otherwise Options.Dedup
	// computes one. FIFO queues only.
	DeduplicationID string
	// DedupKey feeds KeyDedup.
	DedupKey string
	// DelaySeconds delays the message, 0 to 900. Standard queues only: FIFO
	// queues refuse per-message delays.
	DelaySeconds int32
}

// Result is the outcome of one message.
type Result struct {
	MessageID       string
	SequenceNumber  string // FIFO only
	DeduplicationID string // the id used, FIFO only
	// Reordered is true when SQS accepted a later message of the same group
	// from the same batch while this one failed; this one was then sent
	// again and sits behind it in the group.
	Reordered bool
	Err       error
}

// Options configure a Sender. Zero values mean the defaults.
type Options struct {
	// GroupID computes the group of a message without one (a customer id,
	// say). Default: none, so FIFO messages must carry GroupID.
	GroupID func(*Message) string
	// Dedup computes deduplication ids on FIFO queues. Default RandomDedup.
	Dedup Dedup
	// Retry spaces retries of transient failures (throttling, 5xx, network,
	// lost responses). Default FullJitter, 100 ms base, 5 s cap.
	Retry backoff.Strategy
	// DedupWindow is how long after its first attempt a message may still be
	// retried with its deduplication id: SQS's 5 minutes less a 30 s margin
	// for clock skew and time in transit. Default 4m30s; must be in (0, 5m].
	DedupWindow time.Duration
	// MaxBatchBytes bounds one SendMessageBatch. Default and maximum 1 MiB.
	MaxBatchBytes int
	// MaxMessageBytes bounds one message, body and attributes. Set it to the
	// queue's MaximumMessageSize if lower. Default and maximum 1 MiB.
	MaxMessageBytes int
	// ContinueGroupAfterFailure sends later messages of a group even after
	// an earlier one failed for good. Default false: they fail with
	// GroupBlockedError, so the group's order holds.
	ContinueGroupAfterFailure bool
	// Now reads the clock for the dedup window. Default time.Now.
	Now func() time.Time
	// After waits between retries. Default time.NewTimer.
	After func(time.Duration) (<-chan time.Time, func() bool)
	// Logger receives retries and failures, never bodies. Default silent.
	Logger *slog.Logger
}

// Sender sends messages to one queue. It is safe for concurrent use; each
// call keeps its own messages' order.
type Sender struct {
	client   API
	queueURL string
	fifo     bool
	opts     Options
}

// ErrConfig matches every invalid option with errors.Is.
var ErrConfig = errors.New("fifo: invalid options")

// NewSender returns a Sender for queueURL. FIFO is detected by the .fifo
// suffix, never by the presence of group ids.
func NewSender(client API, queueURL string, optFns ...func(*Options)) (*Sender, error) {
	var o Options
	for _, fn := range optFns {
		fn(&o)
	}
	if client == nil {
		return nil, fmt.Errorf("%w: nil client", ErrConfig)
	}
	if queueURL == "" {
		return nil, fmt.Errorf("%w: empty queue URL", ErrConfig)
	}
	if err := resolveOptions(&o); err != nil {
		return nil, err
	}
	return &Sender{client: client, queueURL: queueURL, fifo: sqsrule.IsFIFO(queueURL), opts: o}, nil
}

func resolveOptions(o *Options) error {
	if o.Dedup == nil {
		o.Dedup = RandomDedup()
	}
	if o.Retry == nil {
		o.Retry = backoff.FullJitter{Base: 100 * time.Millisecond, Cap: 5 * time.Second}
	}
	if err := backoff.Validate(o.Retry); err != nil {
		return fmt.Errorf("%w: Retry: %w", ErrConfig, err)
	}
	switch {
	case o.DedupWindow == 0:
		o.DedupWindow = sqsrule.DedupWindow - 30*time.Second
	case o.DedupWindow < 0 || o.DedupWindow > sqsrule.DedupWindow:
		return fmt.Errorf("%w: DedupWindow %v must be in (0, 5m]", ErrConfig, o.DedupWindow)
	}
	var err error
	if o.MaxBatchBytes, err = byteLimit("MaxBatchBytes", o.MaxBatchBytes); err != nil {
		return err
	}
	if o.MaxMessageBytes, err = byteLimit("MaxMessageBytes", o.MaxMessageBytes); err != nil {
		return err
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.After == nil {
		o.After = func(d time.Duration) (<-chan time.Time, func() bool) {
			t := time.NewTimer(d)
			return t.C, t.Stop
		}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

func byteLimit(name string, v int) (int, error) {
	switch {
	case v == 0:
		return sqsrule.MaxMessageBytes, nil
	case v < 1 || v > sqsrule.MaxMessageBytes:
		return 0, fmt.Errorf("%w: %s %d must be 1 to %d", ErrConfig, name, v, sqsrule.MaxMessageBytes)
	}
	return v, nil
}

// prepared is a validated message with its group and dedup id fixed.
type prepared struct {
	index    int
	msg      *Message
	groupID  string
	dedupID  string
	size     int
	first    time.Time // first attempt; zero before it
	attempts int
	// entryFailed: SQS failed this entry on its own, so a resend keeps
	// later messages of its group out of the same batch.
	entryFailed bool
}

// prepare validates m and fixes its group and dedup ids, before any call.
func (s *Sender) prepare(index int, m *Message) (*prepared, error) {
	if err := sqsrule.CheckBody(m.Body); err != nil {
		return nil, invalid(index, err)
	}
	if err := sqsrule.CheckAttributes(m.Attributes); err != nil {
		return nil, invalid(index, err)
	}
	if err := sqsrule.CheckSize(m.Body, m.Attributes, s.opts.MaxMessageBytes); err != nil {
		return nil, invalid(index, err)
	}
	p := &prepared{index: index, msg: m, groupID: m.GroupID, size: sqsrule.MessageSize(m.Body, m.Attributes)}
	if p.groupID == "" && s.opts.GroupID != nil {
		p.groupID = s.opts.GroupID(m)
	}
	if p.groupID != "" {
		if err := sqsrule.CheckGroupID(p.groupID); err != nil {
			return nil, invalid(index, err)
		}
	}
	if !s.fifo {
		if m.DeduplicationID != "" {
			return nil, &ValidationError{Index: index, Field: "MessageDeduplicationId", Code: sqsrule.CodeInvalidParameterValue, Reason: "standard queues take no deduplication id"}
		}
		if err := sqsrule.CheckDelaySeconds(m.DelaySeconds); err != nil {
			return nil, invalid(index, err)
		}
		return p, nil
	}
	if m.DelaySeconds != 0 {
		return nil, &ValidationError{Index: index, Field: "DelaySeconds", Code: sqsrule.CodeInvalidParameterValue, Reason: "FIFO queues take no per-message delay; set the queue's DelaySeconds"}
	}
	if p.groupID == "" {
		return nil, &ValidationError{Index: index, Field: "MessageGroupId", Code: sqsrule.CodeMissingParameter, Reason: "FIFO queues need a group id: set Message.GroupID or Options.GroupID"}
	}
	p.dedupID = m.DeduplicationID
	if p.dedupID == "" {
		id, err := s.opts.Dedup(m, p.groupID)
		if err != nil {
			return nil, &ValidationError{Index: index, Field: "MessageDeduplicationId", Code: sqsrule.CodeInvalidParameterValue, Reason: err.Error()}
		}
		p.dedupID = id
	}
	if err := sqsrule.CheckDedupID(p.dedupID); err != nil {
		return nil, invalid(index, err)
	}
	return p, nil
}

// Send sends one message, retrying transient failures with the same
// deduplication id inside the dedup window. The error is the Result's Err.
func (s *Sender) Send(ctx context.Context, m Message) (Result, error) {
	p, err := s.prepare(0, &m)
	if err != nil {
		return Result{Err: err}, err
	}
	in := &sqs.SendMessageInput{
		QueueUrl: aws.String(s.queueURL), MessageBody: aws.String(m.Body), MessageAttributes: m.Attributes,
		DelaySeconds: m.DelaySeconds, MessageGroupId: optional(p.groupID), MessageDeduplicationId: optional(p.dedupID),
	}
	var prev time.Duration
	for {
		s.markAttempt(p)
		out, err := s.client.SendMessage(ctx, in)
		if err == nil {
			res := Result{MessageID: aws.ToString(out.MessageId), SequenceNumber: aws.ToString(out.SequenceNumber), DeduplicationID: p.dedupID}
			return res, nil
		}
		if !sqserr.Transient(err) {
			return Result{Err: err, DeduplicationID: p.dedupID}, err
		}
		if err := s.wait(ctx, []*prepared{p}, &prev, err); err != nil {
			return Result{Err: err, DeduplicationID: p.dedupID}, err
		}
	}
}

// markAttempt records an attempt of ps, and the time of the first.
func (s *Sender) markAttempt(ps ...*prepared) {
	now := s.opts.Now()
	for _, p := range ps {
		if p.first.IsZero() {
			p.first = now
		}
		p.attempts++
	}
}

// wait sleeps before a retry of ps after cause. It returns an error instead
// when the strategy stops, ctx ends, or a retry would fall outside the dedup
// window of the oldest message.
func (s *Sender) wait(ctx context.Context, ps []*prepared, prev *time.Duration, cause error) error {
	attempts, oldest := 0, ps[0].first
	for _, p := range ps {
		attempts = max(attempts, p.attempts)
		if p.first.Before(oldest) {
			oldest = p.first
		}
	}
	d := s.delay(attempts-1, *prev, cause)
	if d == backoff.Stop {
		return cause
	}
	*prev = d
	if s.fifo && s.opts.Now().Add(d).Sub(oldest) >= s.opts.DedupWindow {
		return &WindowExceededError{DeduplicationID: ps[0].dedupID, FirstAttempt: oldest, Last: cause}
	}
	s.opts.Logger.LogAttrs(ctx, slog.LevelDebug, "fifo: retrying send", slog.Int("messages", len(ps)), slog.Duration("delay", d), slog.String("error", cause.Error()))
	fire, stop := s.opts.After(d)
	select {
	case <-fire:
		return nil
	case <-ctx.Done():
		stop()
		return errors.Join(cause, ctx.Err())
	}
}

func (s *Sender) delay(attempt int, prev time.Duration, cause error) time.Duration {
	if es, ok := s.opts.Retry.(backoff.ErrorStrategy); ok {
		return es.DelayFor(attempt, prev, cause)
	}
	return s.opts.Retry.Delay(attempt, prev)
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return aws.String(s)
}
