package replay_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/replay"
	"github.com/sqskit/sqskit/sqsfake"
)

// chaos fails calls as a hostile network does: before they take effect
// (throttling, server errors) and after (the acknowledgement is lost). It
// draws from a seeded source; off turns it off.
type chaos struct {
	replay.API
	mu     sync.Mutex
	rng    *rand.Rand
	off    bool
	counts map[string]int
}

func newChaos(api replay.API, seed uint64) *chaos {
	return &chaos{API: api, rng: rand.New(rand.NewPCG(seed, seed+1)), counts: map[string]int{}}
}

// roll reports whether a fault of kind hits this call, with probability p.
func (c *chaos) roll(kind string, p float64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.off || c.rng.Float64() >= p {
		return false
	}
	c.counts[kind]++
	return true
}

func (c *chaos) stop() {
	c.mu.Lock()
	c.off = true
	c.mu.Unlock()
}

var errThrottled = &types.RequestThrottled{Message: aws.String("chaos: slow down")}

func (c *chaos) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, fns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	if c.roll("receive throttled", 0.1) {
		return nil, errThrottled
	}
	out, err := c.API.ReceiveMessage(ctx, in, fns...)
	if err == nil && len(out.Messages) > 0 && c.roll("receive ack lost", 0.03) {
		return nil, sqsfake.ErrInternal
	}
	return out, err
}

func (c *chaos) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, fns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	if c.roll("send 5xx", 0.1) {
		return nil, sqsfake.ErrInternal
	}
	out, err := c.API.SendMessageBatch(ctx, in, fns...)
	if err == nil && c.roll("send ack lost", 0.05) {
		return nil, sqsfake.ErrInternal
	}
	return out, err
}

func (c *chaos) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, fns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	if c.roll("delete throttled", 0.1) {
		return nil, errThrottled
	}
	out, err := c.API.DeleteMessageBatch(ctx, in, fns...)
	if err == nil && c.roll("delete ack lost", 0.05) {
		return nil, sqsfake.ErrInternal
	}
	return out, err
}

func (c *chaos) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, fns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	if c.roll("hold 5xx", 0.1) {
		return nil, sqsfake.ErrInternal
	}
	out, err := c.API.ChangeMessageVisibilityBatch(ctx, in, fns...)
	if err == nil && c.roll("hold ack lost", 0.05) {
		return nil, sqsfake.ErrInternal
	}
	return out, err
}

// soakMessage is a message seeded into the DLQ and what must become of it.
type soakMessage struct {
	body, group string
	seq         int
	escalate    bool // forged or spent: must reach the operator queue
}

// seedSoak fills the DLQ: groups of ordered messages (on FIFO), counters at
// several attempts, and forged metadata of every kind mixed in.
func seedSoak(t *testing.T, w *world, fifo bool, rng *rand.Rand) []soakMessage {
	var msgs []soakMessage
	groups := 1
	if fifo {
		groups = 20
	}
	var firstID string
	for i := range 200 {
		g := fmt.Sprintf("g%02d", i%groups)
		m := soakMessage{body: fmt.Sprintf("%s:%03d", g, i/groups), group: g, seq: i / groups}
		if !fifo {
			m.group = ""
		}
		attrs := map[string]types.MessageAttributeValue{"n": {DataType: aws.String("Number"), StringValue: aws.String(strconv.Itoa(i))}}
		switch k := rng.IntN(20); {
		case k < 3: // a replay already under way
			attrs[replay.DefaultCounterAttribute] = types.MessageAttributeValue{DataType: aws.String("Number"), StringValue: aws.String(strconv.Itoa(k))}
		case k == 3: // spent
			attrs[replay.DefaultCounterAttribute] = types.MessageAttributeValue{DataType: aws.String("Number"), StringValue: aws.String("3")}
			m.escalate = true
		case k == 4 && firstID != "": // claims another message's history
			attrs[replay.MetadataAttribute] = metadataAttr(t, map[string]any{"id": firstID, "first": "2026-01-01T00:00:00Z"})
		case k == 5: // a due time far away
			attrs[replay.MetadataAttribute] = metadataAttr(t, map[string]any{"id": "x", "sd": 8e18})
			m.escalate = true
		case k == 6: // a malformed count
			attrs[replay.MetadataAttribute] = metadataAttr(t, map[string]any{"id": "x", "n": "abc"})
			m.escalate = true
		case k == 7: // a forged counter
			attrs[replay.DefaultCounterAttribute] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("many")}
			m.escalate = true
		}
		body := m.body
		if i%25 == 0 { // large: ten of these do not fit one batch
			body += strings.Repeat(".", 200<<10)
		}
		in := &sqs.SendMessageInput{QueueUrl: aws.String(w.dlq), MessageBody: aws.String(body), MessageAttributes: attrs}
		if fifo {
			in.MessageGroupId = aws.String(g)
		}
		out, err := w.api.SendMessage(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		if firstID == "" {
			firstID = *out.MessageId
		}
		msgs = append(msgs, m)
	}
	return msgs
}

// soakPolicy replays after 2, 4 and 8 s.
func soakOptions(o *replay.Options) {
	o.Policy = replay.Policy{MaxAttempts: 3, Backoff: backoff.Exponential{Base: 2 * time.Second}}
	o.VisibilityTimeout = 30 * time.Second
	o.Concurrency = 4
}

// TestSoak runs Run, Drain and HandleLambda over standard and FIFO DLQs with
// faults on every operation (throttling, server errors, lost
// acknowledgements, failed entries), restarts, and forged metadata mixed
// in, for ten minutes of fake time; then the faults stop. Nothing may be
// lost, nothing left in the DLQ past its due time, no FIFO group reordered,
// nothing may hang.
func TestSoak(t *testing.T) {
	for _, fifo := range []bool{false, true} {
		for _, mode := range []string{"Run", "Drain", "HandleLambda"} {
			name := mode + map[bool]string{true: "/fifo", false: "/standard"}[fifo]
			t.Run(name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { soak(t, fifo, mode) })
			})
		}
	}
}

