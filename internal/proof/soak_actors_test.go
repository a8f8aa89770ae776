package proof

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/consumer"
	"github.com/sqskit/sqskit/fifo"
	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/replay"
)

// The actors of the soak: producers, a forger, consumers and replayers.
// None uses hooks: the handler keeps the ledger, and Stats and Reports give
// the rest.

// ---- producers

// produce sends messages 0..n-1 in order, in chunks of fifty, alternately
// through SendBatch and through a Batcher with concurrent callers, and
// resends what fails until it is acknowledged, as an application with an
// outbox would. On FIFO queues a chunk's groups are spread over the
// Batcher's callers, one caller per group, so each group's order is the
// order of the indices. It slows down while the main queue holds more than
// two thousand messages, so memory stays bounded whatever the count.
func (q *soakQueue) produce() {
	s, err := fifo.NewSender(q.w.api, q.main, func(o *fifo.SenderOptions) {
		if q.fifo {
			o.Dedup = fifo.KeyDedup("soak") // a resend after a failure is the same message
		}
	})
	if err != nil {
		q.led.Violate("NewSender: %v", err)
		return
	}
	b, err := s.NewBatcher()
	if err != nil {
		q.led.Violate("NewBatcher: %v", err)
		return
	}
	defer func() {
		// Close sends what it accepted and returns: a Close still busy
		// after the grace a Run gets is a hang.
		ctx, cancel := context.WithTimeout(context.Background(), q.w.timing.runGrace)
		defer cancel()
		if err := b.Close(ctx); err != nil {
			q.led.Violate("Batcher.Close: %v", err)
		}
	}()
	const chunk = 50
	for start, k := 0, 0; start < q.n; start, k = start+chunk, k+1 {
		var idx []int
		for i := start; i < min(start+chunk, q.n); i++ {
			idx = append(idx, i)
		}
		if k%2 == 0 {
			q.sendBatch(s, idx)
		} else {
			q.viaBatcher(b, idx)
		}
		time.Sleep(q.w.timing.produceGap)
		if k%20 == 0 {
			for q.w.depth(q.main) > 2000 {
				time.Sleep(5 * time.Second)
			}
		}
	}
}

func (q *soakQueue) message(i int) fifo.Message {
	m := fifo.Message{Body: q.body(i), Attributes: q.attributes(i)}
	if q.fifo {
		m.GroupID, m.DedupKey = fmt.Sprintf("g%02d", q.group(i)), m.Body
	}
	return m
}

// sendBatch sends messages with SendBatch until each is acknowledged.
func (q *soakQueue) sendBatch(s *fifo.Sender, idx []int) {
	for tries := 0; len(idx) > 0; tries++ {
		if tries == 100 {
			q.led.Violate("producer gave up on %d messages after 100 SendBatch calls", len(idx))
			return
		}
		msgs := make([]fifo.Message, len(idx))
		for k, i := range idx {
			msgs[k] = q.message(i)
		}
		var failed []int
		for k, res := range s.SendBatch(context.Background(), msgs) {
			q.led.sendResult(idx[k], res)
			if res.Err != nil {
				failed = append(failed, idx[k])
			}
		}
		idx = failed
		if len(idx) > 0 {
			time.Sleep(time.Second)
		}
	}
}

// viaBatcher sends messages through the Batcher from concurrent callers.
func (q *soakQueue) viaBatcher(b *fifo.Batcher, idx []int) {
	lanes := map[int][]int{} // a caller's messages, in order
	for k, i := range idx {
		lane := k % 10
		if q.fifo {
			lane = q.group(i)
		}
		lanes[lane] = append(lanes[lane], i)
	}
	var wg sync.WaitGroup
	for _, lane := range lanes {
		wg.Go(func() {
			for _, i := range lane {
				for tries := 0; ; tries++ {
					res, err := b.Send(context.Background(), q.message(i))
					q.led.sendResult(i, res)
					if err == nil {
						break
					}
					if tries == 100 {
						q.led.Violate("producer gave up on message %d after 100 Batcher sends: %v", i, err)
						break
					}
					time.Sleep(time.Second)
				}
			}
		})
	}
	wg.Wait()
}

// ---- the forger

// forgedMessage is a message a hostile sender put straight into a
// dead-letter queue, and the escalation it must get ("" for a replay and a
// success).
type forgedMessage struct {
	body   string
	reason replay.Reason
}

