package consumer

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/sqsfake"
)

func (s *spyClient) receiveCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.receives)
}

// Once Pause returns, no new receive starts (those already on their way
// finish and their messages are handled); held messages are still
// handled and deleted; Resume brings intake back and the rest of the
// backlog is drained.
func TestPauseStopsNewReceivesAndResumeRestoresThem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		f.send(t, "", numbered(300)...)
		f.srv.Inject(sqsfake.Fault{Latency: 10 * time.Millisecond})
		spy := newSpy(f.client)
		c, err := New(spy, f.url, func(context.Context, *handler.Message) error {
			time.Sleep(5 * time.Millisecond)
			return nil
		}, func(o *Options) { o.VisibilityTimeout = 30 * time.Second })
		if err != nil {
			t.Fatal(err)
		}
		stop := started(t, c)
		until(t, "some deletes", func() bool { return c.Stats().Deleted >= 20 })
		c.Pause("operator")
		synctest.Wait() // everything started before Pause is as far as it gets
		before := spy.receiveCount()
		if s := c.Status(); s.State != StatePaused || !slices.Equal(s.PausedBy, []string{"operator"}) || !s.Ready {
			t.Errorf("expect paused by operator and ready, got %v %v ready %v (%s)", s.State, s.PausedBy, s.Ready, s.NotReady)
		}
		time.Sleep(time.Minute)
		if got := spy.receiveCount(); got != before {
			t.Errorf("expect no receive after Pause, got %d more", got-before)
		}
		if s := c.Stats(); s.InFlight != 0 || s.Deleted == 0 || s.Deleted >= 300 {
			t.Errorf("expect the held messages handled and deleted while paused, and a backlog left: %+v", s)
		}
		c.Resume("operator")
		until(t, "the backlog after Resume", func() bool { return c.Stats().Deleted == 300 })
		if s := c.Status(); s.State != StateReceiving || len(s.PausedBy) != 0 {
			t.Errorf("expect receiving again, got %v %v", s.State, s.PausedBy)
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	})
}

// Intake stays stopped while any pauser holds it; pausing twice under one
// name is one pause; Pause before Run makes Run start paused; "" is a
// pauser named "unnamed".
func TestPausersAreCountedByName(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		f.send(t, "", numbered(5)...)
		c := newConsumer(t, f, func(context.Context, *handler.Message) error { return nil })
		c.Pause("operator")
		c.Pause("operator")
		c.Pause("")
		c.Resume("nobody")
		if s := c.Status(); s.State != StateNotStarted || !slices.Equal(s.PausedBy, []string{"operator", "unnamed"}) || s.Ready {
			t.Fatalf("expect not started, paused by operator and unnamed, got %v %v ready %v", s.State, s.PausedBy, s.Ready)
		}
		stop := started(t, c)
		time.Sleep(time.Minute)
		if n := f.srv.Calls().Op["ReceiveMessage"]; n != 0 {
			t.Fatalf("expect no receive while paused from the start, got %d", n)
		}
		c.Resume("operator")
		time.Sleep(time.Minute)
		if n := f.srv.Calls().Op["ReceiveMessage"]; n != 0 || c.Status().State != StatePaused {
			t.Fatalf("expect still paused by unnamed, got %d receives, %v", n, c.Status().State)
		}
		c.Resume("")
		until(t, "every message", func() bool { return c.Stats().Deleted == 5 })
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if s := c.Status(); s.State != StateStopped || s.RunError != nil || s.Ready {
			t.Errorf("expect stopped without error, not ready, got %v %v %v", s.State, s.RunError, s.Ready)
		}
	})
}

// With Pause and Resume in the code, an idle consumer still costs one long
// poll per floor receiver per WaitTime, after a pause as before it, and
// none while paused.
func TestIdleCostUnchangedAfterPauseAndResume(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		c := newConsumer(t, f, func(context.Context, *handler.Message) error { return nil }, func(o *Options) { o.ReceiveConcurrency = 3 })
		stop := started(t, c)
		time.Sleep(time.Minute)
		c.Pause("operator")
		time.Sleep(20 * time.Second) // the long polls on their way end
		f.srv.ResetCalls()
		time.Sleep(5 * time.Minute)
		if n := f.srv.Calls().Op["ReceiveMessage"]; n != 0 {
			t.Fatalf("expect no receive while paused, got %d", n)
		}
		c.Resume("operator")
		time.Sleep(10*time.Minute - time.Millisecond)
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if n := f.srv.Calls().Op["ReceiveMessage"]; n != 3*30 {
			t.Fatalf("expect 3 receivers × 30 long polls of 20 s after Resume, got %d", n)
		}
	})
}
