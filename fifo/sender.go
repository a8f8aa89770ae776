package fifo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/metrics"
	"github.com/aws/smithy-go/tracing"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/internal/dispatch"
	"github.com/sqskit/sqskit/internal/queueref"
	"github.com/sqskit/sqskit/internal/sqserr"
	"github.com/sqskit/sqskit/internal/sqsrule"
	"github.com/sqskit/sqskit/internal/throttle"
	"github.com/sqskit/sqskit/internal/wait"
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
	// GroupID is the MessageGroupId; when empty, SenderOptions.GroupID
	// computes it. Required on FIFO queues; on standard queues it names a
	// fair-queue tenant and orders nothing.
	GroupID string
	// DeduplicationID, when set, is sent as is; otherwise
	// SenderOptions.Dedup computes one. FIFO queues only.
	DeduplicationID string
	// DedupKey feeds KeyDedup.
	DedupKey string
	// DelaySeconds delays the message, 0 to 900. Standard queues only: FIFO
	// queues refuse per-message delays.
	DelaySeconds int32
	// TraceHeader is sent as the AWSTraceHeader system attribute (AWS
	// X-Ray's trace header: 1 to 1,024 printable ASCII characters), which
	// counts toward neither the ten attributes nor the message size. When
	// empty, SenderOptions.Propagator may set it from the ctx.
	TraceHeader string
}

// Result is the outcome of one message.
type Result struct {
	MessageID       string
	SequenceNumber  string // FIFO only
	DeduplicationID string // the id used, FIFO only
	// Reordered is true when this message may sit behind a later message
	// of its group: SQS accepted the later one from a batch in which this
	// one failed, or a call carrying both may have stored the later one
	// alone (its answer was lost, or the SDK sent it more than once), and
	// this one was then sent again. It holds on a failed Result too, which
	// may be on the queue when Unconfirmed > 0. False means the message is
	// not behind a later one of its group. FIFO queues only.
	Reordered bool
	// Attempts counts the calls that carried this message (0 when it was
	// refused before any call). The SDK's retries inside one call are not
	// counted here.
	Attempts int
	// Unconfirmed counts the requests that carried this message and ended
	// without saying whether SQS stored it: a server error, a network error,
	// a timeout or cancellation in flight, an entry missing from a batch
	// response. Requests the SDK retried inside a call count too when the
	// client reports them: from its attempt results when the call succeeds;
	// when it fails with MaxAttemptsError, its earlier requests count, since
	// the SDK does not say which were throttled. A throttled request, a
	// client error and an entry SQS reported in Failed[] stored nothing and
	// do not count.
	//
	// On a standard queue each may have left a copy: the queue holds 1 to
	// 1+Unconfirmed copies of a message whose Err is nil, and 0 to
	// Unconfirmed of one whose Err is set. On a FIFO queue the deduplication
	// id makes them harmless: at most one copy within the 5-minute window.
	Unconfirmed int
	Err         error
}

