package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/metrics"
	"github.com/aws/smithy-go/tracing"

	"github.com/sqskit/sqskit/fifo"
	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/internal/dispatch"
	"github.com/sqskit/sqskit/internal/parking"
	"github.com/sqskit/sqskit/internal/queueref"
	"github.com/sqskit/sqskit/internal/sqserr"
	"github.com/sqskit/sqskit/internal/sqsrule"
)

// ParkerAPI is the part of the SQS client a Parker calls.
type ParkerAPI interface {
	SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
	ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
}

var _ ParkerAPI = (*sqs.Client)(nil)

var _ handler.Parker = (*Parker)(nil)

// ErrParkRejected matches the error of a message the parking queue accepts
// in no form, not even as its body alone: it needs a human where it is.
var ErrParkRejected = errors.New("consumer: parking queue accepts the message in no form")

// ParkerOptions configure a Parker. Zero values mean the defaults.
type ParkerOptions struct {
	// CounterAttribute names the replayer's attempt counter, carried with
	// the parked message (replay.Policy.CounterAttribute). Default
	// replay.DefaultCounterAttribute.
	CounterAttribute string
	// MaxMessageBytes is the parking queue's size limit, 1 KiB to 1 MiB.
	// Default 1 MiB.
	MaxMessageBytes int
	// Logger receives parkings and their fallbacks, never bodies or
	// attribute values. Default silent.
	Logger *slog.Logger
	// TracerProvider and MeterProvider, when set, record the parking
	// queue's sends ("send <queue>" spans, messaging.client.sent.messages),
	// as fifo.SenderOptions does. Default none.
	TracerProvider tracing.TracerProvider
	MeterProvider  metrics.MeterProvider
}

// maxParkDetail bounds the error text a parked message carries: enough for
// a human, and no error can make the message too large to park.
const maxParkDetail = 1024

// maxParkReason bounds the reason's length, a word a human filters by.
const maxParkReason = 128

// Parker holds and parks messages of one queue: Park sends a message to the
// parking queue (the operator queue) with its reason and provenance in
// package replay's metadata format (replay.Metadata), Hold keeps it
// invisible. It serves the Consumer's Escalate outcomes and, as a
// handler.Parker, the Lambda adapter's. It is safe for concurrent use.
type Parker struct {
	client  ParkerAPI
	queue   *queueref.Ref // the source queue, resolved on first use when a name
	parking string
	sender  *fifo.Sender
	opts    ParkerOptions
}

