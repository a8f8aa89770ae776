package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/spf13/cobra"

	"github.com/sqskit/sqskit/internal/parking"
	"github.com/sqskit/sqskit/internal/queueref"
	"github.com/sqskit/sqskit/replay"
)

// peekNote is said before every peek and show: looking is not free.
const peekNote = "note: peeking receives messages, which raises each one's ApproximateReceiveCount; they are made visible again at once"

// peekHold is how long a peeked message stays invisible if sqskit cannot
// release it (killed, or the release call fails): long enough for one
// peek not to see a message twice, short enough to come back soon.
const peekHold = 60

// message is one message as peek and show explain it: `sqskit show -o json`.
type message struct {
	ID           string    `json:"id"`
	Body         string    `json:"body"`
	SentAt       time.Time `json:"sent,omitzero"`
	ReceiveCount int       `json:"receive_count"`
	GroupID      string    `json:"group_id,omitempty"`
	DedupID      string    `json:"deduplication_id,omitempty"`
	// DeadLetterSource is the queue SQS dead-lettered it from
	// (DeadLetterQueueSourceArn).
	DeadLetterSource string `json:"dead_letter_source,omitempty"`
	TraceHeader      string `json:"trace_header,omitempty"`
	// Counter is the replay counter (the AWS sample's sqs-dlq-replay-nb, or
	// --counter-attribute), kept in the metadata when it did not fit.
	Counter      *int   `json:"counter,omitempty"`
	CounterError string `json:"counter_error,omitempty"`
	// Replay is the replayer's metadata, decoded.
	Replay      *replayInfo `json:"replay,omitempty"`
	ReplayError string      `json:"replay_error,omitempty"`
	// Attributes are the producer's message attributes (the replayer's own
	// removed, any it moved aside put back).
	Attributes map[string]string `json:"attributes,omitempty"`
	// System is every system attribute SQS returned.
	System map[string]string `json:"system,omitempty"`
}

// replayInfo is replay.Metadata for people and scripts.
type replayInfo struct {
	Reason       string        `json:"reason,omitempty"`
	Detail       string        `json:"detail,omitempty"`
	Attempt      int           `json:"attempt,omitempty"`
	OriginalID   string        `json:"original_id,omitempty"`
	FirstFailure time.Time     `json:"first_failure,omitzero"`
	SourceArn    string        `json:"source_arn,omitempty"`
	ParkedFrom   string        `json:"parked_from,omitempty"`
	LastDelay    time.Duration `json:"last_delay_ns,omitempty"`
	Moved        []string      `json:"moved,omitempty"`
}

// peekResult is `sqskit peek -o json` (`show -o json` is its one message).
type peekResult struct {
	Queue string `json:"queue"`
	// The queue's approximate counts before the peek: in-flight and
	// delayed messages cannot be received, so a peek does not show them.
	Visible  int64     `json:"visible"`
	InFlight int64     `json:"in_flight"`
	Delayed  int64     `json:"delayed"`
	Received int       `json:"received"`
	Released int       `json:"released"`
	Messages []message `json:"messages"`
}