type soakForgery struct {
	name  string
	attrs map[string]types.MessageAttributeValue
	// reason on a standard queue routed by DeadLetterQueueSourceArn, which
	// a forged message lacks, and on a queue with a Target.
	routed, target replay.Reason
}

func soakForgeries() []soakForgery {
	meta := func(raw string) map[string]types.MessageAttributeValue {
		return map[string]types.MessageAttributeValue{replay.MetadataAttribute: {DataType: aws.String("String"), StringValue: aws.String(raw)}}
	}
	count := func(dt, v string) map[string]types.MessageAttributeValue {
		return map[string]types.MessageAttributeValue{replay.DefaultCounterAttribute: {DataType: aws.String(dt), StringValue: aws.String(v)}}
	}
	return []soakForgery{
		{"counter-word", count("String", "many"), replay.InvalidCounter, replay.InvalidCounter},
		{"counter-negative", count("Number", "-3"), replay.InvalidCounter, replay.InvalidCounter},
		{"metadata-not-json", meta("{"), replay.InvalidMetadata, replay.InvalidMetadata},
		{"metadata-far-delay", meta(`{"sd":9000000000000}`), replay.InvalidMetadata, replay.InvalidMetadata},
		{"metadata-bad-count", meta(`{"n":"x"}`), replay.InvalidCounter, replay.InvalidCounter},
		{"counter-spent", count("Number", "2"), replay.AttemptsExhausted, replay.AttemptsExhausted},
		{"claims-history", meta(`{"id":"00000000-0000-4000-8000-000000000001","first":"2020-01-01T00:00:00Z"}`), replay.NotRoutable, ""},
		{"counter-one", count("Number", "1"), replay.NotRoutable, ""},
	}
}

// routedBySource reports whether the queue's replayer routes by
// DeadLetterQueueSourceArn (sqsfake's standard queue) rather than a Target.
func (q *soakQueue) routedBySource() bool { return !q.fifo && !q.w.emulator }

// forge puts forged messages into the dead-letter queue at random moments
// while the producers run.
func (q *soakQueue) forge(count int, done <-chan struct{}) {
	rng := rand.New(rand.NewPCG(q.w.seed, uint64(0xf0+q.index)))
	kinds := soakForgeries()
	for k := range count {
		select {
		case <-done:
		case <-time.After(time.Duration(rng.Int64N(int64(q.w.timing.restartMax)))):
		}
		f := kinds[k%len(kinds)]
		fm := forgedMessage{body: fmt.Sprintf("x-%s-%05d-%s", q.name, k, f.name), reason: f.target}
		if q.routedBySource() {
			fm.reason = f.routed
		}
		in := &sqs.SendMessageInput{QueueUrl: aws.String(q.dlq), MessageBody: aws.String(fm.body), MessageAttributes: f.attrs}
		if q.fifo {
			in.MessageGroupId, in.MessageDeduplicationId = aws.String(fmt.Sprintf("xg%d", k%3)), aws.String(fm.body)
		}
		reliably(func() (*sqs.SendMessageOutput, error) { return q.w.api.SendMessage(context.Background(), in) })
		q.forgedMu.Lock()
		q.forged = append(q.forged, fm)
		q.forgedMu.Unlock()
	}
}

// ---- consumers

var errSoakFailure = errors.New("soak: the handler failed this delivery")

var errSoakPermanent = errors.New("soak: this message can never succeed")

// handle is the consumers' handler: it fails poison messages always and
// others now and then, outlives the visibility timeout for slow ones,
// checks that replayed messages restore to the attributes their producer
// sent, and keeps the ledger.
func (q *soakQueue) handle(ctx context.Context, m *handler.Message) error {
	if strings.HasPrefix(m.Body, "x-") {
		q.led.mu.Lock()
		q.led.forgedOK[m.Body]++
		q.led.mu.Unlock()
		return nil
	}
	i := q.parseBody(m.Body)
	if i < 0 {
		q.led.Violate("a message nobody sent: %.30q", m.Body)
		return nil
	}
	attempt := replayAttempt(m)
	if !sameAttributes(replay.Restore(consumer.SDKAttributes(m.MessageAttributes), ""), q.attributes(i)) {
		q.led.mu.Lock()
		q.led.restoreBad++
		q.led.mu.Unlock()
	}
	rc := m.ReceiveCount()
	if q.permanent(i) {
		q.led.delivered(i, q.group(i), m, attempt, false)
		return handler.Permanent(errSoakPermanent)
	}
	fail := q.poison(i) || q.transient(i, rc, attempt)
	d := time.Duration(q.w.chance(q.name, i, rc, "time") * float64(q.w.timing.handlerMax))
	if q.slow(i) {
		d = q.w.timing.slow
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		q.led.delivered(i, q.group(i), m, attempt, false)
		return ctx.Err()
	}
	q.led.delivered(i, q.group(i), m, attempt, !fail)
	if fail {
		return errSoakFailure
	}
	return nil
}

