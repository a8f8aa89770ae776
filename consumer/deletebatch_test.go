package consumer

import (
	"context"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/handler"
)

// The messages of one receive that finish together are deleted in one
// DeleteMessageBatch: a partial batch waits while any message is still
// waiting or running, and the last one to finish sends it. A message
// counts as busy until its delete is queued; were it to stop counting
// first, a message finishing at the same moment would see no one busy and
// send a partial batch without it, and one receive's deletes would take
// two calls.
func TestMessagesFinishingTogetherShareOneDeleteBatch(t *testing.T) {
	const rounds, perReceive = 200, 5
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		deleted := make(chan struct{}, perReceive)
		c, err := New(f.client, f.url, func(context.Context, *handler.Message) error {
			time.Sleep(time.Second) // every handler of a receive wakes at one instant
			return nil
		}, func(o *Options) {
			o.Concurrency = perReceive
			o.Tuning.MaxInFlight, o.Tuning.MaxReceiveConcurrency = perReceive, 1
			o.DeleteLinger = time.Second // fake time stands still while a handler concludes: only no busy message sends a partial batch
			o.Hooks.Deleted = func(context.Context, *handler.Message) { deleted <- struct{}{} }
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx) }()
		for round := 1; round <= rounds; round++ {
			sendTogether(t, f, numbered(perReceive))
			for range perReceive {
				<-deleted
			}
			if got := f.srv.Calls().Op["DeleteMessageBatch"]; got != round {
				t.Fatalf("round %d: %d DeleteMessageBatch calls for %d receives of %d messages finishing together, want one a receive", round, got, round, perReceive)
			}
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// sendTogether sends bodies in one SendMessageBatch, so one receive can
// return them all.
func sendTogether(t *testing.T, f *qfix, bodies []string) {
	t.Helper()
	entries := make([]types.SendMessageBatchRequestEntry, len(bodies))
	for i, b := range bodies {
		entries[i] = types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(b)}
	}
	out, err := f.client.SendMessageBatch(t.Context(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(f.url), Entries: entries})
	if err != nil || len(out.Failed) > 0 {
		t.Fatalf("SendMessageBatch: %v %v", err, out)
	}
}
