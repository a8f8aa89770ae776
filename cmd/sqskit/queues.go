package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/spf13/cobra"

	"github.com/sqskit/sqskit/internal/queueref"
	"github.com/sqskit/sqskit/internal/sqserr"
)

// queueInfo is one queue as `sqskit queues` shows it.
type queueInfo struct {
	Name     string `json:"name"`
	URL      string `json:"url"`
	Type     string `json:"type"` // standard, fifo or fifo-ht
	Visible  int64  `json:"visible"`
	InFlight int64  `json:"in_flight"`
	Delayed  int64  `json:"delayed"`
	// OldestAgeSeconds is always null: SQS's API has no attribute for the
	// oldest message's age; CloudWatch's ApproximateAgeOfOldestMessage does.
	OldestAgeSeconds *int64 `json:"oldest_age_seconds"`
	// DLQ and MaxReceiveCount are the queue's redrive policy.
	DLQ             string `json:"dlq,omitempty"`
	MaxReceiveCount int    `json:"max_receive_count,omitempty"`
	// Sources are the queues whose redrive policy names this one
	// (ListDeadLetterSourceQueues); SourcesFrom says how they were found.
	Sources     []string `json:"sources"`
	SourcesFrom string   `json:"sources_from"` // "api", or "policies" where the endpoint lacks the call
}

// queuesParallel is how many queues `queues` reads at once.
const queuesParallel = 8

// queueList is `sqskit queues -o json`.
type queueList struct {
	Queues []queueInfo `json:"queues"`
}

func newQueuesCmd(a *app) *cobra.Command {
	var prefix string
	cmd := &cobra.Command{
		Use:   "queues",
		Short: "List queues: type, counts, dead-letter queue and redrive policy, and which queues send to each",
		Long: `queues lists every queue (or those whose name starts with --prefix) with its
type (standard, fifo, or fifo-ht for high-throughput FIFO), its approximate
counts of visible, in-flight and delayed messages, its dead-letter queue and
maxReceiveCount, and the queues that dead-letter into it.

The oldest message's age is shown as "-": SQS's API has no such attribute,
and receiving messages to find out would change them. CloudWatch publishes
it as the metric ApproximateAgeOfOldestMessage.

The sending queues come from ListDeadLetterSourceQueues; on endpoints that
lack the call (fauxqs) they are worked out from the listed queues' redrive
policies, and the JSON form says so (sources_from "policies").

It only reads: ListQueues, GetQueueAttributes, ListDeadLetterSourceQueues.`,
		Example: `  sqskit queues
  sqskit queues --prefix orders -o json
  sqskit queues --endpoint-url http://127.0.0.1:9324 --region us-east-1`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			list, err := a.listQueues(cmd.Context(), prefix)
			if err != nil {
				return err
			}
			return a.emit(list, func(w io.Writer) {
				row(w, "QUEUE", "TYPE", "VISIBLE", "IN FLIGHT", "DELAYED", "OLDEST", "DLQ (MAX RECEIVES)", "SOURCES")
				for _, q := range list.Queues {
					dlq := "-"
					if q.DLQ != "" {
						dlq = fmt.Sprintf("%s (%d)", q.DLQ, q.MaxReceiveCount)
					}
					sources := "-"
					if len(q.Sources) > 0 {
						sources = strings.Join(q.Sources, ",")
					}
					row(w, q.Name, q.Type, q.Visible, q.InFlight, q.Delayed, "-", dlq, sources)
				}
			})
		},
	}
	cmd.Flags().StringVar(&prefix, "prefix", "", "only queues whose name starts with this")
	return cmd
}

