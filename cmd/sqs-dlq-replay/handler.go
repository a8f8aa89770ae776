package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/arn"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	sqshandler "github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/internal/queueref"
	"github.com/sqskit/sqskit/internal/sqsrule"
	"github.com/sqskit/sqskit/replay"
)

// errNotReplayed is the error of an invocation with records it did not
// replay: Lambda then leaves them in the DLQ, as the sample's exception did.
var errNotReplayed = errors.New("sqs-dlq-replay: records not replayed")

// handler serves the Lambda invocations. It keeps one Replayer per DLQ (an
// event source), built at its first record, since the sample's environment
// does not name the DLQ.
type handler struct {
	client replay.API
	cfg    config
	policy replay.Policy
	log    *slog.Logger

	mu        sync.Mutex
	replayers map[string]*source // by event source ARN
}

// source is one DLQ the function serves.
type source struct {
	url      string
	replayer *replay.Replayer
	err      error // why it cannot be served
}

func newHandler(client replay.API, cfg config, log *slog.Logger) *handler {
	return &handler{client: client, cfg: cfg, policy: cfg.policy(), log: log, replayers: map[string]*source{}}
}

// handle is the Lambda handler. It replays what it can, and reports the
// rest as the configuration says (see the package doc).
func (h *handler) handle(ctx context.Context, event events.SQSEvent) (events.SQSEventResponse, error) {
	var resp events.SQSEventResponse
	var replayed []replayedRecord
	bySource := map[string][]events.SQSMessage{}
	var order []string
	for _, rec := range event.Records {
		if _, ok := bySource[rec.EventSourceARN]; !ok {
			order = append(order, rec.EventSourceARN)
		}
		bySource[rec.EventSourceARN] = append(bySource[rec.EventSourceARN], rec)
	}
	for _, arn := range order {
		recs := bySource[arn]
		src := h.source(arn)
		if src.err != nil {
			h.log.LogAttrs(ctx, slog.LevelError, "sqs-dlq-replay: cannot serve this event source", slog.String("event_source_arn", arn), slog.String("error", src.err.Error()))
			for _, rec := range recs {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: rec.MessageId})
			}
			continue
		}
		out, err := src.replayer.HandleLambda(ctx, sqshandler.Event{Records: recs})
		if err != nil {
			return events.SQSEventResponse{}, err // a malformed event: Lambda retries the batch
		}
		failed := make(map[string]bool, len(out.BatchItemFailures))
		for _, f := range out.BatchItemFailures {
			failed[f.ItemIdentifier] = true
		}
		resp.BatchItemFailures = append(resp.BatchItemFailures, out.BatchItemFailures...)
		for _, rec := range recs {
			if !failed[rec.MessageId] {
				replayed = append(replayed, replayedRecord{dlq: src.url, rec: rec})
			}
		}
	}
	if len(resp.BatchItemFailures) == 0 || h.cfg.reportFailures {
		return resp, nil
	}
	// The sample's contract: any record not replayed fails the invocation,
	// and Lambda then deletes none of the batch. The replayed ones are
	// deleted here, so they are not replayed again with the others.
	err := h.deleteReplayed(ctx, replayed)
	return events.SQSEventResponse{}, errors.Join(fmt.Errorf("%w: %d of %d left in the DLQ", errNotReplayed, len(resp.BatchItemFailures), len(event.Records)), err)
}

type replayedRecord struct {
	dlq string
	rec events.SQSMessage
}

// deleteReplayed deletes records that were replayed from their DLQ, ten per
// call. A record that cannot be deleted comes back and is replayed again:
// at least once, never lost.
func (h *handler) deleteReplayed(ctx context.Context, recs []replayedRecord) error {
	var errs []error
	for start := 0; start < len(recs); {
		dlq := recs[start].dlq
		end := start
		var entries []types.DeleteMessageBatchRequestEntry
		for end < len(recs) && recs[end].dlq == dlq && len(entries) < sqsrule.MaxBatchEntries {
			entries = append(entries, types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(end)), ReceiptHandle: aws.String(recs[end].rec.ReceiptHandle)})
			end++
		}
		out, err := h.client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(dlq), Entries: entries})
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("delete replayed records: %w", err))
		case len(out.Failed) > 0:
			errs = append(errs, fmt.Errorf("delete replayed records: %d of %d failed, first %s", len(out.Failed), len(entries), aws.ToString(out.Failed[0].Code)))
		}
		start = end
	}
	err := errors.Join(errs...)
	if err != nil {
		h.log.LogAttrs(ctx, slog.LevelWarn, "sqs-dlq-replay: replayed records left in the DLQ will be replayed again", slog.String("error", err.Error()))
	}
	return err
}

