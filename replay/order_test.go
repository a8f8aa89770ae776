package replay_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/replay"
	"github.com/sqskit/sqskit/sqsfake"
)

// In Lambda, a FIFO group's later records are reported as failures behind
// one that did not move, whether the Filter skipped it or its send failed;
// other groups go on.
func TestLambdaKeepsFIFOGroupOrder(t *testing.T) {
	for name, setup := range map[string]func(w *world) []func(*replay.Options){
		"filter skips the head": func(*world) []func(*replay.Options) {
			return []func(*replay.Options){func(o *replay.Options) { o.Filter = func(m *types.Message) bool { return *m.Body != "g:0" } }}
		},
		"the head's send fails": func(w *world) []func(*replay.Options) {
			w.srv.Inject(sqsfake.Fault{Op: "SendMessageBatch", Times: 3, Entries: &sqsfake.EntryFault{Match: func(i int, _ string) bool { return i == 0 }}})
			return nil
		},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newWorld(t, true)
				seedGroup(t, w, "g", 3)
				seedGroup(t, w, "h", 1)
				var msgs []types.Message
				for len(msgs) < 4 {
					msgs = append(msgs, w.receiveAll(t, w.dlq)...)
				}
				resp, err := w.replayer(t, setup(w)...).HandleLambda(context.Background(), handler.Event(lambdaEvent(msgs)))
				if err != nil {
					t.Fatal(err)
				}
				byID := map[string]string{}
				for _, m := range msgs {
					byID[*m.MessageId] = *m.Body
				}
				var failed []string
				for _, f := range resp.BatchItemFailures {
					failed = append(failed, byID[f.ItemIdentifier])
				}
				slices.Sort(failed)
				if fmt.Sprint(failed) != "[g:0 g:1 g:2]" {
					t.Fatalf("expect the whole group g reported failed, got %v", failed)
				}
				if got := w.takeAll(t, w.main); fmt.Sprint(got) != "[h:0]" {
					t.Fatalf("expect only h:0 on the target, got %v", got)
				}
			})
		})
	}
}

// groupWatch fails the test when two send calls under way at once carry
// the same FIFO group.
type groupWatch struct {
	replay.API
	mu      sync.Mutex
	inCall  map[string]int
	overlap []string
}

func (g *groupWatch) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, fns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	var groups []string
	for _, e := range in.Entries {
		if e.MessageGroupId != nil && !slices.Contains(groups, *e.MessageGroupId) {
			groups = append(groups, *e.MessageGroupId)
		}
	}
	g.mu.Lock()
	for _, name := range groups {
		if g.inCall[name]++; g.inCall[name] > 1 {
			g.overlap = append(g.overlap, name)
		}
	}
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		for _, name := range groups {
			g.inCall[name]--
		}
		g.mu.Unlock()
	}()
	return g.API.SendMessageBatch(ctx, in, fns...)
}

// A group is never in two batches under way, even where SQS does not keep
// it in one receive: a standard DLQ (fair-queue groups) feeding a FIFO
// target, with sends slow enough for every batch to overlap.
func TestGroupNeverInTwoBatchesUnderWay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sqsfake.New()
		w := &world{srv: srv, api: srv.Client()}
		w.dlq = w.create(t, "dlq", nil)
		w.main = w.create(t, "main.fifo", map[string]string{"FifoQueue": "true"})
		w.operator = w.create(t, "operator", nil)
		for i := range 60 {
			w.seedDLQ(t, fmt.Sprintf("m%02d", i), fmt.Sprintf("g%d", i%3), nil)
		}
		srv.Inject(sqsfake.Fault{Op: "SendMessageBatch", Latency: time.Second})
		watch := &groupWatch{API: w.api, inCall: map[string]int{}}
		total := 0
		for range 10 {
			r, err := replay.New(watch, w.dlq, w.operator, func(o *replay.Options) { o.Target = w.main; o.Concurrency = 6 })
			if err != nil {
				t.Fatal(err)
			}
			rep, err := r.Drain(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			total += rep.Replayed
			time.Sleep(time.Minute) // what waited comes back
		}
		if len(watch.overlap) > 0 {
			t.Fatalf("expect no group in two sends at once, got %v", watch.overlap)
		}
		if total != 60 {
			t.Fatalf("expect all 60 replayed in the end, got %d", total)
		}
	})
}