// NewParker returns a Parker for messages received from queueURL, parking
// them on parkingQueueURL, which must be another queue. Either may be a
// queue name, resolved on first use with the client's GetQueueUrl (see
// New); a name and a URL are the same queue when the URL ends with the name.
// Invalid options
// return an error matching ErrConfig; a nil option function is skipped.
func NewParker(client ParkerAPI, queueURL, parkingQueueURL string, optFns ...func(*ParkerOptions)) (*Parker, error) {
	var o ParkerOptions
	for _, fn := range optFns {
		if fn != nil {
			fn(&o)
		}
	}
	switch {
	case dispatch.IsNil(client):
		return nil, configError("nil client")
	case queueURL == "" || parkingQueueURL == "":
		return nil, configError("empty queue or parking queue URL")
	case queueref.Same(queueURL, parkingQueueURL):
		return nil, configError("the parking queue is the queue itself: a parked message would come back to be parked again")
	case o.CounterAttribute == parking.MetadataAttribute:
		return nil, configError("CounterAttribute is the metadata attribute %s", parking.MetadataAttribute)
	case o.CounterAttribute != "" && sqsrule.CheckAttributeName(o.CounterAttribute) != nil:
		return nil, configError("CounterAttribute %q is not a valid attribute name", o.CounterAttribute)
	case o.MaxMessageBytes != 0 && (o.MaxMessageBytes < sqsrule.MinMessageBytesAttr || o.MaxMessageBytes > sqsrule.MaxMessageBytes):
		return nil, configError("MaxMessageBytes %d must be 1 KiB to 1 MiB", o.MaxMessageBytes)
	}
	if o.CounterAttribute == "" {
		o.CounterAttribute = parking.DefaultCounterAttribute
	}
	if o.MaxMessageBytes == 0 {
		o.MaxMessageBytes = sqsrule.MaxMessageBytes
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	sender, err := fifo.NewSender(batchOnly{client}, parkingQueueURL, func(so *fifo.SenderOptions) {
		so.Dedup = fifo.ProvidedDedup() // every parked message carries its own id
		so.MaxMessageBytes = o.MaxMessageBytes
		so.Logger, so.TracerProvider, so.MeterProvider = o.Logger, o.TracerProvider, o.MeterProvider
	})
	if err != nil {
		return nil, configError("parking queue: %w", err)
	}
	return &Parker{client: client, queue: queueref.New(queueURL), parking: parkingQueueURL, sender: sender, opts: o}, nil
}

// batchOnly lets a ParkerAPI serve fifo.Sender, whose SendBatch calls
// SendMessageBatch only.
type batchOnly struct{ ParkerAPI }

func (batchOnly) SendMessage(context.Context, *sqs.SendMessageInput, ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	return nil, errors.New("consumer: the parker sends in batches only")
}

// Park sends m to the parking queue with reason and cause's text (cut to
// 1 KiB) in its metadata, and its provenance: the original MessageId and
// first failure carried from metadata it already has, the
// DeadLetterQueueSourceArn SQS set, and the queue it was parked from. On a
// FIFO parking queue it keeps its group (or joins "sqskit-escalations") and
// its deduplication id derives from its MessageId, so a second park of the
// same message after a crash is dropped by SQS. When SQS refuses it, it is
// sent again with its attributes moved into the metadata, then left out,
// then as its body alone. Park returns nil only once the parking queue
// acknowledged it; an error matching ErrParkRejected when SQS accepts it in
// no form; any other error when the send failed (it may be tried again).
func (p *Parker) Park(ctx context.Context, m *handler.Message, reason string, cause error) error {
	if m == nil {
		return fmt.Errorf("consumer: park: nil message")
	}
	from, err := p.sourceURL(ctx)
	if err != nil {
		return fmt.Errorf("consumer: park: %w", err)
	}
	out := p.outgoing(m, from, reason, cause)
	var last error
	for f := parking.FormWhole; f <= parking.FormBodyOnly; f++ {
		msg, _, err := out.Build(f)
		if err == nil {
			err = p.sender.SendBatch(ctx, []fifo.Message{msg})[0].Err
			if err == nil {
				if f > parking.FormWhole {
					p.opts.Logger.LogAttrs(ctx, slog.LevelWarn, "consumer: parked with less of the message than it had",
						slog.String("message_id", m.ID), slog.Int("form", int(f)), slog.String("refused", last.Error()))
				}
				return nil
			}
			if !refused(err) {
				return fmt.Errorf("consumer: park: %w", parkingConfig(err))
			}
		}
		last = err
	}
	p.opts.Logger.LogAttrs(ctx, slog.LevelError, "consumer: the parking queue accepts the message in no form",
		slog.String("message_id", m.ID), slog.String("reason", reason), slog.String("error", last.Error()))
	return fmt.Errorf("%w: %v", ErrParkRejected, last)
}

// outgoing builds the escalation of m in the replayer's format.
func (p *Parker) outgoing(m *handler.Message, from, reason string, cause error) parking.Outgoing {
	msg := &types.Message{MessageId: aws.String(m.ID), Body: aws.String(m.Body), Attributes: m.Attributes,
		MessageAttributes: SDKAttributes(m.MessageAttributes)}
	counter := p.opts.CounterAttribute
	md, bad := parking.Read(msg.MessageAttributes, counter)
	count := md.Attempt
	switch n, ok, err := parking.Counter(msg.MessageAttributes, counter); {
	case bad != nil:
		// Metadata the replayer did not write: kept aside for the human,
		// with the counter, never read.
		md = parking.Metadata{Moved: parking.MergeMoved(parking.KeepAside(msg.MessageAttributes, parking.MetadataAttribute),
			parking.KeepAside(msg.MessageAttributes, counter))}
		count = 0
	case err != nil || ok && md.Attempt != 0:
		md.Moved = parking.MergeMoved(md.Moved, parking.KeepAside(msg.MessageAttributes, counter))
		count = 0
	case ok:
		count = n
	}
	if md.OriginalID == "" {
		md.OriginalID = m.ID
	}
	if md.FirstFailure.IsZero() {
		md.FirstFailure = time.Now().UTC().Truncate(time.Millisecond)
	}
	md.SourceArn = m.Attributes[string(types.MessageSystemAttributeNameDeadLetterQueueSourceArn)]
	md.From = from
	if reason == "" {
		reason = handler.ReasonPermanent
	}
	md.Reason = parking.Reason(truncate(reason, maxParkReason))
	md.Detail = ""
	if cause != nil {
		md.Detail = truncate(cause.Error(), maxParkDetail)
	}
	return parking.Outgoing{Message: msg, Target: p.parking, Escalation: true, CounterAttribute: counter, Count: count,
		Attempt: count, Metadata: md, MaxMessageBytes: p.opts.MaxMessageBytes}
}

// refused reports a send SQS will not take as it is, which a smaller form
// may cure: refused before the call, an entry failed with a sender fault,
// or a client error for the whole call (the batch holds only this message).
// Throttling, server errors, a missing queue, denied access and the end of
// ctx are not: no form cures them.
func refused(err error) bool {
	var entry *fifo.EntryError
	switch {
	case errors.Is(err, fifo.ErrInvalid):
		return true
	case errors.As(err, &entry):
		return entry.SenderFault
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return false
	}
	return sqserr.Code(err) != "" && !sqserr.Transient(err) && !sqserr.Final(err)
}

// truncate cuts s to at most n bytes, on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Hold makes m invisible for d, from now: whole seconds rounded up (never
// visible before d), at most 12 h (SQS refuses a hold past 12 h from the
// receive, and says so in the error); a negative d is 0, visible now.
func (p *Parker) Hold(ctx context.Context, m *handler.Message, d time.Duration) error {
	if m == nil {
		return fmt.Errorf("consumer: hold: nil message")
	}
	url, err := p.sourceURL(ctx)
	if err != nil {
		return fmt.Errorf("consumer: hold: %w", err)
	}
	_, err = p.client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url),
		ReceiptHandle: aws.String(m.ReceiptHandle), VisibilityTimeout: parking.HoldSeconds(d)})
	if err != nil {
		return fmt.Errorf("consumer: hold: %w", err)
	}
	return nil
}
