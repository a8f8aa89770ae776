package service

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"time"

	"github.com/sqskit/sqskit/internal/dispatch"
)

// Runner is a component that works until its ctx is done, such as
// consumer.Consumer and replay.Replayer: Run returns nil (or ctx's error)
// once ctx is done and it has stopped, or an error when it stops for good
// before.
type Runner interface {
	Run(ctx context.Context) error
}

// Closer is a component to close once every Runner has returned, such as a
// fifo.Batcher, which sends what it accepted: Close returns once it is done,
// or soon after ctx ends.
type Closer interface {
	Close(ctx context.Context) error
}

// Components are what Run runs, by name. A name appears in the errors about
// its component, so it is unique across Runners and Closers and not empty;
// a component appears at most once in each map.
type Components struct {
	// Runners run concurrently, each in its own goroutine. At least one.
	Runners map[string]Runner
	// Closers are closed concurrently, after every Runner has returned.
	Closers map[string]Closer
}

// Options configure Run.
type Options struct {
	// GracePeriod is the most Run takes from the moment it starts stopping
	// (ctx done, or a Runner failed) to its return, Closers included.
	// Default 25 s: 5 s short of Kubernetes' default 30 s termination grace
	// period, and room for a Consumer with its 20 s ShutdownTimeout (it
	// returns within 21 s), then the Closers. Keep it above every Consumer's
	// ShutdownTimeout + 1 s. Negative is an error.
	GracePeriod time.Duration
}

// defaultGracePeriod leaves 5 s of Kubernetes' default 30 s grace period
// for whatever the process does after Run returns.
const defaultGracePeriod = 25 * time.Second

// ErrConfig is matched (errors.Is) by the error Run returns, before
// starting anything, for invalid Components or Options.
var ErrConfig = errors.New("service: invalid components or options")

// ErrGracePeriodOver is matched by the error about a component Run left
// behind when the grace period ended: a Runner still running (its goroutine
// is left running) or a Closer still closing or, since a Runner was still
// running and might yet use it, not closed.
var ErrGracePeriodOver = errors.New("grace period over")

// ComponentError is an error of one component, named as in Components.
type ComponentError struct {
	Name string
	Err  error
}

func (e *ComponentError) Error() string { return "service: " + e.Name + ": " + e.Err.Error() }
func (e *ComponentError) Unwrap() error { return e.Err }

// Run runs every Runner with a ctx of its own, derived from ctx, and stops
// them together: when ctx is done, or as soon as one of them fails. Once
// every Runner has returned it closes every Closer, with a ctx that ends
// shortly before the grace period does, and returns. Everything after the
// stop began takes at most Options.GracePeriod. A Runner returning nil
// early stops nothing: Run goes on until the others return too.
//
// The error joins (errors.Join), in this order, one *ComponentError per
// Runner that failed, first failure first, then per Closer that failed,
// then, by name, per component left behind when the grace period ended
// (matching ErrGracePeriodOver). It is nil if none did, whether ctx ended
// or not. Invalid Components or Options return an error matching ErrConfig
// and start nothing; a nil option function is skipped.
func Run(ctx context.Context, c Components, optFns ...func(*Options)) error {
	var o Options
	for _, fn := range optFns {
		if fn != nil {
			fn(&o)
		}
	}
	if err := resolve(&o, c); err != nil {
		return err
	}

	runCtx, stopRunners := context.WithCancel(ctx)
	defer stopRunners()
	type result struct {
		name string
		err  error
	}
	// Buffered so that a Runner returning after Run gave up on it does not
	// block its goroutine forever.
	results := make(chan result, len(c.Runners))
	for name, r := range c.Runners {
		go func() { results <- result{name, r.Run(runCtx)} }()
	}

	running := maps.Clone(c.Runners)
	var errs []error
	// The grace period starts with stop: deadline is zero until then, and
	// timeout nil.
	var deadline time.Time
	var timeout <-chan time.Time
	graceTimer := time.NewTimer(o.GracePeriod)
	graceTimer.Stop()
	defer graceTimer.Stop()
	stop := func() {
		stopRunners()
		deadline = time.Now().Add(o.GracePeriod)
		graceTimer.Reset(o.GracePeriod)
		timeout = graceTimer.C
	}
	ctxDone := ctx.Done()
wait:
	for len(running) > 0 {
		select {
		case <-ctxDone:
			ctxDone = nil
			if deadline.IsZero() {
				stop()
			}
		case res := <-results:
			delete(running, res.name)
			// A Runner stopped by its ctx may say so with ctx's error.
			if res.err == nil || runCtx.Err() != nil && errors.Is(res.err, runCtx.Err()) {
				continue
			}
			errs = append(errs, &ComponentError{res.name, res.err})
			if deadline.IsZero() {
				stop()
			}
		case <-timeout:
			break wait
		}
	}
	if len(running) > 0 {
		for _, name := range slices.Sorted(maps.Keys(running)) {
			errs = append(errs, &ComponentError{name, fmt.Errorf("%w (%v): still running; its goroutine is left behind", ErrGracePeriodOver, o.GracePeriod)})
		}
		for _, name := range slices.Sorted(maps.Keys(c.Closers)) {
			errs = append(errs, &ComponentError{name, fmt.Errorf("%w (%v): not closed, since a runner was still running", ErrGracePeriodOver, o.GracePeriod)})
		}
		return errors.Join(errs...)
	}
	if deadline.IsZero() { // every Runner returned nil before ctx ended
		stop()
	}
	return errors.Join(append(errs, closeAll(ctx, c.Closers, deadline, o.GracePeriod)...)...)
}

