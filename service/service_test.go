package service_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/consumer"
	"github.com/sqskit/sqskit/fifo"
	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/replay"
	"github.com/sqskit/sqskit/service"
	"github.com/sqskit/sqskit/sqsfake"
)

// queues is an sqsfake server with named queues, for a synctest bubble.
type queues struct {
	client *sqs.Client
	url    map[string]string
}

func newQueues(t *testing.T, names ...string) *queues {
	t.Helper()
	q := &queues{client: sqsfake.New().Client(), url: map[string]string{}}
	for _, name := range names {
		out, err := q.client.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name)})
		if err != nil {
			t.Fatal(err)
		}
		q.url[name] = *out.QueueUrl
	}
	return q
}

func (q *queues) send(t *testing.T, queue string, bodies ...string) {
	t.Helper()
	for _, b := range bodies {
		if _, err := q.client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(q.url[queue]), MessageBody: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
	}
}

// bodies receives and deletes everything in queue.
func (q *queues) bodies(t *testing.T, queue string) []string {
	t.Helper()
	var got []string
	for {
		out, err := q.client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(q.url[queue]), MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			slices.Sort(got)
			return got
		}
		for _, m := range out.Messages {
			got = append(got, *m.Body)
			if _, err := q.client.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(q.url[queue]), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// forwarder is a consumer of queue whose handler takes a second, then sends
// the body on through the Batcher.
func (q *queues) forwarder(t *testing.T, queue string, to *fifo.Batcher) *consumer.Consumer {
	t.Helper()
	c, err := consumer.New(q.client, q.url[queue], func(ctx context.Context, m *handler.Message) error {
		time.Sleep(time.Second)
		_, err := to.Send(ctx, fifo.Message{Body: m.Body})
		return err
	}, func(o *consumer.Options) { o.Concurrency = 4; o.ShutdownTimeout = 5 * time.Second })
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (q *queues) batcher(t *testing.T, queue string) *fifo.Batcher {
	t.Helper()
	s, err := fifo.NewSender(q.client, q.url[queue])
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.NewBatcher()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// events records what happened, in order.
type events struct {
	mu   sync.Mutex
	list []string
}

func (e *events) add(s string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, s)
}

func (e *events) all() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.list)
}

type loggedRunner struct {
	service.Runner
	name string
	log  *events
}

func (r loggedRunner) Run(ctx context.Context) error {
	err := r.Runner.Run(ctx)
	r.log.add("returned " + r.name)
	return err
}

type loggedCloser struct {
	service.Closer
	name string
	log  *events
}

func (c loggedCloser) Close(ctx context.Context) error {
	c.log.add("close " + c.name)
	return c.Closer.Close(ctx)
}

// until waits, in fake time, for cond.
func until(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Hour); !cond(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}

func numbered(prefix string, n int) []string {
	b := make([]string, n)
	for i := range b {
		b[i] = prefix + strconv.Itoa(i)
	}
	return b
}

// Stopped while handlers are still running, Run lets them finish, closes
// the Batcher only after every Runner returned, and the Batcher sends what
// they gave it: every message that left its queue reached the ledger.
func TestRunClosesSendersAfterEveryRunnerReturned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueues(t, "orders", "refunds", "dlq", "operator", "ledger")
		q.send(t, "orders", numbered("order-", 20)...)
		q.send(t, "refunds", numbered("refund-", 20)...)
		ledger := q.batcher(t, "ledger")
		replayer, err := replay.New(q.client, q.url["dlq"], q.url["operator"], func(o *replay.Options) { o.Target = q.url["orders"] })
		if err != nil {
			t.Fatal(err)
		}
		log := &events{}
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- service.Run(ctx, service.Components{
				Runners: map[string]service.Runner{
					"orders":  loggedRunner{q.forwarder(t, "orders", ledger), "orders", log},
					"refunds": loggedRunner{q.forwarder(t, "refunds", ledger), "refunds", log},
					"replay":  loggedRunner{replayer, "replay", log},
				},
				Closers: map[string]service.Closer{"ledger": loggedCloser{ledger, "ledger", log}},
			})
		}()
		time.Sleep(1500 * time.Millisecond) // 4 handled per queue, 4 more under way
		synctest.Wait()
		stopped := time.Now()
		stop()
		if err := <-done; err != nil {
			t.Fatalf("expect nil, got %v", err)
		}
		if took := time.Since(stopped); took > 25*time.Second {
			t.Errorf("expect a return within the default grace period, got %v", took)
		}

		got := log.all()
		if len(got) != 4 || got[3] != "close ledger" {
			t.Errorf("expect the ledger closed after the three runners returned, got %v", got)
		}
		forwarded := q.bodies(t, "ledger")
		left := append(q.bodies(t, "orders"), q.bodies(t, "refunds")...)
		if len(forwarded) < 16 || len(forwarded)+len(left) != 40 {
			t.Errorf("expect the 16 messages under way forwarded and nothing lost, got %d forwarded and %d left", len(forwarded), len(left))
		}
		if all := append(forwarded, left...); len(slices.Compact(slices.Sorted(slices.Values(all)))) != 40 {
			t.Errorf("expect 40 distinct messages, got %d", len(all))
		}
	})
}