// SenderOptions configure a Sender. Zero values mean the defaults.
type SenderOptions struct {
	// GroupID computes the group of a message without one (a customer id,
	// say). Default: none, so FIFO messages must carry GroupID.
	GroupID func(*Message) string
	// Dedup computes deduplication ids on FIFO queues. Default RandomDedup.
	Dedup Dedup
	// SendBackoff spaces sqskit's retries of a call after a transient
	// failure (throttling, 5xx, network, lost responses) that the SDK's own
	// retryer already gave up on. Default FullJitter, 100 ms base, 5 s cap.
	SendBackoff backoff.Strategy
	// SendMaxAttempts bounds the calls that carry one message, the first
	// included. Each call runs the SDK client's retryer too (the standard
	// one makes up to 3 requests, RetryMaxAttempts), so a message costs at
	// most SendMaxAttempts × RetryMaxAttempts requests. 0 means the default:
	// 3 on standard queues, where each request whose answer is lost can
	// leave a copy (9 requests, so 9 copies at worst, with the SDK's
	// defaults); 10 on FIFO queues, where retries carry the same
	// deduplication id and DedupWindow bounds them too. Negative is an
	// error.
	SendMaxAttempts int
	// DedupWindow is how long after its first attempt a message may still be
	// retried with its deduplication id: SQS's 5 minutes less a 30 s margin
	// for clock skew and time in transit. Default 4m30s; must be in (0, 5m].
	// FIFO queues only.
	DedupWindow time.Duration
	// MaxBatchBytes bounds one SendMessageBatch, in bytes. Default and
	// maximum 1 MiB. A message larger than it (up to MaxMessageBytes) goes
	// in a batch of its own.
	MaxBatchBytes int
	// MaxMessageBytes bounds one message, body and attributes, in bytes. Set
	// it to the queue's MaximumMessageSize if lower. Default and maximum
	// 1 MiB.
	MaxMessageBytes int
	// SendConcurrency bounds the SendMessageBatch calls one SendBatch call
	// keeps in flight at once, each with up to 10 messages; on FIFO queues
	// no two of them share a group. 0 means the default, 10; negative is an
	// error. It is also the default of BatcherOptions.SendConcurrency.
	//
	// Throughput is at most calls in flight × messages per call ÷ latency:
	// at 10 ms per call, 10 calls of 10 messages move up to 10,000 messages
	// a second, where one call at a time stops near 1,000. On FIFO queues
	// only as many calls can be in flight as there are groups with messages
	// waiting: one group is one call at a time. The bound is per SendBatch
	// call (and per Batcher), not per Sender: concurrent callers each have
	// their own. The default matches the idle connections per host that the
	// SDK's default HTTP client keeps (10), so calls reuse connections. A
	// FIFO queue without high throughput mode accepts 300 calls a second per
	// action: at 10 ms, 3 calls in flight reach that. Once a call is
	// throttled, the calls in flight halve and grow back slowly below
	// SendConcurrency (docs/fifo.md, Retries).
	SendConcurrency int
	// ContinueGroupAfterFailure sends later messages of a FIFO group even
	// after an earlier one failed for good. Default false: they fail with
	// GroupBlockedError, so the group's order holds.
	ContinueGroupAfterFailure bool
	// TracerProvider, when set, records a PRODUCER span "send <queue>" per
	// Send, per SendBatch call (with messaging.batch.message_count) and per
	// Batcher.Send; SQS calls are made with it, so the SDK's own spans
	// (sqs.Options.TracerProvider) nest under it (the Batcher's calls carry
	// its own ctx). Default none: smithy-go's interface (plug OpenTelemetry
	// in with smithyoteltracing.Adapt).
	TracerProvider tracing.TracerProvider
	// MeterProvider, when set, records messages sent
	// (messaging.client.sent.messages, with error.type on failure), SQS call
	// durations (messaging.client.operation.duration) and trace context
	// fields skipped for want of room (sqskit.send.trace_context.skipped).
	// Default none: smithy-go's interface (smithyotelmetrics.Adapt for
	// OpenTelemetry).
	MeterProvider metrics.MeterProvider
	// Propagator, when set, writes the ctx's trace context into every
	// message sent (Send's and SendBatch's ctx, each Batcher.Send's):
	// AWSTraceHeader from the key "X-Amzn-Trace-Id" (unless the message
	// sets TraceHeader), and String message attributes (W3C traceparent,
	// tracestate) within the ten-attribute and size budget, never pushing
	// out an attribute of the caller's (docs/fifo.md). With a
	// TracerProvider, the context written is the send span's. Default none:
	// nothing is added.
	Propagator handler.Propagator
	// Logger receives retries and failures, never bodies. Default silent.
	Logger *slog.Logger
}

const (
	defaultStandardMaxAttempts = 3
	defaultFIFOMaxAttempts     = 10
	defaultSendConcurrency     = 10
)

// Sender sends messages to one queue, FIFO or standard. It is safe for
// concurrent use; each call keeps its own messages' order.
type Sender struct {
	client API
	queue  *queueref.Ref // resolved on the first send when given by name
	fifo   bool
	opts   SenderOptions
	obs    observer

	winMu sync.Mutex
	win   throttle.Window // the last pipeline's, where the next starts
}

// ErrConfig matches every invalid option with errors.Is.
var ErrConfig = errors.New("fifo: invalid options")

