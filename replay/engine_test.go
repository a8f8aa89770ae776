package replay_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/replay"
)

// Where the replayer must behave as the consumer does, one test each:
// replay receives through the consumer's engine, and each of these would
// fail on an engine of replay's own that drifted from it.

// HandleLambda takes the bare array of records EventBridge Pipes passes to
// a Lambda target, as handler.Event decodes it.
func TestHandleLambdaTakesThePipesArray(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, false)
		w.seedDLQ(t, "piped", "", nil)
		records, err := json.Marshal(lambdaEvent(w.receiveAll(t, w.dlq)).Records)
		if err != nil {
			t.Fatal(err)
		}
		var event handler.Event
		if err := json.Unmarshal(records, &event); err != nil {
			t.Fatal(err)
		}
		resp, err := w.replayer(t).HandleLambda(context.Background(), event)
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("expect the record replayed, got %v, %v", resp, err)
		}
		if got := w.takeAll(t, w.main); len(got) != 1 || got[0] != "piped" {
			t.Fatalf("expect the message on its queue, got %v", got)
		}
	})
}

// attemptLog records the ReceiveRequestAttemptId of each receive.
type attemptLog struct {
	replay.API
	mu  sync.Mutex
	ids []string
}

func (l *attemptLog) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, fns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	l.mu.Lock()
	l.ids = append(l.ids, aws.ToString(in.ReceiveRequestAttemptId))
	l.mu.Unlock()
	return l.API.ReceiveMessage(ctx, in, fns...)
}

// Receives from a FIFO DLQ carry a ReceiveRequestAttemptId, so a receive
// retried after a lost answer gets the same messages back instead of
// leaving them invisible.
func TestFIFODLQReceivesCarryAnAttemptID(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, true)
		w.seedDLQ(t, "m", "g", nil)
		log := &attemptLog{API: w.api}
		r, err := replay.New(log, w.dlq, w.operator, func(o *replay.Options) {
			o.Target, o.Policy = w.main, replay.Policy{Backoff: backoff.Constant{}}
		})
		if err != nil {
			t.Fatal(err)
		}
		if rep, err := r.Drain(context.Background()); err != nil || rep.Replayed != 1 {
			t.Fatalf("expect one replayed, got %+v, %v", rep, err)
		}
		for _, id := range log.ids {
			if id == "" {
				t.Fatalf("expect every receive to carry an attempt id, got %q", log.ids)
			}
		}
	})
}

// WaitTime is whole seconds, as the consumer takes it: 1.5 s is refused
// rather than silently sent as 1.
func TestWaitTimeIsWholeSeconds(t *testing.T) {
	_, err := replay.New(newWorld(t, false).api, "https://q/dlq", "https://q/ops", func(o *replay.Options) {
		o.Target, o.WaitTime = "https://q/main", 1500*time.Millisecond
	})
	if !errors.Is(err, replay.ErrConfig) {
		t.Fatalf("expect ErrConfig, got %v", err)
	}
}
