package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/consumer"
	"github.com/sqskit/sqskit/examples/internal/backend"
	"github.com/sqskit/sqskit/fifo"
	"github.com/sqskit/sqskit/replay"
	"github.com/sqskit/sqskit/sqsfake"
)

// flow is one main queue with its dead-letter queue, its consumer and its
// replayer.
type flow struct {
	name        string // orders.fifo or orders
	fifo        bool
	maxReceives int // the redrive policy's maxReceiveCount
	maxReplays  int
	url, dlq    string
	consumer    *consumer.Consumer
	replayer    *replay.Replayer
	// The SQS clients of its consumer and its replayer.
	consumerAPI, replayerAPI *part
}

// story is one run of the demo.
type story struct {
	cfg      config
	out      io.Writer
	log      *slog.Logger
	api      *sqs.Client // setup and checks, not counted
	st       *stage      // the story's calls, and in memory its turns and clock
	producer *part
	queues   *backend.Queues
	flows    []*flow
	operator string
	orders   map[string]*order
	list     []*order
	ledger   *ledger
	closers  []func() // close the endpoint client's idle connections
	// beforeCheck, when set, runs once the story ended and before the
	// check that nothing was lost: tests use it to lose a message.
	beforeCheck func(context.Context, *story)
}

// The in-memory story starts at a fixed simulated time. (Its timeline
// counts from the start, so any time would print the same.)
var simStart = time.Date(2026, time.March, 2, 9, 0, 0, 0, time.UTC)

func newStory(ctx context.Context, cfg config, out io.Writer, log *slog.Logger) (*story, error) {
	s := &story{cfg: cfg, out: out, log: log, orders: map[string]*order{}}
	client := func() *sqs.Client { return s.api }
	if cfg.endpoint == "" {
		clock := sqsfake.NewManualClock(simStart)
		srv := sqsfake.New(func(o *sqsfake.Options) { o.Clock = clock })
		s.api, s.st = srv.Client(), newStage(clock)
		client = func() *sqs.Client { return srv.Client() }
	} else {
		api, closeIdle, err := backend.Client(ctx, cfg.endpoint)
		if err != nil {
			return nil, err
		}
		s.api, s.st, s.closers = api, newStage(nil), append(s.closers, closeIdle)
	}
	s.producer = s.st.newPart(client(), false)
	s.queues = backend.NewQueues(s.api, cfg.endpoint, "sqskit-demo")
	if cfg.fifo {
		s.flows = append(s.flows, &flow{name: "orders.fifo", fifo: true, maxReceives: 5, maxReplays: cfg.replays})
	}
	if cfg.standard {
		s.flows = append(s.flows, &flow{name: "orders", maxReceives: 3, maxReplays: cfg.replays})
	}
	for _, f := range s.flows { // the order of their turns
		f.consumerAPI = s.st.newPart(client(), true)
		f.consumerAPI.fifo = f.fifo
		f.replayerAPI = s.st.newPart(client(), true)
		f.replayerAPI.replayer = true
	}
	s.list = makeOrders(cfg.n, cfg.seed, s.flows)
	for _, o := range s.list {
		s.orders[o.ID] = o
	}
	s.ledger = newLedger(out, s.st, s.orders, !s.inMemory())
	return s, nil
}

func (s *story) inMemory() bool { return s.st.clock != nil }

// run tells the story: queues, orders, consumers and replayers, until every
// order is delivered or escalated; then it checks that nothing was lost and
// prints the summary.
func (s *story) run(ctx context.Context) (err error) {
	defer func() {
		for _, closeIdle := range s.closers {
			closeIdle()
		}
	}()
	s.intro()
	if err := s.createQueues(ctx); err != nil {
		return errors.Join(err, s.queues.DeleteAll(ctx))
	}
	defer func() { err = errors.Join(err, s.queues.DeleteAll(ctx)) }()

	workCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	if err := s.start(workCtx, cancel, &wg); err != nil {
		cancel(nil)
		wg.Wait()
		return err
	}
	storyErr := s.produce(workCtx)
	if storyErr == nil {
		storyErr = s.wait(workCtx)
	}
	took := s.st.now().Sub(s.st.start)
	cancel(nil)
	wg.Wait() // the hooks have all been told
	s.ledger.finish()
	if storyErr != nil {
		return storyErr
	}
	if s.beforeCheck != nil {
		s.beforeCheck(ctx, s)
	}
	return s.conclude(ctx, took)
}

