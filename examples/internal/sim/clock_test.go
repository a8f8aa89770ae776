package sim

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestClockFiresDueTimersAndKnowsTheNext(t *testing.T) {
	c := NewClock(t0)
	if _, ok := c.Next(); ok {
		t.Fatal("expect no next timer on a new clock")
	}
	a, _ := c.After(20 * time.Second)
	b, stopB := c.After(5 * time.Second)
	now, _ := c.After(0)
	select {
	case <-now:
	default:
		t.Error("expect a timer of 0 to fire at once")
	}
	if next, ok := c.Next(); !ok || !next.Equal(t0.Add(5*time.Second)) {
		t.Errorf("expect the next timer at +5s, got %v, %v", next, ok)
	}
	if got := c.Timers(); got != 2 {
		t.Errorf("expect 2 timers, got %d", got)
	}
	c.Set(t0.Add(5 * time.Second))
	select {
	case at := <-b:
		if !at.Equal(t0.Add(5 * time.Second)) {
			t.Errorf("expect b to fire at +5s, got %v", at)
		}
	default:
		t.Error("expect b fired at +5s")
	}
	stopB() // after firing: harmless
	select {
	case <-a:
		t.Error("expect a not fired before +20s")
	default:
	}
	c.Set(t0) // never backwards
	if got := c.Now(); !got.Equal(t0.Add(5 * time.Second)) {
		t.Errorf("expect the clock to stay at +5s, got %v", got)
	}
	_, stopC := c.After(time.Second)
	stopC()
	if next, _ := c.Next(); !next.Equal(t0.Add(20 * time.Second)) {
		t.Errorf("expect a stopped timer dropped and the next at +20s, got %v", next)
	}
	c.Set(t0.Add(time.Hour))
	if _, ok := <-a; !ok || c.Timers() != 0 {
		t.Errorf("expect a fired and no timer left, got %d timers", c.Timers())
	}
}