func (q *soakQueue) newConsumer() *consumer.Consumer {
	timing := q.w.timing
	c, err := consumer.New(q.w.api, q.main, q.handle, func(o *consumer.Options) {
		o.Concurrency = 8
		o.ReceiveConcurrency, o.MaxReceiveConcurrency = 2, 4
		o.DeleteConcurrency = 4
		o.WaitTime = timing.waitTime
		o.ShutdownTimeout = timing.shutdown
		o.ParkingQueue = q.w.operator // permanent failures go there at once
		if timing.redelivery != nil {
			o.RedeliveryBackoff = timing.redelivery
		}
		o.Hooks.Deleted = func(_ context.Context, m *handler.Message) {
			if i := q.parseBody(m.Body); i >= 0 {
				q.led.deleted(i, m.ID)
			}
		}
	})
	if err != nil {
		q.w.t.Fatal(err)
	}
	return c
}

// consumerLoop runs a Consumer, cancelling and restarting its Run at
// random moments, until stop.
func (q *soakQueue) consumerLoop(c *consumer.Consumer, n int, stop <-chan struct{}) {
	rng := rand.New(rand.NewPCG(q.w.seed, uint64(100+10*q.index+n)))
	for {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx) }()
		select {
		case <-time.After(q.w.timing.restartMin + time.Duration(rng.Int64N(int64(q.w.timing.restartMax-q.w.timing.restartMin)))):
		case <-stop:
		}
		cancel()
		if err := q.w.awaitReturn(fmt.Sprintf("%s consumer %d", q.name, n), done, q.w.timing.runGrace); err != nil {
			q.led.Violate("%s consumer %d: Run: %v", q.name, n, err)
		}
		q.w.restarts.Add(1)
		if held := c.Stats().InFlight; held != 0 {
			q.led.Violate("%s consumer %d holds %d messages after Run returned", q.name, n, held)
		}
		select {
		case <-stop:
			return
		default:
		}
	}
}

// ---- replayers

func (q *soakQueue) newReplayer() *replay.Replayer {
	timing := q.w.timing
	r, err := replay.New(q.w.api, q.dlq, q.w.operator, func(o *replay.Options) {
		if q.routedBySource() {
			o.Sources = map[string]string{q.mainArn: q.main}
		} else {
			o.Target = q.main
		}
		o.Policy = replay.Policy{MaxAttempts: 2, Backoff: timing.replayBackoff}
		o.Concurrency = 4
		o.VisibilityTimeout = timing.replayVisibility
		o.WaitTime = timing.waitTime
	})
	if err != nil {
		q.w.t.Fatal(err)
	}
	return r
}

// runLoop runs the replayer as a worker, restarted at random moments.
func (q *soakQueue) runLoop(stop <-chan struct{}) {
	r := q.newReplayer()
	rng := rand.New(rand.NewPCG(q.w.seed, uint64(200+q.index)))
	for {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- r.Run(ctx) }()
		select {
		case <-time.After(q.w.timing.restartMin + time.Duration(rng.Int64N(int64(q.w.timing.restartMax-q.w.timing.restartMin)))):
		case <-stop:
		}
		cancel()
		if err := q.w.awaitReturn(q.name+" replayer Run", done, q.w.timing.runGrace); err != nil {
			q.led.Violate("%s replayer Run: %v", q.name, err)
		}
		// Down for a while, as in a deployment: Drain and the Lambda carry
		// on alone.
		select {
		case <-stop:
			return
		case <-time.After(time.Duration(rng.Int64N(int64(q.w.timing.restartMax)))):
		}
	}
}

