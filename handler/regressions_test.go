package handler

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// A handler that rewrote its Message used to rewrite the Lambda's record of
// it: the response named the new ID as failed, so Lambda deleted the
// message that really failed (lost), and a rewritten FIFO group kept the
// invocation waiting for its deadline. A handler now gets its own copy.
func TestLambdaHandlerRewritingItsMessage(t *testing.T) {
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
}
