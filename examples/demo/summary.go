package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/replay"
)

// errLost is returned when an order was neither delivered nor found in the
// operator queue.
var errLost = errors.New("orders lost")

// conclude checks the queues, prints the summary and reports lost orders;
// took is the story's time, from the first send to the last order's end.
func (s *story) conclude(ctx context.Context, took time.Duration) error {
	requests := s.st.callCounts() // the story's calls (the setup and the checks below use s.api)
	escalations, err := s.readOperator(ctx)
	if err != nil {
		return err
	}
	left, err := s.leftovers(ctx)
	if err != nil {
		return err
	}
	var lost []*order
	for _, o := range s.list {
		if _, ok := escalations[o.ID]; ok {
			o.found = true
		}
		if o.deleted == 0 && !o.found {
			lost = append(lost, o)
		}
	}
	s.printOrders(escalations)
	s.printCounts(took, escalations)
	s.printDelays()
	s.printCalls(requests)
	s.printVerdict(lost, escalations, left)
	if len(lost) > 0 {
		return fmt.Errorf("%w: %s", errLost, orderIDs(lost))
	}
	return nil
}

// escalation is an order read back from the operator queue.
type escalation struct {
	reason, detail string
}

// readOperator reads the operator queue, as the human who looks after it
// would, deleting what it reads, until it has every order the replayers
// escalated and one receive more comes back empty, or three in a row do.
func (s *story) readOperator(ctx context.Context) (map[string]escalation, error) {
	expected := 0
	for _, o := range s.list {
		if o.escalated != "" {
			expected++
		}
	}
	found := map[string]escalation{}
	wait := int32(0)
	if !s.inMemory() {
		wait = 1 // a long poll asks every SQS server; a short one samples a few
	}
	for empty := 0; empty < 3 && (empty == 0 || len(found) < expected); {
		if len(found) == expected {
			wait = 0 // a last look: nothing more is expected
		}
		out, err := s.api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(s.operator), MaxNumberOfMessages: 10,
			WaitTimeSeconds: wait, MessageAttributeNames: []string{"All"}})
		if err != nil {
			return nil, fmt.Errorf("read the operator queue: %w", err)
		}
		if len(out.Messages) == 0 {
			empty++
			continue
		}
		empty = 0
		for _, m := range out.Messages {
			var md replay.Metadata
			if v, ok := m.MessageAttributes[replay.MetadataAttribute]; ok {
				_ = json.Unmarshal([]byte(aws.ToString(v.StringValue)), &md)
			}
			if o := s.ledger.find(aws.ToString(m.Body)); o != nil {
				found[o.ID] = escalation{reason: string(md.Reason), detail: md.Detail}
			}
			if _, err := s.api.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(s.operator), ReceiptHandle: m.ReceiptHandle}); err != nil {
				return nil, fmt.Errorf("delete from the operator queue: %w", err)
			}
		}
	}
	return found, nil
}

// leftovers counts the messages still in each main queue and DLQ: visible,
// in flight or delayed.
func (s *story) leftovers(ctx context.Context) (map[string]int, error) {
	left := map[string]int{}
	for _, f := range s.flows {
		for name, url := range map[string]string{f.name: f.url, dlqName(f): f.dlq} {
			out, err := s.api.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{
				types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
				types.QueueAttributeNameApproximateNumberOfMessagesDelayed}})
			if err != nil {
				return nil, fmt.Errorf("count %s: %w", name, err)
			}
			for _, v := range out.Attributes {
				n, _ := strconv.Atoi(v)
				left[name] += n
			}
		}
	}
	return left, nil
}

func (o *order) fate(escalations map[string]escalation) string {
	switch {
	case o.deleted > 0 && o.replays > 0:
		return fmt.Sprintf("delivered after %s", plural(o.replays, "replay"))
	case o.deleted > 0 && o.calls > 1:
		return fmt.Sprintf("delivered after %s in place", plural(o.calls-1, "retry"))
	case o.deleted > 0:
		return "delivered"
	}
	if e, ok := escalations[o.ID]; ok {
		return "operator queue: " + e.reason
	}
	return "LOST"
}