func (s *story) intro() {
	where := "in memory (sqsfake), on simulated time: sqsfake's clock moves to the next moment something is due once every consumer and replayer waits"
	if s.cfg.endpoint != "" {
		where = "against " + s.cfg.endpoint + ", in real time with short delays, on queues named sqskit-demo-*"
	}
	fmt.Fprintf(s.out, "sqskit demo: %d orders, %s, seed %d.\n\n", s.cfg.n, where, s.cfg.seed)
	for _, f := range s.flows {
		fmt.Fprintf(s.out, "  producer ─▶ %-11s ─▶ consumer ─(%d receives)─▶ SQS redrive ─▶ %-15s ─▶ replayer ─(≤ %d replays, growing jittered delays)─▶ %s\n",
			f.name, f.maxReceives, dlqName(f), f.maxReplays, f.name)
	}
	fmt.Fprintf(s.out, "%*s└─ replays run out, or a message is unfit to replay ─▶ operator (a queue for humans, with the reason)\n\n", 66, "")
	kinds := map[behaviour]int{}
	for _, o := range s.list {
		kinds[o.kind]++
	}
	fmt.Fprintf(s.out, "The handler: %s; %s (%v); %s through one or two lives on the queue (%v); %s (%v); %s and %s.\n\n",
		count(kinds[succeeds], "order succeeds", "orders succeed"),
		count(kinds[flaky], "fails once or twice", "fail once or twice"), flaky.failure(),
		count(kinds[outage], "fails", "fail"), outage.failure(),
		count(kinds[poison], "always fails", "always fail"), poison.failure(),
		count(kinds[forged], "always fails", "always fail"),
		verb(kinds[forged], "carries a replay counter its producer forged", "carry a replay counter their producer forged"))
}

// count says "n things" with the verb or noun for n.
func count(n int, one, many string) string {
	return fmt.Sprintf("%d %s", n, verb(n, one, many))
}

func verb(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func dlqName(f *flow) string {
	if f.fifo {
		return "orders-dlq.fifo"
	}
	return "orders-dlq"
}

// createQueues creates each flow's queues, with a redrive policy from the
// main queue to its DLQ, and the operator queue.
func (s *story) createQueues(ctx context.Context) error {
	var err error
	if s.operator, err = s.queues.Create(ctx, "operator", nil); err != nil {
		return err
	}
	for _, f := range s.flows {
		attrs := map[string]string{}
		if f.fifo {
			attrs["FifoQueue"] = "true"
		}
		if f.dlq, err = s.queues.Create(ctx, dlqName(f), attrs); err != nil {
			return err
		}
		arn, err := s.queues.ARN(ctx, f.dlq)
		if err != nil {
			return err
		}
		main := map[string]string{"RedrivePolicy": backend.RedrivePolicy(arn, f.maxReceives)}
		if f.fifo {
			main["FifoQueue"] = "true"
		}
		if f.url, err = s.queues.Create(ctx, f.name, main); err != nil {
			return err
		}
	}
	return nil
}

// start starts each flow's consumer and replayer; a worker that stops by
// itself (the queue was deleted, access was denied) cancels the story.
func (s *story) start(ctx context.Context, cancel context.CancelCauseFunc, wg *sync.WaitGroup) error {
	for _, f := range s.flows {
		c, err := consumer.New(f.consumerAPI, f.url, s.handler(f), func(o *consumer.Options) {
			o.Logger = s.log
			o.Hooks = s.ledger.consumerHooks(f)
			if !s.inMemory() {
				o.RedeliveryBackoff = backoff.Constant{} // visible again at once: the replays carry the delays
				return
			}
			// The default, seeded, with a short cap.
			o.RedeliveryBackoff = seededPerAttempt{backoff.EqualJitter{Base: time.Second, Cap: 2 * time.Second}, s.cfg.seed}
			// One receive loop, for the turns, and one handler at a time
			// whose deletes wait for the receive's last (see stage).
			o.MaxReceiveConcurrency = 1
			o.Concurrency = 1
			o.DeleteLinger = time.Second
		})
		if err != nil {
			return err
		}
		f.consumer = c
		f.consumerAPI.inFlight = func() int64 { return c.Stats().InFlight }
		strategy := backoff.Strategy(backoff.EqualJitter{Base: time.Minute, Cap: 12 * time.Hour}) // the default policy's
		if !s.inMemory() {
			strategy = backoff.EqualJitter{Base: time.Second, Cap: time.Minute}
		}
		policy := replay.Policy{MaxAttempts: max(f.maxReplays, 1), Backoff: backoff.MaxAttempts{S: strategy, N: f.maxReplays}}
		r, err := replay.New(f.replayerAPI, f.dlq, s.operator, func(o *replay.Options) {
			o.Target = f.url
			o.Policy = policy
			o.Concurrency = 1 // one receive loop, for the turns (see stage)
			o.Logger = s.log
			o.Hooks = s.ledger.replayHooks(f, cmp.Or(policy.MaxBackoff, 12*time.Hour))
		})
		if err != nil {
			return err
		}
		f.replayer = r
		for name, run := range map[string]func(context.Context) error{"consumer of " + f.name: c.Run, "replayer of " + dlqName(f): r.Run} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := run(ctx)
				if ctx.Err() == nil {
					cancel(fmt.Errorf("%s stopped: %w", name, errors.Join(err, errors.New("stopped early"))))
				}
			}()
		}
	}
	return nil
}

