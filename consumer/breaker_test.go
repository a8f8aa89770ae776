package consumer

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sqskit/sqskit/handler"
)

// receivesOf returns how many receives asked for exactly k messages, and
// in all.
func (s *spyClient) receivesOf(k int32) (of, all int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, in := range s.receives {
		if in.MaxNumberOfMessages == k {
			of++
		}
	}
	return of, len(s.receives)
}

// When the handler keeps failing the breaker pauses intake under
// "circuit-breaker"; after the cooldown one receive of one message probes:
// a failed probe pauses again, a successful one resumes intake, and the
// backlog drains.
func TestBreakerPausesProbesAndResumes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		f.send(t, "", numbered(200)...)
		var down atomic.Bool
		down.Store(true)
		spy := newSpy(f.client)
		c, err := New(spy, f.url, func(context.Context, *handler.Message) error {
			time.Sleep(10 * time.Millisecond)
			if down.Load() {
				return errors.New("database down")
			}
			return nil
		}, func(o *Options) {
			o.VisibilityTimeout, o.OnFailure = 30*time.Second, ReleaseNow
			o.Breaker = Breaker{Failures: 5, Window: 10, Cooldown: 10 * time.Second}
		})
		if err != nil {
			t.Fatal(err)
		}
		stop := started(t, c)
		until(t, "the breaker to open", func() bool { return slices.Contains(c.Status().PausedBy, pauserBreaker) })
		time.Sleep(time.Second) // the receives on their way come back; what they brought fails
		synctest.Wait()
		probes, before := spy.receivesOf(1)
		if s := c.Status(); s.State != StatePaused || s.InFlight != 0 {
			t.Fatalf("expect paused, holding nothing, got %+v", s)
		}
		time.Sleep(8 * time.Second)
		if _, all := spy.receivesOf(1); all != before {
			t.Fatalf("expect no receive during the cooldown, got %d", all-before)
		}
		time.Sleep(2 * time.Second) // the cooldown ends: one probe, which fails
		synctest.Wait()
		if of, all := spy.receivesOf(1); of != probes+1 || all != before+1 {
			t.Fatalf("expect one probe of one message, got %d receives, %d of them of one", all-before, of-probes)
		}
		if s := c.Status(); !slices.Equal(s.PausedBy, []string{pauserBreaker}) {
			t.Fatalf("expect paused again after the failed probe, got %v", s.PausedBy)
		}
		down.Store(false)
		time.Sleep(5 * time.Second)
		if _, all := spy.receivesOf(1); all != before+1 {
			t.Fatalf("expect no receive during the second cooldown, got %d", all-before-1)
		}
		until(t, "every message after the probe succeeded", func() bool { return c.Stats().Deleted == 200 })
		if s := c.Status(); s.State != StateReceiving || len(s.PausedBy) != 0 {
			t.Errorf("expect receiving, got %v %v", s.State, s.PausedBy)
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	})
}

// An operator's pause holds the breaker's probe back too; a breaker still
// open when Run ends leaves no pause behind.
func TestBreakerProbeWaitsForOtherPausers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "jobs", nil)
		f.send(t, "", numbered(20)...)
		spy := newSpy(f.client)
		c, err := New(spy, f.url, func(context.Context, *handler.Message) error { return errors.New("down") }, func(o *Options) {
			o.VisibilityTimeout, o.OnFailure = 30*time.Second, ReleaseNow
			o.Breaker = Breaker{Failures: 3, Cooldown: 5 * time.Second}
		})
		if err != nil {
			t.Fatal(err)
		}
		stop := started(t, c)
		until(t, "the breaker to open", func() bool { return slices.Contains(c.Status().PausedBy, pauserBreaker) })
		c.Pause("operator")
		time.Sleep(time.Second)
		synctest.Wait()
		_, before := spy.receivesOf(1)
		time.Sleep(time.Minute)
		if _, all := spy.receivesOf(1); all != before {
			t.Fatalf("expect no probe while the operator pauses, got %d receives", all-before)
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if s := c.Status(); !slices.Equal(s.PausedBy, []string{"operator"}) {
			t.Errorf("expect only the operator's pause left after Run, got %v", s.PausedBy)
		}
	})
}

func TestBreakerOptions(t *testing.T) {
	for _, b := range []Breaker{{Failures: -1}, {Window: 5}, {Failures: 5, Window: 4}, {Failures: 1, Window: 1001}, {Failures: 1, Cooldown: time.Millisecond}, {Failures: 1, Cooldown: 2 * time.Hour}} {
		o := Options{Tuning: Tuning{Breaker: b}}
		if err := resolve(&o); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: expect ErrConfig, got %v", b, err)
		}
	}
	o := Options{Tuning: Tuning{Breaker: Breaker{Failures: 4}}}
	if err := resolve(&o); err != nil || o.Breaker.Window != 8 || o.Breaker.Cooldown != 30*time.Second {
		t.Errorf("expect Window 8 and Cooldown 30 s by default, got %+v, %v", o.Breaker, err)
	}
}
