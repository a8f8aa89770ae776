package consumer

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sqskit/sqskit/handler"
)

// A handler.Handler's ctx carries its message's lease, which moves with the
// heartbeat's extensions and whose loss cancels the ctx.
func TestHandlerSeesItsLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		f.send(t, "", "m")
		type look struct{ at, until time.Time }
		looks := make(chan look, 4)
		c := newConsumer(t, f, func(ctx context.Context, m *handler.Message) error {
			l := handler.LeaseFrom(ctx)
			if l == nil {
				t.Error("expect a lease on the handler's ctx")
				return nil
			}
			for range 3 {
				looks <- look{time.Now(), l.Until()}
				time.Sleep(25 * time.Second)
			}
			return nil
		}, func(o *Options) {
			// the handler sleeps its last 25 s through shutdown
			o.VisibilityTimeout, o.HeartbeatInterval, o.ShutdownTimeout = 30*time.Second, 10*time.Second, 30*time.Second
		})
		stop := started(t, c)
		var got []look
		for range 3 {
			got = append(got, <-looks)
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if left := got[0].until.Sub(got[0].at); left <= 25*time.Second || left > 30*time.Second {
			t.Errorf("expect about the visibility timeout left at the start, got %v", left)
		}
		for i := 1; i < len(got); i++ {
			if !got[i].until.After(got[i-1].until) || !got[i].until.After(got[i].at) {
				t.Errorf("expect the lease extended ahead of now at look %d, got %v after %v at %v", i, got[i].until, got[i-1].until, got[i].at)
			}
		}
	})
}