func soak(t *testing.T, fifo bool, mode string) {
	w := newWorld(t, fifo)
	rng := rand.New(rand.NewPCG(11, 12))
	seeded := seedSoak(t, w, fifo, rng)
	api := newChaos(w.api, 7)
	w.srv.Inject(sqsfake.Fault{Op: "SendMessageBatch", Entries: &sqsfake.EntryFault{Match: func(int, string) bool { return api.roll("send entry failed", 0.1) }}})
	w.srv.Inject(sqsfake.Fault{Op: "DeleteMessageBatch", Entries: &sqsfake.EntryFault{Match: func(int, string) bool { return api.roll("delete entry failed", 0.05) }}})
	newR := func() *replay.Replayer {
		r, err := replay.New(api, w.dlq, w.operator, func(o *replay.Options) { o.Target = w.main }, soakOptions)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	began := time.Now()
	chaosFor, cleanFor := 10*time.Minute, 5*time.Minute
	restarts := 0
	for time.Since(began) < chaosFor+cleanFor {
		if time.Since(began) >= chaosFor {
			api.stop()
			w.srv.ClearFaults()
		}
		restarts++
		switch mode {
		case "Run":
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(30+rng.IntN(90))*time.Second)
			if err := newR().Run(ctx); err != nil {
				t.Fatalf("Run: %v", err)
			}
			cancel()
		case "Drain":
			_, _ = newR().Drain(context.Background()) // may give up on a run of failed receives: try again
			time.Sleep(time.Duration(5+rng.IntN(20)) * time.Second)
		case "HandleLambda":
			lambdaOnce(t, w, newR(), map[bool]int{true: 10, false: 25}[fifo])
		}
	}
	checkSoak(t, w, fifo, seeded, api, restarts)
}

// lambdaOnce plays Lambda's event source mapping: receive a batch from the
// DLQ (up to 25 records from a standard queue, 10 from a FIFO one), invoke,
// delete what the response does not list. Lambda's own calls are reliable
// here; the handler's go through the faults.
func lambdaOnce(t *testing.T, w *world, r *replay.Replayer, batch int) {
	var msgs []types.Message
	for len(msgs) < batch {
		out, err := w.api.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(w.dlq), MaxNumberOfMessages: int32(min(10, batch-len(msgs))),
			WaitTimeSeconds: 1, VisibilityTimeout: 30, MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []types.MessageSystemAttributeName{"All"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			break
		}
		msgs = append(msgs, out.Messages...)
	}
	if len(msgs) == 0 {
		return
	}
	out := &sqs.ReceiveMessageOutput{Messages: msgs}
	event := lambdaEvent(out.Messages)
	resp, err := r.HandleLambda(context.Background(), handler.Event(event))
	if err != nil {
		t.Fatal(err)
	}
	failed := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		failed[f.ItemIdentifier] = true
	}
	var entries []types.DeleteMessageBatchRequestEntry
	for i, m := range out.Messages {
		if !failed[*m.MessageId] {
			entries = append(entries, types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle})
		}
	}
	for start := 0; start < len(entries); start += 10 {
		chunk := entries[start:min(start+10, len(entries))]
		if _, err := w.api.DeleteMessageBatch(context.Background(), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(w.dlq), Entries: chunk}); err != nil {
			t.Fatal(err)
		}
	}
}

func checkSoak(t *testing.T, w *world, fifo bool, seeded []soakMessage, api *chaos, restarts int) {
	t.Helper()
	attrs, err := w.api.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(w.dlq), AttributeNames: []types.QueueAttributeName{"All"}})
	if err != nil {
		t.Fatal(err)
	}
	stranded := 0
	for _, a := range []string{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"} {
		n, _ := strconv.Atoi(attrs.Attributes[a])
		stranded += n
	}
	onMain, onOperator := map[string]int{}, map[string]int{}
	var order []string
	for _, b := range w.takeAll(t, w.main) {
		b = strings.TrimRight(b, ".")
		if onMain[b] == 0 {
			order = append(order, b)
		}
		onMain[b]++
	}
	for _, b := range w.takeAll(t, w.operator) {
		onOperator[strings.TrimRight(b, ".")]++
	}
	lost, misplaced, duplicates := 0, 0, 0
	for _, m := range seeded {
		switch {
		case onMain[m.body] == 0 && onOperator[m.body] == 0:
			lost++
			t.Errorf("%s: lost", m.body)
		case m.escalate && onOperator[m.body] == 0:
			misplaced++
			t.Errorf("%s: expect it escalated, it was replayed", m.body)
		}
		duplicates += max(onMain[m.body]-1, 0) + max(onOperator[m.body]-1, 0)
	}
	inversions := 0
	if fifo {
		last := map[string]int{}
		for _, b := range order {
			g, seq, _ := strings.Cut(b, ":")
			n, _ := strconv.Atoi(seq)
			if prev, ok := last[g]; ok && n < prev {
				inversions++
				t.Errorf("group %s: %s after %s:%03d", g, b, g, prev)
			}
			last[g] = max(last[g], n)
		}
	}
	t.Logf("%d messages: %d on the target, %d escalated, %d duplicates; lost %d, misplaced %d, stranded %d, inversions %d; %d restarts; faults %v",
		len(seeded), len(onMain), len(onOperator), duplicates, lost, misplaced, stranded, inversions, restarts, api.counts)
	if stranded != 0 {
		t.Errorf("expect the DLQ empty once every message was due, %d left", stranded)
	}
}
