package consumer

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// nilPointerError is an error type whose Error method dereferences its
// receiver: a nil *nilPointerError returned as an error is the usual Go
// mistake (the interface is not nil).
type nilPointerError struct{ msg string }

func (e *nilPointerError) Error() string { return e.msg }

func returnsNilPointerError(context.Context, *Message) error {
	var e *nilPointerError
	return e
}

// A handler's error whose Error method panicked used to crash the process:
// the consumer formats the error for its log outside the handler's recover.
// It now fails the message as a panic would.
func TestHandlerErrorWhoseErrorMethodPanics(t *testing.T) {
	t.Run("Lambda", func(t *testing.T) {
		var failures []error
		l, err := NewLambda(returnsNilPointerError, func(o *LambdaOptions) {
			o.Hooks.Failed = func(_ *Message, err error) { failures = append(failures, err) }
		})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := l.Handle(context.Background(), sqsEvent(stdArn, ":a"))
		if err != nil || len(resp.BatchItemFailures) != 1 {
			t.Fatalf("expect the message failed, got %v, %v", resp, err)
		}
		var p *PanicError
		if len(failures) != 1 || !errors.As(failures[0], &p) {
			t.Fatalf("expect a PanicError, got %v", failures)
		}
	})
	t.Run("Consumer", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := newQueue(t, "q", nil)
			q.send(t, "", "a")
			c, err := New(q.client, q.url, returnsNilPointerError, func(o *Options) { o.VisibilityTimeout = 30 * time.Second })
			if err != nil {
				t.Fatal(err)
			}
			stop := started(t, c)
			time.Sleep(10 * time.Second)
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			if st := c.Stats(); st.Failed == 0 || st.Deleted != 0 || st.InFlight != 0 {
				t.Fatalf("expect the message failed, not deleted, nothing held: %+v", st)
			}
		})
	})
	t.Run("batch Consumer", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := newQueue(t, "q", nil)
			q.send(t, "", "a")
			c, err := NewBatch(q.client, q.url, func(ctx context.Context, msgs []*Message) []error {
				return []error{returnsNilPointerError(ctx, msgs[0])}
			}, func(o *Options) { o.VisibilityTimeout = 30 * time.Second })
			if err != nil {
				t.Fatal(err)
			}
			stop := started(t, c)
			time.Sleep(10 * time.Second)
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			if st := c.Stats(); st.Failed == 0 || st.Deleted != 0 || st.InFlight != 0 {
				t.Fatalf("expect the message failed, not deleted, nothing held: %+v", st)
			}
		})
	})
}

// A handler that rewrote its Message used to rewrite the consumer's own
// record of it: Lambda reported the new ID as failed, so Lambda deleted
// the message that really failed (lost); the Consumer's in-flight count
// never came down (it stops receiving once MaxInFlight are leaked). A
// handler now gets its own copy.
func TestHandlerRewritingItsMessage(t *testing.T) {
	rewrite := func(m *Message) {
		m.ID, m.ReceiptHandle, m.Body = "forged", "forged", ""
		m.Attributes["MessageGroupId"] = "forged"
		m.Attributes["ApproximateReceiveCount"] = "999"
	}
	t.Run("Lambda", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l, err := NewLambda(func(_ context.Context, m *Message) error {
				failed := m.Body == "first"
				rewrite(m)
				if failed {
					return errors.New("failed")
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			resp, err := l.Handle(ctx, sqsEvent(fifoArn, "g:first", "g:second", "h:other"))
			if err != nil {
				t.Fatal(err)
			}
			if ctx.Err() != nil {
				t.Fatal("expect Handle to return at once, it waited for the invocation's deadline")
			}
			var got []string
			for _, f := range resp.BatchItemFailures {
				got = append(got, f.ItemIdentifier)
			}
			if want := []string{"id-0", "id-1"}; !slices.Equal(got, want) {
				t.Fatalf("expect the failed message and its group-mate reported, %v, got %v", want, got)
			}
		})
	})
	t.Run("batch Lambda", func(t *testing.T) {
		l, err := NewBatchLambda(func(_ context.Context, msgs []*Message) []error {
			for _, m := range msgs {
				rewrite(m)
			}
			return []error{errors.New("failed"), nil}
		})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := l.Handle(context.Background(), sqsEvent(stdArn, ":first", ":second"))
		if err != nil || len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "id-0" {
			t.Fatalf("expect id-0 reported failed, got %v, %v", resp.BatchItemFailures, err)
		}
	})
	t.Run("Consumer", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := newQueue(t, "q.fifo", nil)
			q.send(t, "g", "1", "2", "3")
			c, err := New(q.client, q.url, func(_ context.Context, m *Message) error { rewrite(m); return nil },
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