// source returns the Replayer for a DLQ, built at its first record.
func (h *handler) source(eventSourceARN string) *source {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s, ok := h.replayers[eventSourceARN]; ok {
		return s
	}
	s := &source{}
	h.replayers[eventSourceARN] = s
	if s.url, s.err = queueURL(eventSourceARN); s.err != nil {
		return s
	}
	if h.cfg.operatorURL != "" && sqsrule.SameQueue(h.cfg.operatorURL, s.url) {
		s.err = fmt.Errorf("%w: OPERATOR_QUEUE_URL is the DLQ this function reads (%s): escalations would come back to be escalated again", errConfig, eventSourceARN)
		return s
	}
	operator, client := h.cfg.operatorURL, h.client
	if operator == "" {
		// Without an operator queue nothing is escalated: the filter below
		// gives up on a message by failing its record, and an escalation
		// the replayer would still decide (SQS refusing a replay) fails
		// here, before any call, so its record fails too.
		operator = noOperatorQueue
		client = withoutEscalations{client}
	}
	s.replayer, s.err = replay.New(client, s.url, operator, func(o *replay.Options) {
		o.Target, o.Policy, o.Logger = h.cfg.mainURL, h.policy, h.log
		if h.cfg.operatorURL == "" {
			o.Filter = h.replayable
		}
	})
	return s
}

// replayable is the filter of the sample's behaviour: a message the policy
// would escalate is not replayed, and its record fails, so the DLQ's redrive
// policy moves it on.
func (h *handler) replayable(m *types.Message) bool {
	d := h.policy.Decide(m, time.Now())
	reason, detail := d.Reason, d.Detail
	if d.Action == replay.Replay && sqsrule.IsFIFO(h.cfg.mainURL) {
		if sqsrule.CheckGroupID(m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]) != nil {
			reason, detail = replay.NotRoutable, "the FIFO main queue needs a MessageGroupId and the message has no valid one"
		}
	}
	if reason == "" {
		return true
	}
	h.log.LogAttrs(context.Background(), slog.LevelWarn, "sqs-dlq-replay: not replayed; the record fails, for the DLQ's redrive policy to move it on",
		slog.String("message_id", aws.ToString(m.MessageId)), slog.String("reason", string(reason)), slog.String("detail", detail))
	return false
}

// noOperatorQueue stands for the operator queue when there is none. It has
// a scheme, so the replayer takes it for a URL and never resolves it as a
// queue name.
const noOperatorQueue = "sqs-dlq-replay://no-operator-queue"

// errNoOperatorQueue fails an escalation when there is no operator queue.
var errNoOperatorQueue = errors.New("sqs-dlq-replay: no OPERATOR_QUEUE_URL: the record fails instead")

// withoutEscalations refuses sends to noOperatorQueue before any call.
type withoutEscalations struct{ replay.API }

// QueueResolver lets the replayer resolve queue names with the wrapped
// client, when it can.
func (w withoutEscalations) QueueResolver() queueref.Resolver { return queueref.Of(w.API) }

func (w withoutEscalations) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	if aws.ToString(in.QueueUrl) == noOperatorQueue {
		return nil, errNoOperatorQueue
	}
	return w.API.SendMessageBatch(ctx, in, optFns...)
}

// queueURL turns an SQS queue ARN into its URL.
func queueURL(queueARN string) (string, error) {
	a, err := arn.Parse(queueARN)
	if err != nil || a.Service != "sqs" || a.Region == "" || a.AccountID == "" || a.Resource == "" {
		return "", fmt.Errorf("event source %q is not an SQS queue ARN", queueARN)
	}
	suffix := map[string]string{"aws": "amazonaws.com", "aws-us-gov": "amazonaws.com", "aws-cn": "amazonaws.com.cn"}[a.Partition]
	if suffix == "" {
		return "", fmt.Errorf("event source %q: partition %q is not supported", queueARN, a.Partition)
	}
	return "https://sqs." + a.Region + "." + suffix + "/" + a.AccountID + "/" + a.Resource, nil
}