// seededPerAttempt draws a strategy's jitter from a source seeded by the
// seed and the attempt: the consumer asks for the delays of several failed
// messages at once, from several goroutines, and one shared source would
// give them out in whatever order they ask.
type seededPerAttempt struct {
	s    backoff.EqualJitter
	seed uint64
}

func (p seededPerAttempt) Delay(attempt int, prev time.Duration) time.Duration {
	return p.s.WithRand(backoff.NewRandom(p.seed*1_000_003+uint64(attempt))).Delay(attempt, prev)
}

func (p seededPerAttempt) Validate() error { return p.s.Validate() }

// forgedCounter is what the producer of a forged order sets: a replay
// counter no replayer wrote.
var forgedCounter = map[string]types.MessageAttributeValue{
	replay.DefaultCounterAttribute: {DataType: aws.String("Number"), StringValue: aws.String("-1")},
}

// produce sends every order with a fifo.Sender: on the FIFO queue grouped by
// customer, deduplicated by order id.
func (s *story) produce(ctx context.Context) error {
	for _, f := range s.flows {
		sender, err := fifo.NewSender(s.producer, f.url, func(o *fifo.SenderOptions) {
			o.Dedup = fifo.KeyDedup("sqskit-demo")
			o.Logger = s.log
			if s.inMemory() {
				// One call at a time, so that SQS numbers the orders alike in
				// every run: a replay's jitter is seeded by the MessageId.
				o.SendConcurrency = 1
			}
		})
		if err != nil {
			return err
		}
		var msgs []fifo.Message
		var sent []*order
		for _, o := range s.list {
			if o.flow != f {
				continue
			}
			body := fmt.Sprintf(`{"order":%q,"customer":%q,"sku":%q,"amount":%d}`, o.ID, o.Customer, o.SKU, 10+len(sent))
			m := fifo.Message{Body: body, DedupKey: o.ID}
			if f.fifo {
				m.GroupID = o.Customer
			}
			if o.kind == forged {
				m.Attributes = forgedCounter
			}
			msgs = append(msgs, m)
			sent = append(sent, o)
		}
		if len(msgs) == 0 {
			continue
		}
		before := s.st.callsOf("SendMessageBatch")
		for i, r := range sender.SendBatch(ctx, msgs) {
			if r.Err != nil {
				return fmt.Errorf("send order %s: %w", sent[i].ID, r.Err)
			}
		}
		calls := s.st.callsOf("SendMessageBatch") - before
		how := "standard queue: no order, no deduplication"
		if f.fifo {
			how = "FIFO: in order per customer, deduplicated by order id"
		}
		s.ledger.note("producer", "sent %d orders to %s in %s (%s)", len(msgs), f.name, count(calls, "SendMessageBatch call", "SendMessageBatch calls"), how)
	}
	return nil
}

// wait lets the story run until every order is delivered or escalated: in
// memory the stage gives the turns and moves the clock until the main
// queues and the DLQs are empty.
func (s *story) wait(ctx context.Context) error {
	if !s.inMemory() {
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for !s.ledger.done() {
			select {
			case <-ctx.Done():
				return context.Cause(ctx)
			case <-t.C:
			}
		}
		return nil
	}
	return s.st.run(ctx, s.ended)
}

// ended reports whether the main queues and the DLQs are empty: every order
// deleted after a success, or escalated.
func (s *story) ended(ctx context.Context) (bool, error) {
	left, err := s.leftovers(ctx)
	if err != nil {
		return false, err
	}
	for _, n := range left {
		if n > 0 {
			return false, nil
		}
	}
	return true, nil
}