// closeAll closes every Closer at once and waits for them until deadline.
// Their ctx keeps ctx's values and ends a twentieth of the grace period
// before the deadline, so that a Closer honouring it returns in time.
func closeAll(ctx context.Context, closers map[string]Closer, deadline time.Time, gracePeriod time.Duration) []error {
	if len(closers) == 0 {
		return nil
	}
	closeCtx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline.Add(-gracePeriod/20))
	defer cancel()
	type result struct {
		name string
		err  error
	}
	results := make(chan result, len(closers))
	for name, c := range closers {
		go func() { results <- result{name, c.Close(closeCtx)} }()
	}
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	closing := maps.Clone(closers)
	var errs []error
	for len(closing) > 0 {
		select {
		case res := <-results:
			delete(closing, res.name)
			if res.err != nil {
				errs = append(errs, &ComponentError{res.name, res.err})
			}
		case <-timer.C:
			for _, name := range slices.Sorted(maps.Keys(closing)) {
				errs = append(errs, &ComponentError{name, fmt.Errorf("%w (%v): still closing; its goroutine is left behind", ErrGracePeriodOver, gracePeriod)})
			}
			return errs
		}
	}
	return errs
}

// resolve fills the defaults and checks the options and components.
func resolve(o *Options, c Components) error {
	switch {
	case o.GracePeriod < 0:
		return configError("GracePeriod %v must not be negative", o.GracePeriod)
	case o.GracePeriod == 0:
		o.GracePeriod = defaultGracePeriod
	}
	if len(c.Runners) == 0 {
		return configError("no Runners")
	}
	if err := checkComponents("Runner", c.Runners, nil); err != nil {
		return err
	}
	return checkComponents("Closer", c.Closers, c.Runners)
}

// checkComponents refuses empty names, nil components, a component under
// two names, and a name already taken in other.
func checkComponents[C any](kind string, m map[string]C, other map[string]Runner) error {
	seen := map[any]string{}
	for _, name := range slices.Sorted(maps.Keys(m)) {
		v := any(m[name])
		switch {
		case name == "":
			return configError("a %s has an empty name", kind)
		case dispatch.IsNil(v):
			return configError("%s %q is nil", kind, name)
		}
		if _, taken := other[name]; taken {
			return configError("%s %q has a Runner's name", kind, name)
		}
		if !reflect.ValueOf(v).Comparable() {
			continue // a func or a struct holding one: cannot be a duplicate we could detect
		}
		if first, dup := seen[v]; dup {
			return configError("%s %q is %q again", kind, name, first)
		}
		seen[v] = name
	}
	return nil
}

func configError(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...)
}