func newPeekCmd(a *app) *cobra.Command {
	var n int
	var counter string
	cmd := &cobra.Command{
		Use:   "peek QUEUE",
		Short: "Show a queue's messages, the replay counter and metadata decoded, and make them visible again",
		Long: `peek receives up to -n messages and shows each with its receive count, the
replay counter, the replayer's metadata decoded (reason, attempts, first
failure, the queue it came from, trace header) and its attributes; then it
makes every one visible again at once (ChangeMessageVisibility 0).

A peek is a receive: it raises each message's ApproximateReceiveCount. On a
queue with a redrive policy, a message at its maxReceiveCount moves to the
dead-letter queue when received, so peek asks first there (--yes answers).
Messages it cannot release come back after 60 s.

On a FIFO queue a receive returns the first messages of each group, and the
rest of a group stay hidden while those are held: peek shows the head of
each group, not every message.`,
		Example: `  sqskit peek orders-dlq
  sqskit peek orders-ops -n 50 -o json
  sqskit peek orders --yes   # has a redrive policy: peeking may dead-letter`,
		Args: exactArgs("QUEUE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if n < 1 || n > 1000 {
				return usageError("-n %d: from 1 to 1000", n)
			}
			res, err := a.browse(cmd.Context(), args[0], counter, n, "")
			if err != nil {
				return err
			}
			return a.emit(res, func(w io.Writer) {
				row(w, "ID", "SENT", "RECEIVES", "COUNTER", "REASON", "BODY")
				for _, m := range res.Messages {
					row(w, m.ID, stamp(m.SentAt), m.ReceiveCount, orDash(m.Counter), m.reason(), preview(m.Body, 40))
				}
				row(w)
				row(w, fmt.Sprintf("%d received, %d released. Before the peek %s held about %d visible, %d in flight, %d delayed: a peek sees only visible ones.", res.Received, res.Released, res.Queue, res.Visible, res.InFlight, res.Delayed))
			})
		},
	}
	cmd.Flags().IntVarP(&n, "number", "n", 10, "how many messages to look at, 1 to 1000")
	cmd.Flags().StringVar(&counter, "counter-attribute", replay.DefaultCounterAttribute, "the replay counter's attribute")
	return cmd
}

func newShowCmd(a *app) *cobra.Command {
	var limit int
	var counter string
	cmd := &cobra.Command{
		Use:   "show QUEUE MESSAGE-ID",
		Short: "Find one message by its MessageId and explain it in full",
		Long: `show receives from the queue until it finds the message with MESSAGE-ID, or
has seen --max messages, or the queue returns none; it shows that message in
full (body, attributes, system attributes, replay counter and metadata) and
makes every message it received visible again at once.

Like peek, it raises the ApproximateReceiveCount of every message it sees,
and asks first on a queue with a redrive policy.`,
		Example: `  sqskit show orders-dlq 5fb1c3f0-8d0e-4c53-9f8f-1b7f2b7b3c1a
  sqskit show orders-dlq 5fb1c3f0-8d0e-4c53-9f8f-1b7f2b7b3c1a -o json | jq .replay`,
		Args: exactArgs("QUEUE", "MESSAGE-ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 1 || limit > 100000 {
				return usageError("--max %d: from 1 to 100000", limit)
			}
			if strings.TrimSpace(args[1]) == "" {
				return usageError("no message id given")
			}
			res, err := a.browse(cmd.Context(), args[0], counter, limit, args[1])
			if err != nil {
				return err
			}
			if len(res.Messages) == 0 {
				return fmt.Errorf("message %s is not among the %d messages received from %s (all released): it may be in flight, delayed, or gone", args[1], res.Received, res.Queue)
			}
			m := res.Messages[0]
			return a.emit(m, func(w io.Writer) { m.detail(w) })
		},
	}
	cmd.Flags().IntVar(&limit, "max", 1000, "receive at most this many messages looking for it")
	cmd.Flags().StringVar(&counter, "counter-attribute", replay.DefaultCounterAttribute, "the replay counter's attribute")
	return cmd
}

// exactArgs wants exactly the named arguments, as a usage error.
func exactArgs(names ...string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != len(names) {
			return usageError("want %s, got %d argument(s)", strings.Join(names, " "), len(args))
		}
		return nil
	}
}

