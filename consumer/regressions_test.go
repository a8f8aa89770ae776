package consumer

import (
	"context"
	"errors"
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