func (s *story) printOrders(escalations map[string]escalation) {
	if len(s.list) > maxTimelineOrders {
		return
	}
	w := max(len(s.list[0].ID), len("order"))
	fmt.Fprintf(s.out, "\nEvery order's fate:\n\n  %-*s  %-11s  %-8s  %-29s  %5s  %7s  %s\n", w, "order", "queue", "customer", "handler", "calls", "replays", "fate")
	for _, o := range s.list {
		customer := o.Customer
		if !o.flow.fifo {
			customer = "-"
		}
		fmt.Fprintf(s.out, "  %-*s  %-11s  %-8s  %-29s  %5d  %7d  %s\n", w, o.ID, o.flow.name, customer, o.describe(), o.calls, o.replays, o.fate(escalations))
	}
	var behind []*order
	for _, o := range s.list {
		lives := o.replays // dead-letterings: one per replay, and one before an escalation
		if o.escalated != "" {
			lives++
		}
		if lives > 0 && o.calls < lives*o.flow.maxReceives {
			behind = append(behind, o)
		}
	}
	if len(behind) > 0 {
		fmt.Fprintf(s.out, "\n  %s reached the DLQ with fewer failures of their own than receives: SQS returns a FIFO group's next orders\n"+
			"  in the same receive as its failing head, so they paid for its failures too (see the maxReceiveCount rule in package consumer).\n", orderIDs(behind))
	}
}

func (s *story) printCounts(took time.Duration, escalations map[string]escalation) {
	var once, inPlace, replayed, escalated, twice int
	reasons := map[string]int{}
	for _, o := range s.list {
		switch {
		case o.deleted > 0 && o.replays > 0:
			replayed++
		case o.deleted > 0 && o.calls > 1:
			inPlace++
		case o.deleted > 0:
			once++
		}
		if o.deleted > 1 {
			twice++
		}
		if e, ok := escalations[o.ID]; ok {
			escalated++
			reasons[e.reason]++
		}
	}
	var rs []string
	for _, r := range slices.Sorted(maps.Keys(reasons)) {
		rs = append(rs, fmt.Sprintf("%d %s", reasons[r], r))
	}
	fmt.Fprintf(s.out, "\nCounts: %d orders sent; %d delivered (%d at the first call, %d after retries in place, %d after replays); "+
		"%d in the operator queue with their reason (%s); %d delivered twice.\n",
		len(s.list), once+inPlace+replayed, once, inPlace, replayed, escalated, strings.Join(rs, ", "), twice)
	if s.inMemory() {
		fmt.Fprintf(s.out, "Time: %s of simulated time.\n", short(took))
	} else {
		fmt.Fprintf(s.out, "Time: %s from the first send to the last order's end.\n", short(took))
	}
}

func (s *story) printDelays() {
	fmt.Fprintf(s.out, "Delays: in place (the consumer's RedeliveryBackoff) %s", spread(s.ledger.inPlace))
	for _, n := range slices.Sorted(maps.Keys(s.ledger.replays)) {
		fmt.Fprintf(s.out, "; replay %d %s", n, spread(s.ledger.replays[n]))
	}
	fmt.Fprintln(s.out, ".")
}

// spread formats delays as count × min–max.
func spread(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	lo, hi := short(slices.Min(ds)), short(slices.Max(ds))
	if lo == hi {
		return fmt.Sprintf("%d × %s", len(ds), lo)
	}
	return fmt.Sprintf("%d × %s–%s", len(ds), lo, hi)
}

func (s *story) printCalls(requests map[string]int) {
	total := 0
	var ops []string
	for _, op := range slices.Sorted(maps.Keys(requests)) {
		total += requests[op]
		ops = append(ops, fmt.Sprintf("%s %d", op, requests[op]))
	}
	fmt.Fprintf(s.out, "API calls: %d, %.1f per order (%s); idle long polls included, queue setup not.\n", total, float64(total)/float64(len(s.list)), strings.Join(ops, ", "))
}

func (s *story) printVerdict(lost []*order, escalations map[string]escalation, left map[string]int) {
	delivered := 0
	for _, o := range s.list {
		if o.deleted > 0 {
			delivered++
		}
	}
	var names []string
	total := 0
	for _, name := range slices.Sorted(maps.Keys(left)) {
		names = append(names, name)
		total += left[name]
	}
	where := fmt.Sprintf("%s are empty", strings.Join(names, ", "))
	if total > 0 {
		where = fmt.Sprintf("messages still in %v", left)
		if !s.inMemory() {
			where += " (SQS's counters are approximate and lag)"
		}
	}
	if len(lost) > 0 {
		fmt.Fprintf(s.out, "\nLOST: %s: neither deleted after a successful handler call nor found in the operator queue; %s.\n", orderIDs(lost), where)
		return
	}
	fmt.Fprintf(s.out, "\nNothing lost: each of the %d orders was deleted after its handler succeeded (%d) or read back from the operator queue with its reason (%d); %s.\n",
		len(s.list), delivered, len(escalations), where)
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	if strings.HasSuffix(word, "y") && !strings.HasSuffix(word, "ay") {
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(word, "y"))
	}
	return fmt.Sprintf("%d %ss", n, word)
}