// browse receives up to limit messages from queue (stopping at the message
// want, when want is not ""), explains those it keeps, and releases every
// one it received. It asks before receiving from a queue with a redrive
// policy.
func (a *app) browse(ctx context.Context, queue, counter string, limit int, want string) (res peekResult, err error) {
	url, err := a.queueURL(ctx, queue)
	if err != nil {
		return peekResult{}, err
	}
	c, err := a.sqs(ctx)
	if err != nil {
		return peekResult{}, err
	}
	res = peekResult{Queue: queueref.Name(url), Messages: []message{}}
	attrs, err := queueAttributes(ctx, c, url, queueref.Name(url))
	if err != nil {
		return res, err
	}
	q := describeQueue(url, attrs)
	res.Visible, res.InFlight, res.Delayed = q.Visible, q.InFlight, q.Delayed
	if rp, ok := parseRedrive(attrs["RedrivePolicy"]); ok {
		if err := a.confirm(ctx, fmt.Sprintf("%s has a redrive policy (maxReceiveCount %d, to %s) and a peek receives: a message at its limit moves to %s", res.Queue, rp.maxReceiveCount, rp.dlq, rp.dlq), "yes"); err != nil {
			return res, err
		}
	}
	fmt.Fprintln(a.term.err, peekNote)

	var received []types.Message
	defer func() {
		// Release on a fresh context: a cancelled peek still gives back
		// what it took.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		res.Released = releaseAll(rctx, c, url, received)
		if err != nil && len(received) > 0 {
			err = fmt.Errorf("%w (%d of the %d messages received were made visible again; the rest come back within %d s)", err, res.Released, len(received), peekHold)
		}
	}()
	// A one-second long poll: a short poll asks only some of SQS's
	// servers and can answer nothing while messages wait.
	var wait int32 = 1
	if a.shortPoll {
		wait = 0
	}
	seen := map[string]bool{}
	// show may receive many before it finds its message: say how far it is.
	bar := a.progress("receiving from "+res.Queue, limit)
	defer bar.finish()
	for len(received) < limit {
		out, err := receiveUninterrupted(ctx, c, &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(url),
			MaxNumberOfMessages:         int32(min(10, limit-len(received))),
			VisibilityTimeout:           peekHold,
			WaitTimeSeconds:             wait,
			MessageAttributeNames:       []string{"All"},
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		})
		if err != nil {
			if out != nil { // interrupted: release what the receive took
				received = append(received, out.Messages...)
			}
			return res, fmt.Errorf("receive from %s: %w", res.Queue, err)
		}
		bar.add(len(out.Messages))
		fresh := 0
		for _, m := range out.Messages {
			received = append(received, m)
			id := aws.ToString(m.MessageId)
			if seen[id] {
				continue
			}
			seen[id] = true
			fresh++
			if want == "" || id == want {
				res.Messages = append(res.Messages, explain(m, counter))
			}
		}
		res.Received = len(received)
		if fresh == 0 || (want != "" && len(res.Messages) > 0) {
			break
		}
	}
	return res, nil
}

// releaseAll makes messages visible again at once and returns how many it
// released.
func releaseAll(ctx context.Context, c *sqs.Client, url string, ms []types.Message) int {
	handles := make([]string, len(ms))
	for i, m := range ms {
		handles[i] = aws.ToString(m.ReceiptHandle)
	}
	released, _ := release(ctx, c, url, handles)
	return released
}

// release makes the messages of these receipt handles visible again at
// once (ChangeMessageVisibility 0), ten a call, and counts those released
// and those not: a message not released comes back after its visibility
// timeout.
func release(ctx context.Context, c *sqs.Client, url string, handles []string) (released, failed int) {
	for chunk := range slices.Chunk(handles, 10) {
		entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, len(chunk))
		for i, h := range chunk {
			entries[i] = types.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(h), VisibilityTimeout: 0}
		}
		out, err := c.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(url), Entries: entries})
		if err != nil {
			failed += len(chunk)
			continue
		}
		released += len(out.Successful)
		failed += len(out.Failed)
	}
	return released, failed
}

