package consumer

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sqskit/sqskit/handler"
)

// A handler that rewrote its handler.Message used to rewrite the consumer's own
// record of it: the in-flight count never came down, so the consumer
// stopped receiving once MaxInFlight were leaked, and a rewritten FIFO
// group kept Run from returning. A handler now gets its own copy.
func TestHandlerRewritingItsMessage(t *testing.T) {
	rewrite := func(m *handler.Message) {
		m.ID, m.ReceiptHandle, m.Body = "forged", "forged", ""
		m.Attributes["MessageGroupId"] = "forged"
		m.Attributes["ApproximateReceiveCount"] = "999"
	}
	t.Run("Consumer", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := newQueue(t, "q.fifo", nil)
			q.send(t, "g", "1", "2", "3")
			c, err := New(q.client, q.url, func(_ context.Context, m *handler.Message) error { rewrite(m); return nil },
				func(o *Options) { o.VisibilityTimeout = 30 * time.Second })
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- c.Run(ctx) }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(time.Hour):
				t.Fatalf("Run still running an hour after its ctx ended: %+v", c.Stats())
			}
			visible, inFlight := q.counts(t)
			if st := c.Stats(); st.Deleted != 3 || st.InFlight != 0 || visible+inFlight != 0 {
				t.Fatalf("expect all three deleted and nothing held, got %+v, %d left on the queue", st, visible+inFlight)
			}
		})
	})
}