// A consumer whose queue does not exist fails for good: Run stops the
// others, closes the senders, and names the one that failed.
func TestRunStopsEveryRunnerWhenOneFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueues(t, "orders", "ledger")
		ledger := q.batcher(t, "ledger")
		missing, err := consumer.New(q.client, "https://sqs.us-east-1.amazonaws.com/123456789012/missing", func(context.Context, *handler.Message) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		log := &events{}
		err = service.Run(context.Background(), service.Components{
			Runners: map[string]service.Runner{
				"orders":  loggedRunner{q.forwarder(t, "orders", ledger), "orders", log},
				"missing": loggedRunner{missing, "missing", log},
			},
			Closers: map[string]service.Closer{"ledger": loggedCloser{ledger, "ledger", log}},
		})
		var ce *service.ComponentError
		if !errors.As(err, &ce) || ce.Name != "missing" {
			t.Fatalf("expect a ComponentError naming missing, got %v", err)
		}
		var notExist *types.QueueDoesNotExist
		if !errors.As(err, &notExist) {
			t.Errorf("expect the consumer's QueueDoesNotExist kept, got %v", err)
		}
		if got := log.all(); !slices.Equal(got, []string{"returned missing", "returned orders", "close ledger"}) {
			t.Errorf("expect the others stopped, then the ledger closed, got %v", got)
		}
	})
}

// fakeRunner is a Runner that returns err when told to, or when ctx ends
// unless it ignores ctx.
type fakeRunner struct {
	err       chan error
	ignoreCtx bool
}

func newFake(ignoreCtx bool) *fakeRunner {
	return &fakeRunner{err: make(chan error, 1), ignoreCtx: ignoreCtx}
}

func (f *fakeRunner) Run(ctx context.Context) error {
	done := ctx.Done()
	if f.ignoreCtx {
		done = nil
	}
	select {
	case err := <-f.err:
		return err
	case <-done:
		return ctx.Err() // allowed: ctx's error counts as a clean stop
	}
}

// fakeCloser closes at once, or when released if it ignores ctx.
type fakeCloser struct {
	release chan struct{}
	closed  bool
}

func (f *fakeCloser) Close(ctx context.Context) error {
	if f.release != nil {
		<-f.release
	}
	f.closed = true
	return nil
}

// When the grace period ends, Run returns and names what is still running;
// it does not close a sender a stuck Runner may still use.
func TestRunGracePeriodNamesTheStuckComponent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stuck, polite := newFake(true), newFake(false)
		sender := &fakeCloser{}
		ctx, stop := context.WithCancel(context.Background())
		stop()
		start := time.Now()
		err := service.Run(ctx, service.Components{
			Runners: map[string]service.Runner{"stuck": stuck, "polite": polite},
			Closers: map[string]service.Closer{"sender": sender},
		}, func(o *service.Options) { o.GracePeriod = 3 * time.Second })
		if took := time.Since(start); took != 3*time.Second {
			t.Errorf("expect a return after the grace period, 3s, got %v", took)
		}
		if !errors.Is(err, service.ErrGracePeriodOver) {
			t.Fatalf("expect %v, got %v", service.ErrGracePeriodOver, err)
		}
		want := "service: stuck: grace period over (3s): still running; its goroutine is left behind\n" +
			"service: sender: grace period over (3s): not closed, since a runner was still running"
		if err.Error() != want {
			t.Errorf("expect %q, got %q", want, err)
		}
		if sender.closed {
			t.Error("expect the sender left open while a runner runs")
		}
		stuck.err <- nil // lets its goroutine end before the bubble does
	})
}