// drainLoop runs a Drain pass now and then, as a cron job would.
func (q *soakQueue) drainLoop(stop <-chan struct{}) {
	r := q.newReplayer()
	rng := rand.New(rand.NewPCG(q.w.seed, uint64(300+q.index)))
	for {
		select {
		case <-stop:
			return
		case <-time.After(time.Duration(rng.Int64N(int64(q.w.timing.drainEvery)))):
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*q.w.timing.lambdaTimeout)
		rep, _ := r.Drain(ctx) // a pass may give up on a run of failed receives: the next one goes on
		cancel()
		q.w.drains.Add(1)
		q.w.drainMu.Lock()
		q.w.drained["replayed"] += rep.Replayed
		q.w.drained["escalated"] += rep.Escalated
		q.w.drained["held"] += rep.Held
		q.w.drained["failed"] += rep.Failed
		q.w.drainMu.Unlock()
	}
}

// lambdaLoop plays Lambda's event source mapping on the dead-letter
// queue: receive up to ten, invoke HandleLambda with a deadline, delete
// what the response does not list (retrying, as the service does).
// The mapping is disabled now and then, so the other modes get work too.
func (q *soakQueue) lambdaLoop(stop <-chan struct{}) {
	r := q.newReplayer()
	rng := rand.New(rand.NewPCG(q.w.seed, uint64(400+q.index)))
	timing := q.w.timing
	enabledUntil := time.Now().Add(timing.restartMin + time.Duration(rng.Int64N(int64(timing.restartMax-timing.restartMin))))
	for {
		select {
		case <-stop:
			return
		default:
		}
		if time.Now().After(enabledUntil) {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(rng.Int64N(int64(timing.restartMax)))):
			}
			enabledUntil = time.Now().Add(timing.restartMin + time.Duration(rng.Int64N(int64(timing.restartMax-timing.restartMin))))
		}
		out, err := q.w.api.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(q.dlq), MaxNumberOfMessages: 10,
			WaitTimeSeconds: int32(q.w.timing.waitTime / time.Second), VisibilityTimeout: int32(q.w.timing.replayVisibility / time.Second),
			MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []types.MessageSystemAttributeName{"All"}})
		if err != nil || len(out.Messages) == 0 {
			if err != nil {
				time.Sleep(time.Second)
			}
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), q.w.timing.lambdaTimeout)
		resp, err := r.HandleLambda(ctx, handler.Event(lambdaEvent(out.Messages, q.dlq)))
		cancel()
		q.w.lambdaRuns.Add(1)
		if err != nil {
			q.led.Violate("%s HandleLambda: %v", q.name, err)
			continue
		}
		failed := map[string]bool{}
		for _, f := range resp.BatchItemFailures {
			failed[f.ItemIdentifier] = true
		}
		var entries []types.DeleteMessageBatchRequestEntry
		for k, m := range out.Messages {
			if !failed[*m.MessageId] {
				entries = append(entries, types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(k)), ReceiptHandle: m.ReceiptHandle})
			}
		}
		for tries := 0; len(entries) > 0 && tries < 5; tries++ {
			res, err := q.w.api.DeleteMessageBatch(context.Background(), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(q.dlq), Entries: entries})
			if err != nil {
				time.Sleep(time.Second)
				continue
			}
			var again []types.DeleteMessageBatchRequestEntry
			for _, f := range res.Failed {
				for _, e := range entries {
					if *e.Id == *f.Id {
						again = append(again, e)
					}
				}
			}
			entries = again
		}
	}
}

// lambdaEvent is the event Lambda builds from received messages.
func lambdaEvent(msgs []types.Message, queueURL string) events.SQSEvent {
	arn := "arn:aws:sqs:us-east-1:123456789012:" + queueURL[strings.LastIndex(queueURL, "/")+1:]
	var ev events.SQSEvent
	for _, m := range msgs {
		rec := events.SQSMessage{MessageId: *m.MessageId, ReceiptHandle: *m.ReceiptHandle, Body: *m.Body, Attributes: m.Attributes,
			EventSourceARN: arn, EventSource: "aws:sqs"}
		if len(m.MessageAttributes) > 0 {
			rec.MessageAttributes = map[string]events.SQSMessageAttribute{}
			for name, v := range m.MessageAttributes {
				rec.MessageAttributes[name] = events.SQSMessageAttribute{DataType: aws.ToString(v.DataType), StringValue: v.StringValue, BinaryValue: v.BinaryValue}
			}
		}
		ev.Records = append(ev.Records, rec)
	}
	return ev
}
