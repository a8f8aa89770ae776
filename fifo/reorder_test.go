package fifo_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/fifo"
	"github.com/sqskit/sqskit/sqsfake"
)

// sendPath sends msgs through a Sender's SendBatch or through a Batcher fed
// in the order of msgs, and returns their Results in that order.
type sendPath struct {
	name string
	send func(t *testing.T, s *fifo.Sender, msgs []fifo.Message) []fifo.Result
}

var sendPaths = []sendPath{
	{"Sender", func(_ *testing.T, s *fifo.Sender, msgs []fifo.Message) []fifo.Result {
		return s.SendBatch(context.Background(), msgs)
	}},
	{"Batcher", batcherSend},
}

// batcherSend hands msgs to a Batcher one Send at a time, each on its own
// goroutine, so that they arrive in the order given and wait in the Batcher
// together; every tenth message it lets 3 ms of the bubble's time pass, so
// lingered partial batches go out among full ones. Call it inside a bubble.
func batcherSend(t *testing.T, s *fifo.Sender, msgs []fifo.Message) []fifo.Result {
	t.Helper()
	b, err := s.NewBatcher(func(o *fifo.BatcherOptions) { o.Linger = 2 * time.Millisecond })
	if err != nil {
		t.Fatal(err)
	}
	results := make([]fifo.Result, len(msgs))
	var wg sync.WaitGroup
	for i := range msgs {
		wg.Go(func() { results[i], _ = b.Send(context.Background(), msgs[i]) })
		synctest.Wait() // msgs[i] reached the Batcher before msgs[i+1]
		if i%10 == 9 {
			time.Sleep(3 * time.Millisecond)
		}
	}
	wg.Wait()
	if err := b.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	return results
}

// A message overtaken by a later one of its group (SQS failed its entry and
// stored the later one) whose retry is stored but unacknowledged, and which
// then runs out of attempts, sits behind the later one: its failed Result
// says Reordered.
func TestReorderedOvertakenMessageFailingAfterUnconfirmedRetry(t *testing.T) {
	for _, path := range sendPaths {
		t.Run(path.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newBubbleFixture(t, "q.fifo", nil)
				f.srv.Inject(sqsfake.Fault{Op: "SendMessageBatch", Times: 1, Entries: &sqsfake.EntryFault{Match: func(i int, _ string) bool { return i == 0 }}})
				f.srv.Inject(sqsfake.Fault{Op: "SendMessageBatch", Times: 1, AfterApply: true})
				s := f.sender(t, func(o *fifo.SenderOptions) { o.SendMaxAttempts = 2 })
				results := path.send(t, s, []fifo.Message{{Body: "a1", GroupID: "a"}, {Body: "a2", GroupID: "a"}})
				if r := results[0]; r.Err == nil || r.Unconfirmed != 1 || !r.Reordered {
					t.Errorf("expect a1 failed, 1 unconfirmed, Reordered, got %+v", r)
				}
				if r := results[1]; r.Err != nil || r.Reordered {
					t.Errorf("expect a2 sent in order, got %+v", r)
				}
				if got := strings.Join(f.drain(t)["a"], ","); got != "a2,a1" {
					t.Errorf("expect a2,a1 on the queue, got %s", got)
				}
			})
		})
	}
}

// SQS failed the earlier entry of a group and stored the later one, and the
// answer was lost: the retry stores the earlier one behind the later one,
// and its Result says Reordered.
func TestReorderedWhenAnswerToPartlyFailedBatchIsLost(t *testing.T) {
	for _, path := range sendPaths {
		t.Run(path.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newBubbleFixture(t, "q.fifo", nil)
				f.srv.Inject(sqsfake.Fault{Op: "SendMessageBatch", Times: 1, AfterApply: true, Entries: &sqsfake.EntryFault{Match: func(i int, _ string) bool { return i == 0 }}})
				results := path.send(t, f.sender(t), []fifo.Message{{Body: "a1", GroupID: "a"}, {Body: "a2", GroupID: "a"}, {Body: "b1", GroupID: "b"}})
				for i, r := range results {
					if r.Err != nil {
						t.Fatalf("message %d: %v", i, r.Err)
					}
				}
				if !results[0].Reordered || results[1].Reordered {
					t.Errorf("expect a1 Reordered and a2 not, got %+v", results)
				}
				got := f.drain(t)
				if a := strings.Join(got["a"], ","); a != "a2,a1" {
					t.Errorf("expect a2,a1 on the queue, got %s", a)
				}
			})
		})
	}
}

// faultPlan picks a fault for each SendMessageBatch call from a seed and
// the call's content (its bodies and how often that content was sent
// before), never from the order in which calls happen to arrive, so a seed
// replays the same faults. Calls reach sqsfake one at a time, so the fault
// injected for a call applies to that call only. Each call also waits a
// latency drawn the same way, so calls in flight come back at distinct
// instants of the bubble's clock.
type faultPlan struct {
	fifo.API
	srv  *sqsfake.Server
	seed uint64

	mu    sync.Mutex
	seen  map[string]int
	kinds map[string]int
	apply chan struct{} // a channel, not a mutex: synctest sees it blocked
}

func newFaultPlan(f *fixture, client fifo.API, seed uint64) *faultPlan {
	return &faultPlan{API: client, srv: f.srv, seed: seed, seen: map[string]int{}, kinds: map[string]int{}, apply: make(chan struct{}, 1)}
}