// listQueues reads every queue's attributes and dead-letter sources.
func (a *app) listQueues(ctx context.Context, prefix string) (queueList, error) {
	c, err := a.sqs(ctx)
	if err != nil {
		return queueList{}, err
	}
	var urls []string
	in := &sqs.ListQueuesInput{MaxResults: aws.Int32(1000)}
	if prefix != "" {
		in.QueueNamePrefix = aws.String(prefix)
	}
	for p := sqs.NewListQueuesPaginator(c, in); p.HasMorePages(); {
		out, err := p.NextPage(ctx)
		if err != nil {
			return queueList{}, fmt.Errorf("list queues: %w", err)
		}
		urls = append(urls, out.QueueUrls...)
	}
	slices.SortFunc(urls, func(x, y string) int { return strings.Compare(queueref.Name(x), queueref.Name(y)) })

	// Two calls a queue, eight queues at a time: an account's hundreds of
	// queues take seconds, not minutes, at a real round trip.
	type answer struct {
		q       queueInfo
		gone    bool
		err     error
		srcErr  error
		sources []string
	}
	answers := make([]answer, len(urls))
	var wg sync.WaitGroup
	slots := make(chan struct{}, queuesParallel)
	for i, u := range urls {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			r := &answers[i]
			attrs, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(u), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
			if err != nil {
				var gone *types.QueueDoesNotExist
				r.gone = errors.As(err, &gone) // deleted since it was listed
				r.err = fmt.Errorf("queue %s: %w", queueref.Name(u), err)
				return
			}
			r.q = describeQueue(u, attrs.Attributes)
			r.sources, r.srcErr = deadLetterSources(ctx, c, u)
		}()
	}
	wg.Wait()

	list := queueList{Queues: make([]queueInfo, 0, len(urls))}
	var srcErrs []error
	for _, r := range answers {
		switch {
		case r.gone:
			continue
		case r.err != nil:
			return queueList{}, r.err
		}
		r.q.Sources, r.q.SourcesFrom = r.sources, "api"
		if r.srcErr != nil {
			r.q.SourcesFrom = "policies"
			srcErrs = append(srcErrs, r.srcErr)
		}
		list.Queues = append(list.Queues, r.q)
	}
	// Where the endpoint lacks ListDeadLetterSourceQueues (fauxqs), the
	// sources are the listed queues whose redrive policy names the queue.
	for i := range list.Queues {
		q := &list.Queues[i]
		if q.SourcesFrom != "policies" {
			continue
		}
		q.Sources = []string{}
		for _, o := range list.Queues {
			if o.DLQ == q.Name {
				q.Sources = append(q.Sources, o.Name)
			}
		}
	}
	if len(srcErrs) > 0 {
		why := sqserr.Code(srcErrs[0])
		if why == "" {
			why = srcErrs[0].Error()
		}
		fmt.Fprintf(a.term.err, "note: ListDeadLetterSourceQueues failed (%s): SOURCES are the listed queues whose redrive policy names the queue\n", why)
	}
	return list, nil
}

func deadLetterSources(ctx context.Context, c *sqs.Client, url string) ([]string, error) {
	names := []string{}
	for p := sqs.NewListDeadLetterSourceQueuesPaginator(c, &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: aws.String(url), MaxResults: aws.Int32(1000)}); p.HasMorePages(); {
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, u := range out.QueueUrls {
			names = append(names, queueref.Name(u))
		}
	}
	slices.Sort(names)
	return names, nil
}

// describeQueue reads the attributes `queues` shows.
func describeQueue(url string, attrs map[string]string) queueInfo {
	num := func(k string) int64 { n, _ := strconv.ParseInt(attrs[k], 10, 64); return n }
	q := queueInfo{
		Name: queueref.Name(url), URL: url, Type: "standard",
		Visible:  num(string(types.QueueAttributeNameApproximateNumberOfMessages)),
		InFlight: num(string(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible)),
		Delayed:  num(string(types.QueueAttributeNameApproximateNumberOfMessagesDelayed)),
	}
	if attrs["FifoQueue"] == "true" || strings.HasSuffix(q.Name, ".fifo") {
		q.Type = "fifo"
		if attrs["FifoThroughputLimit"] == "perMessageGroupId" && attrs["DeduplicationScope"] == "messageGroup" {
			q.Type = "fifo-ht"
		}
	}
	if rp, ok := parseRedrive(attrs["RedrivePolicy"]); ok {
		q.DLQ, q.MaxReceiveCount = rp.dlq, rp.maxReceiveCount
	}
	return q
}

type redrivePolicy struct {
	dlq             string // the DLQ's name
	maxReceiveCount int
}

// parseRedrive reads a RedrivePolicy, whose maxReceiveCount SQS and
// emulators write as a number or a string.
func parseRedrive(s string) (redrivePolicy, bool) {
	if s == "" {
		return redrivePolicy{}, false
	}
	var p struct {
		Target string          `json:"deadLetterTargetArn"`
		Max    json.RawMessage `json:"maxReceiveCount"`
	}
	if json.Unmarshal([]byte(s), &p) != nil || p.Target == "" {
		return redrivePolicy{}, false
	}
	n, _ := strconv.Atoi(strings.Trim(string(p.Max), `"`))
	return redrivePolicy{dlq: p.Target[strings.LastIndex(p.Target, ":")+1:], maxReceiveCount: n}, true
}

// queueAttributes reads every attribute of the queue at url, given by the
// user as given; a queue that does not exist is a bad argument.
func queueAttributes(ctx context.Context, c *sqs.Client, url, given string) (map[string]string, error) {
	out, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
	if err != nil {
		var missing *types.QueueDoesNotExist
		if errors.As(err, &missing) {
			return nil, usageError("queue %q does not exist", given)
		}
		return nil, fmt.Errorf("queue %q: %w", given, err)
	}
	return out.Attributes, nil
}
