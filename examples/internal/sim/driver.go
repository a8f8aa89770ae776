package sim

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrTimeLimit is returned by Driver.Run when the story has not finished
// within its Limit of simulated time.
var ErrTimeLimit = errors.New("sim: the story did not finish within its time limit")

// Driver moves a Clock forward whenever a story is quiet, to the moment its
// next timer is due: the library code runs on the machine's clock and does
// its work in microseconds, and the minutes SQS makes it wait pass at once.
type Driver struct {
	Clock *Clock
	Probe *Probe
	// Pollers is how many long polls are always under way when nothing
	// happens: one per Consumer (its ReceiveConcurrency floor) and one per
	// Replayer.
	Pollers int
	// Quiet, when set, adds a condition for quiet: consumers hold no
	// message (Stats().InFlight is 0).
	Quiet func() bool
	// Limit bounds the simulated time. Default 24 h.
	Limit time.Duration
	// Step, when set, is called before each move with the time the clock
	// leaves: the moment whose events are complete.
	Step func(now time.Time)
}

// settle is how long a quiet story must stay quiet, with no call started or
// ended, before the clock moves: it covers the instants between a call's
// end and the caller's next step.
const settle = 200 * time.Microsecond

// Run drives the clock until done reports true, ctx ends, or Limit passes.
func (d *Driver) Run(ctx context.Context, done func() bool) error {
	limit := d.Limit
	if limit == 0 {
		limit = 24 * time.Hour
	}
	start := d.Clock.Now()
	for !done() {
		if err := d.waitQuiet(ctx); err != nil {
			return err
		}
		if done() {
			break
		}
		next, ok := d.Clock.Next()
		if !ok {
			continue
		}
		if next.Sub(start) > limit {
			return fmt.Errorf("%w (%v)", ErrTimeLimit, limit)
		}
		if d.Step != nil {
			d.Step(d.Clock.Now())
		}
		d.Clock.Set(next)
	}
	if d.Step != nil {
		d.Step(d.Clock.Now())
	}
	return nil
}

// waitQuiet returns once the story has been quiet for settle.
func (d *Driver) waitQuiet(ctx context.Context) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if ok, before := d.quiet(); ok {
			time.Sleep(settle)
			if ok, after := d.quiet(); ok && after == before {
				return nil
			}
			continue
		}
		time.Sleep(settle / 4)
	}
}

func (d *Driver) quiet() (bool, uint64) {
	ok, changes := d.Probe.quiet(d.Pollers)
	return ok && (d.Quiet == nil || d.Quiet()), changes
}