// explain decodes a received message.
func explain(m types.Message, counterAttr string) message {
	x := message{ID: aws.ToString(m.MessageId), Body: aws.ToString(m.Body), System: m.Attributes}
	sys := m.Attributes
	if ms, err := strconv.ParseInt(sys["SentTimestamp"], 10, 64); err == nil {
		x.SentAt = time.UnixMilli(ms).UTC()
	}
	x.ReceiveCount, _ = strconv.Atoi(sys["ApproximateReceiveCount"])
	x.GroupID, x.DedupID = sys["MessageGroupId"], sys["MessageDeduplicationId"]
	if arn := sys["DeadLetterQueueSourceArn"]; arn != "" {
		x.DeadLetterSource = arn[strings.LastIndex(arn, ":")+1:]
	}
	x.TraceHeader = parking.TraceHeader(sys)

	if n, ok, err := parking.Counter(m.MessageAttributes, counterAttr); err != nil {
		x.CounterError = err.Error()
	} else if ok {
		x.Counter = &n
	}
	if _, ok := m.MessageAttributes[replay.MetadataAttribute]; ok {
		md, bad := parking.Read(m.MessageAttributes, counterAttr)
		if bad != nil {
			x.ReplayError = fmt.Sprintf("%s: %s", bad.Reason, bad.Detail)
		} else {
			x.Replay = &replayInfo{
				Reason: string(md.Reason), Detail: md.Detail, Attempt: md.Attempt, OriginalID: md.OriginalID,
				FirstFailure: md.FirstFailure, SourceArn: md.SourceArn, ParkedFrom: md.From, LastDelay: md.LastDelay,
				Moved: slices.Sorted(maps.Keys(md.Moved)),
			}
			if x.Counter == nil && md.Attempt > 0 {
				n := md.Attempt
				x.Counter = &n
			}
		}
	}
	user := replay.Restore(m.MessageAttributes, counterAttr)
	if len(user) > 0 {
		x.Attributes = map[string]string{}
		for k, v := range user {
			switch {
			case v.StringValue != nil:
				x.Attributes[k] = fmt.Sprintf("%s=%s", aws.ToString(v.DataType), aws.ToString(v.StringValue))
			default:
				x.Attributes[k] = fmt.Sprintf("%s (%d bytes)", aws.ToString(v.DataType), len(v.BinaryValue))
			}
		}
	}
	return x
}

func (m message) reason() string {
	switch {
	case m.Replay != nil && m.Replay.Reason != "":
		return m.Replay.Reason
	case m.ReplayError != "":
		return "unreadable metadata"
	default:
		return "-"
	}
}

// detail writes one message for people, a field a line.
func (m message) detail(w io.Writer) {
	field := func(k string, v any) {
		if s := fmt.Sprint(v); s != "" && s != "0" && s != "0s" {
			row(w, k+":", s)
		}
	}
	field("id", m.ID)
	field("sent", stamp(m.SentAt))
	row(w, "receives:", m.ReceiveCount)
	field("group", m.GroupID)
	field("dedup id", m.DedupID)
	field("dead-lettered from", m.DeadLetterSource)
	field("trace header", m.TraceHeader)
	row(w, "replay counter:", orDash(m.Counter))
	field("counter error", m.CounterError)
	if r := m.Replay; r != nil {
		field("reason", r.Reason)
		field("detail", r.Detail)
		field("attempt", r.Attempt)
		field("original id", r.OriginalID)
		if !r.FirstFailure.IsZero() {
			field("first failure", stamp(r.FirstFailure))
		}
		field("source", r.SourceArn)
		field("parked from", r.ParkedFrom)
		field("last delay", r.LastDelay)
		if len(r.Moved) > 0 {
			field("moved aside", strings.Join(r.Moved, ", "))
		}
	}
	field("metadata error", m.ReplayError)
	for _, k := range slices.Sorted(maps.Keys(m.Attributes)) {
		row(w, "attribute "+k+":", m.Attributes[k])
	}
	for _, k := range slices.Sorted(maps.Keys(m.System)) {
		row(w, "system "+k+":", m.System[k])
	}
	row(w, "body:", m.Body)
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func orDash(n *int) string {
	if n == nil {
		return "-"
	}
	return strconv.Itoa(*n)
}

// preview is the start of a body on one line.
func preview(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