// NewSender returns a Sender for queueURL, a queue URL or a queue name. FIFO
// is detected by the .fifo suffix (a name has it too), never by the presence
// of group ids. A name is resolved with GetQueueUrl on the first send, when
// client has that method (as *sqs.Client does): once, and again on the next
// send if it failed. Without it, or when the queue does not exist, sends
// fail with an error matching ErrConfig that says so.
func NewSender(client API, queueURL string, optFns ...func(*SenderOptions)) (*Sender, error) {
	var o SenderOptions
	for _, fn := range optFns {
		if fn != nil { // an option left unset by a condition
			fn(&o)
		}
	}
	if dispatch.IsNil(client) {
		return nil, fmt.Errorf("%w: nil client", ErrConfig)
	}
	if queueURL == "" {
		return nil, fmt.Errorf("%w: empty queue URL", ErrConfig)
	}
	isFIFO := sqsrule.IsFIFO(queueURL)
	if err := resolveOptions(&o, isFIFO); err != nil {
		return nil, err
	}
	return &Sender{client: client, queue: queueref.New(queueURL), fifo: isFIFO, opts: o, obs: newObserver(&o, queueURL)}, nil
}

func resolveOptions(o *SenderOptions, isFIFO bool) error {
	if o.Dedup == nil {
		o.Dedup = RandomDedup()
	}
	if o.SendBackoff == nil {
		o.SendBackoff = backoff.FullJitter{Base: 100 * time.Millisecond, Cap: 5 * time.Second}
	}
	if err := backoff.Validate(o.SendBackoff); err != nil {
		return fmt.Errorf("%w: SendBackoff: %w", ErrConfig, err)
	}
	switch {
	case o.SendMaxAttempts < 0:
		return fmt.Errorf("%w: SendMaxAttempts %d must be 1 or more", ErrConfig, o.SendMaxAttempts)
	case o.SendMaxAttempts == 0 && isFIFO:
		o.SendMaxAttempts = defaultFIFOMaxAttempts
	case o.SendMaxAttempts == 0:
		o.SendMaxAttempts = defaultStandardMaxAttempts
	}
	switch {
	case o.DedupWindow == 0:
		o.DedupWindow = sqsrule.DedupWindow - 30*time.Second
	case o.DedupWindow < 0 || o.DedupWindow > sqsrule.DedupWindow:
		return fmt.Errorf("%w: DedupWindow %v must be in (0, 5m]", ErrConfig, o.DedupWindow)
	}
	switch {
	case o.SendConcurrency < 0:
		return fmt.Errorf("%w: SendConcurrency %d is negative", ErrConfig, o.SendConcurrency)
	case o.SendConcurrency == 0:
		o.SendConcurrency = defaultSendConcurrency
	}
	var err error
	if o.MaxBatchBytes, err = byteLimit("MaxBatchBytes", o.MaxBatchBytes); err != nil {
		return err
	}
	if o.MaxMessageBytes, err = byteLimit("MaxMessageBytes", o.MaxMessageBytes); err != nil {
		return err
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

// prepared is a validated message with its group and dedup id fixed, and
// its progress through a pipeline.
type prepared struct {
	// index orders the messages: the position in the SendBatch call, or the
	// arrival order in a Batcher.
	index int
	msg   *Message
	attrs map[string]types.MessageAttributeValue // msg's, or a copy with trace context added
	// traceHeader is the AWSTraceHeader sent: msg's, or the Propagator's.
	traceHeader string
	groupID     string
	// orderGroup is the group whose order the sender keeps: the group id on
	// FIFO queues, "" on standard queues, where SQS keeps no order.
	orderGroup  string
	dedupID     string
	size        int
	first       time.Time // first attempt; zero before it
	attempts    int
	unconfirmed int
	// entryFailed: SQS failed this entry on its own, so a resend keeps
	// later messages of its group out of the same batch.
	entryFailed bool
	// reordered: SQS accepted a later message of the group from a batch in
	// which this one failed.
	reordered bool

	group      *group        // its FIFO group in the pipeline; nil on standard queues
	heapIndex  int           // position in the pipeline heap that holds it
	readyAt    time.Time     // when a retry may go
	retryCause error         // the failure it waits to retry; nil otherwise
	lastDelay  time.Duration // the last SendBackoff delay it waited
	err        error         // its final error, once it failed
	reply      chan Result   // where a Batcher sends its Result
}

// result is p's Result so far, without the outcome.
func (p *prepared) result() Result {
	return Result{DeduplicationID: p.dedupID, Reordered: p.reordered, Attempts: p.attempts, Unconfirmed: p.unconfirmed}
}

// prepare validates m, fixes its group and dedup ids, and adds ctx's trace
// context when a Propagator is set, before any call.
func (s *Sender) prepare(ctx context.Context, index int, m *Message) (*prepared, error) {
	p, err := s.validate(index, m)
	if err != nil {
		return nil, err
	}
	if s.opts.Propagator != nil {
		if skipped := s.inject(ctx, p); len(skipped) > 0 {
			s.obs.traceSkipped(ctx, index, skipped)
		}
	}
	return p, nil
}

// validate checks m as SQS would and fixes its group and dedup ids.
func (s *Sender) validate(index int, m *Message) (*prepared, error) {
	if err := sqsrule.CheckBody(m.Body); err != nil {
		return nil, invalid(index, err)
	}
	if err := sqsrule.CheckAttributes(m.Attributes); err != nil {
		return nil, invalid(index, err)
	}
	if err := sqsrule.CheckSize(m.Body, m.Attributes, s.opts.MaxMessageBytes); err != nil {
		return nil, invalid(index, err)
	}
	if m.TraceHeader != "" {
		if err := checkTraceHeader(m.TraceHeader); err != nil {
			return nil, invalid(index, err)
		}
	}
	p := &prepared{index: index, msg: m, attrs: m.Attributes, traceHeader: m.TraceHeader, groupID: s.groupOf(m), size: sqsrule.MessageSize(m.Body, m.Attributes)}
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
	p.orderGroup = p.groupID
	if m.DelaySeconds != 0 {
		return nil, &ValidationError{Index: index, Field: "DelaySeconds", Code: sqsrule.CodeInvalidParameterValue, Reason: "FIFO queues take no per-message delay; set the queue's DelaySeconds"}
	}
	if p.groupID == "" {
		return nil, &ValidationError{Index: index, Field: "MessageGroupId", Code: sqsrule.CodeMissingParameter, Reason: "FIFO queues need a group id: set Message.GroupID or SenderOptions.GroupID"}
	}
	p.dedupID = m.DeduplicationID
	if p.dedupID == "" {
		id, err := s.opts.Dedup(m, p.groupID)
		if err != nil {
			return nil, &ValidationError{Index: index, Field: "MessageDeduplicationId", Code: sqsrule.CodeInvalidParameterValue, Reason: err.Error(), Err: err}
		}
		p.dedupID = id
	}
	if err := sqsrule.CheckDedupID(p.dedupID); err != nil {
		return nil, invalid(index, err)
	}
	return p, nil
}

// groupOf is m's group id: its own, or the one SenderOptions.GroupID gives.
func (s *Sender) groupOf(m *Message) string {
	if m.GroupID == "" && s.opts.GroupID != nil {
		return s.opts.GroupID(m)
	}
	return m.GroupID
}

// Send sends one message, retrying transient failures (with the same
// deduplication id, inside the dedup window, on FIFO queues) up to
// SendMaxAttempts calls. The error is the Result's Err.
func (s *Sender) Send(ctx context.Context, m Message) (Result, error) {
	ctx, span := s.obs.startSend(ctx, 1)
	res, err := s.send(ctx, &m)
	s.obs.endSend(ctx, span, res)
	return res, err
}

func (s *Sender) send(ctx context.Context, m *Message) (Result, error) {
	url, err := s.queueURL(ctx)
	if err != nil {
		return Result{Err: err}, err
	}
	p, err := s.prepare(ctx, 0, m)
	if err != nil {
		return Result{Err: err}, err
	}
	in := &sqs.SendMessageInput{
		QueueUrl: aws.String(url), MessageBody: aws.String(m.Body), MessageAttributes: p.attrs,
		MessageSystemAttributes: systemAttributes(p.traceHeader),
		DelaySeconds:            m.DelaySeconds, MessageGroupId: optional(p.groupID), MessageDeduplicationId: optional(p.dedupID),
	}
	fail := func(err error) (Result, error) {
		res := p.result()
		res.Err = err
		return res, err
	}
	var prev time.Duration
	for {
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		s.markAttempt(p)
		start := s.obs.call()
		out, err := s.client.SendMessage(ctx, in)
		s.obs.called(ctx, start, err)
		if err == nil {
			p.unconfirmed += sdkUnconfirmed(out.ResultMetadata)
			res := p.result()
			res.MessageID, res.SequenceNumber = aws.ToString(out.MessageId), aws.ToString(out.SequenceNumber)
			return res, nil
		}
		p.unconfirmed += callUnconfirmed(err)
		if !sqserr.Transient(err) {
			return fail(err)
		}
		d, failed := s.plan([]*prepared{p}, prev, err)
		if failed[0] != nil {
			return fail(failed[0])
		}
		prev = d
		if err := s.sleep(ctx, d, 1, err); err != nil {
			return fail(err)
		}
	}
}

// markAttempt records an attempt of ps, and the time of the first.
func (s *Sender) markAttempt(ps ...*prepared) {
	now := time.Now()
	for _, p := range ps {
		if p.first.IsZero() {
			p.first = now
		}
		p.attempts++
	}
}

// plan decides the retry of ps after cause. A message out of attempts, or
// stopped by SendBackoff, gets cause as its final error in failed; on FIFO
// queues, one whose deduplication window would close before the retry gets
// a WindowExceededError. The others wait d.
func (s *Sender) plan(ps []*prepared, prev time.Duration, cause error) (d time.Duration, failed []error) {
	failed = make([]error, len(ps))
	attempts := 0
	for i, p := range ps {
		if p.attempts >= s.opts.SendMaxAttempts {
			failed[i] = cause
			continue
		}
		attempts = max(attempts, p.attempts)
	}
	if attempts == 0 {
		return 0, failed
	}
	d = s.delay(attempts-1, prev, cause)
	now := time.Now()
	for i, p := range ps {
		switch {
		case failed[i] != nil:
		case d == backoff.Stop:
			failed[i] = cause
		case s.fifo && now.Add(d).Sub(p.first) >= s.opts.DedupWindow:
			failed[i] = &WindowExceededError{DeduplicationID: p.dedupID, FirstAttempt: p.first, Last: cause}
		}
	}
	return d, failed
}

// sleep waits d before retrying n messages after cause, or returns cause
// joined with ctx's error if ctx ends first.
func (s *Sender) sleep(ctx context.Context, d time.Duration, n int, cause error) error {
	s.opts.Logger.LogAttrs(ctx, slog.LevelDebug, "fifo: retrying send", slog.Int("messages", n), slog.Duration("delay", d), slog.String("error", cause.Error()))
	if !wait.Sleep(ctx, d) {
		return errors.Join(cause, ctx.Err())
	}
	return nil
}

func (s *Sender) delay(attempt int, prev time.Duration, cause error) time.Duration {
	if es, ok := s.opts.SendBackoff.(backoff.ErrorStrategy); ok {
		return es.DelayFor(attempt, prev, cause)
	}
	return s.opts.SendBackoff.Delay(attempt, prev)
}

// systemAttributes carries an AWSTraceHeader, or nothing.
func systemAttributes(traceHeader string) map[string]types.MessageSystemAttributeValue {
	if traceHeader == "" {
		return nil
	}
	return map[string]types.MessageSystemAttributeValue{
		string(types.MessageSystemAttributeNameForSendsAWSTraceHeader): {DataType: aws.String("String"), StringValue: aws.String(traceHeader)},
	}
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return aws.String(s)
}

// queueURL is the queue's URL, resolved from its name the first time.
func (s *Sender) queueURL(ctx context.Context) (string, error) {
	url, err := s.queue.Resolve(ctx, s.client)
	switch {
	case errors.Is(err, queueref.ErrUnresolved):
		return "", fmt.Errorf("%w: %w", ErrConfig, err)
	case err != nil:
		return "", fmt.Errorf("fifo: %w", err)
	}
	return url, nil
}