func (p *faultPlan) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	var key strings.Builder
	for _, e := range in.Entries {
		key.WriteString(aws.ToString(e.MessageBody))
		key.WriteByte(0)
	}
	p.mu.Lock()
	p.seen[key.String()]++
	h := fnv.New64a()
	fmt.Fprintf(h, "%d\x00%d\x00%s", p.seed, p.seen[key.String()], key.String())
	r := h.Sum64()
	p.mu.Unlock()
	t := time.NewTimer(time.Millisecond + time.Duration(r%9973)*time.Microsecond)
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
		return nil, ctx.Err()
	}
	r >>= 14
	mask := r >> 8 // which entries an entry fault fails
	entries := &sqsfake.EntryFault{Match: func(i int, _ string) bool { return mask>>i&1 == 1 }}
	var fault *sqsfake.Fault
	kind := ""
	switch r % 16 {
	case 0, 1, 2:
		kind, fault = "entries failed", &sqsfake.Fault{Entries: entries}
	case 3, 4:
		kind, fault = "entries failed, answer lost", &sqsfake.Fault{Entries: entries, AfterApply: true}
	case 5:
		kind, fault = "answer lost", &sqsfake.Fault{AfterApply: true}
	case 6:
		kind, fault = "server error", &sqsfake.Fault{}
	case 7:
		kind, fault = "throttled", &sqsfake.Fault{Err: &types.RequestThrottled{Message: aws.String("slow down")}}
	}
	p.apply <- struct{}{}
	defer func() { <-p.apply }()
	if fault != nil {
		fault.Op, fault.Times = "SendMessageBatch", 1
		p.srv.Inject(*fault)
		p.mu.Lock()
		p.kinds[kind]++
		p.mu.Unlock()
	}
	return p.API.SendMessageBatch(ctx, in, optFns...)
}

// Under faults of every kind on about half the calls (entries failed, with
// and without the answer lost; answers lost; server errors; throttling), with
// few attempts so that some messages fail for good, several calls in flight
// and groups in runs so that batches carry several messages of a group,
// each seed checks per group, for SendBatch and for a Batcher, with the
// SDK's retries off (each fault ends its call) and on (the SDK retries the
// call, so a call that succeeds may have stored some entries in an earlier
// request):
//
//   - a message whose Result has no error is on the queue once; one with an
//     error is on it at most once, and not at all if nothing was unconfirmed;
//   - of every pair delivered out of order, the earlier message's Result
//     says Reordered.
func TestReorderedFaultSoak(t *testing.T) {
	const seeds, n, groups = 12, 200, 10
	for _, path := range sendPaths {
		for _, sdkRetries := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/sdkRetries=%v", path.name, sdkRetries), func(t *testing.T) {
				kinds := map[string]int{}
				reordered, failed, inversions := 0, 0, 0
				for seed := range uint64(seeds) {
					synctest.Test(t, func(t *testing.T) {
						f := newBubbleFixture(t, "q.fifo", nil)
						var client fifo.API = f.client
						if sdkRetries {
							client = f.srv.Client(func(o *sqs.Options) {
								o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
									so.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 5 * time.Millisecond, nil })
								})
							})
						}
						plan := newFaultPlan(f, client, seed)
						s, err := fifo.NewSender(plan, f.url, func(o *fifo.SenderOptions) {
							o.SendMaxAttempts = 3
							o.SendBackoff = backoff.Constant{D: 20 * time.Millisecond}
							o.SendConcurrency = 4
						})
						if err != nil {
							t.Fatal(err)
						}
						msgs := make([]fifo.Message, n)
						index := map[string]int{}
						for i := range msgs {
							g := fmt.Sprintf("g%d", (i/3+i/7)%groups)
							msgs[i] = fifo.Message{Body: fmt.Sprintf("%s-%03d", g, i), GroupID: g}
							index[msgs[i].Body] = i
						}
						results := path.send(t, s, msgs)
						got := f.drain(t)
						seen := map[int]bool{}
						for g, bodies := range got {
							for k, b := range bodies {
								i := index[b]
								if seen[i] {
									t.Errorf("seed %d: group %s: %s delivered twice", seed, g, b)
								}
								seen[i] = true
								for _, later := range bodies[k+1:] {
									if j := index[later]; j < i {
										inversions++
										if !results[j].Reordered {
											t.Errorf("seed %d: group %s: %s delivered after %s, and its Result does not say Reordered: %+v", seed, g, later, b, results[j])
										}
									}
								}
							}
						}
						for i, r := range results {
							switch {
							case r.Err == nil && !seen[i]:
								t.Errorf("seed %d: %s sent without error but not on the queue", seed, msgs[i].Body)
							case r.Err != nil && r.Unconfirmed == 0 && seen[i]:
								t.Errorf("seed %d: %s failed with nothing unconfirmed but is on the queue: %+v", seed, msgs[i].Body, r)
							}
							if r.Reordered {
								reordered++
							}
							if r.Err != nil {
								failed++
							}
						}
						plan.mu.Lock()
						for k, v := range plan.kinds {
							kinds[k] += v
						}
						plan.mu.Unlock()
					})
				}
				if len(kinds) < 5 || (failed == 0 && !sdkRetries) || inversions == 0 {
					t.Errorf("expect every kind of fault, failures (without the SDK's retries) and deliveries out of order, got %v, %d failed, %d inversions", kinds, failed, inversions)
				}
				t.Logf("%d seeds × %d messages: faults %v; %d failed; %d pairs delivered out of order; %d Results say Reordered", seeds, n, kinds, failed, inversions, reordered)
			})
		}
	}
}