// A Consumer whose ShutdownTimeout outlasts the grace period, its handler
// deaf to ctx, is named, and Run returns on time: SIGTERM to return stays
// within GracePeriod whatever a component does.
func TestRunGracePeriodHoldsWithASlowConsumer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueues(t, "orders")
		q.send(t, "orders", "slow")
		started, finished := make(chan struct{}), make(chan struct{})
		slow, err := consumer.New(q.client, q.url["orders"], func(context.Context, *handler.Message) error {
			close(started)
			time.Sleep(time.Minute)
			close(finished)
			return nil
		}, func(o *consumer.Options) { o.ShutdownTimeout = 10 * time.Second })
		if err != nil {
			t.Fatal(err)
		}
		ctx, stop := context.WithCancel(context.Background())
		var stoppedAt time.Time
		go func() { <-started; stoppedAt = time.Now(); stop() }()
		log := &events{}
		err = service.Run(ctx, service.Components{Runners: map[string]service.Runner{"orders": loggedRunner{slow, "orders", log}}},
			func(o *service.Options) { o.GracePeriod = 5 * time.Second })
		if took := time.Since(stoppedAt); took != 5*time.Second {
			t.Errorf("expect a return after the grace period, 5s, got %v", took)
		}
		var ce *service.ComponentError
		if !errors.As(err, &ce) || ce.Name != "orders" || !errors.Is(err, service.ErrGracePeriodOver) {
			t.Errorf("expect orders named as still running, got %v", err)
		}
		<-finished // the bubble ends once the handler and the consumer have
		until(t, func() bool { return len(log.all()) == 1 })
	})
}

// A Closer that does not return by the end of the grace period is named.
func TestRunGracePeriodNamesTheStuckCloser(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		runner := newFake(false)
		stuck := &fakeCloser{release: make(chan struct{})}
		runner.err <- errors.New("boom")
		start := time.Now()
		err := service.Run(context.Background(), service.Components{
			Runners: map[string]service.Runner{"runner": runner},
			Closers: map[string]service.Closer{"stuck": stuck, "fine": &fakeCloser{}},
		}, func(o *service.Options) { o.GracePeriod = 2 * time.Second })
		if took := time.Since(start); took != 2*time.Second {
			t.Errorf("expect a return after the grace period, 2s, got %v", took)
		}
		want := "service: runner: boom\nservice: stuck: grace period over (2s): still closing; its goroutine is left behind"
		if err == nil || err.Error() != want {
			t.Errorf("expect %q, got %v", want, err)
		}
		close(stuck.release)
	})
}

// A Runner that returns nil early stops nothing; Run returns once every
// Runner has, and closes the Closers then.
func TestRunWaitsForEveryRunner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		early, late := newFake(false), newFake(false)
		sender := &fakeCloser{}
		done := make(chan error, 1)
		go func() {
			done <- service.Run(context.Background(), service.Components{
				Runners: map[string]service.Runner{"early": early, "late": late},
				Closers: map[string]service.Closer{"sender": sender},
			})
		}()
		early.err <- nil
		synctest.Wait()
		if sender.closed {
			t.Fatal("expect the sender open while late runs")
		}
		late.err <- nil
		if err := <-done; err != nil || !sender.closed {
			t.Errorf("expect nil and the sender closed, got %v and closed=%v", err, sender.closed)
		}
	})
}

func TestRunRefusesInvalidComponents(t *testing.T) {
	r1, r2 := newFake(false), newFake(false)
	c1 := &fakeCloser{}
	for name, tc := range map[string]struct {
		c    service.Components
		opts func(*service.Options)
	}{
		"no runners":            {c: service.Components{Closers: map[string]service.Closer{"c": c1}}},
		"nil runner":            {c: service.Components{Runners: map[string]service.Runner{"a": nil}}},
		"typed nil runner":      {c: service.Components{Runners: map[string]service.Runner{"a": (*consumer.Consumer)(nil)}}},
		"typed nil closer":      {c: service.Components{Runners: map[string]service.Runner{"a": r1}, Closers: map[string]service.Closer{"c": (*fifo.Batcher)(nil)}}},
		"empty name":            {c: service.Components{Runners: map[string]service.Runner{"": r1}}},
		"runner twice":          {c: service.Components{Runners: map[string]service.Runner{"a": r1, "b": r1}}},
		"closer twice":          {c: service.Components{Runners: map[string]service.Runner{"a": r1}, Closers: map[string]service.Closer{"c": c1, "d": c1}}},
		"name taken":            {c: service.Components{Runners: map[string]service.Runner{"a": r1, "b": r2}, Closers: map[string]service.Closer{"a": c1}}},
		"negative grace period": {c: service.Components{Runners: map[string]service.Runner{"a": r1}}, opts: func(o *service.Options) { o.GracePeriod = -time.Second }},
	} {
		t.Run(name, func(t *testing.T) {
			err := service.Run(context.Background(), tc.c, tc.opts)
			if !errors.Is(err, service.ErrConfig) {
				t.Errorf("expect %v, got %v", service.ErrConfig, err)
			}
		})
	}
}
