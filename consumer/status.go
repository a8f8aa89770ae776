package consumer

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sqskit/sqskit/backoff"
)

// State is where a Consumer is in its life.
type State int

const (
	// StateNotStarted: Run has not been called.
	StateNotStarted State = iota
	// StateStarting: Run was called and has not yet read the queue's
	// VisibilityTimeout (its first call, GetQueueAttributes; skipped when
	// Options.VisibilityTimeout is set).
	StateStarting
	// StateReceiving: receives go on.
	StateReceiving
	// StatePaused: someone holds Pause; in-flight work goes on.
	StatePaused
	// StateDraining: receiving has stopped (ctx done, a final error, or
	// Drain found the queue empty) and Run settles what it holds.
	StateDraining
	// StateStopped: Run returned.
	StateStopped
)

var stateNames = [...]string{"not started", "starting", "receiving", "paused", "draining", "stopped"}

// String returns the state's name: "receiving", "paused", ….
func (s State) String() string {
	if s < 0 || int(s) >= len(stateNames) {
		return "unknown"
	}
	return stateNames[s]
}

// Status is a snapshot of a Consumer, for health checks and dashboards.
type Status struct {
	Queue string // the queue's URL
	State State
	// Ready is the readiness verdict Health serves: the consumer is
	// receiving or paused, and SQS is not failing, that is fewer than
	// three receives in a row failed (throttled ones do not count; a
	// successful receive, empty or not, resets the count) and no receive
	// has gone unanswered for 30 s past its long poll. NotReady says why
	// not ("" when Ready).
	Ready    bool
	NotReady string
	// PausedBy lists who holds Pause, sorted ("circuit-breaker", …).
	PausedBy []string
	// Throttled: SQS throttled a receive, delete or visibility change in
	// the last 10 s, so the consumer paces those calls below its ceiling.
	Throttled bool
	// LastReceive is the end of the last successful ReceiveMessage, empty
	// or not; zero before the first.
	LastReceive time.Time
	// LastError is the last SQS call's failure (throttling aside), at
	// LastErrorAt; it stays after later calls succeed. Run's own error, when
	// it returned one, is RunError.
	LastError   error
	LastErrorAt time.Time
	RunError    error
	// FailedReceives counts the receives that failed in a row (throttled
	// ones aside).
	FailedReceives int
	InFlight       int       // messages held, as Stats.InFlight
	Started        time.Time // the latest Run's start; zero before the first
}

// notReadyAfter is the receives that must fail in a row for the consumer
// to stop being ready: one failure is a blip the next receive (after
// ReceiveBackoff, 100 ms at first) usually clears; three span about a
// second of backoff and, behind each, the SDK's own three attempts.
const notReadyAfter = 3

// unansweredAfter is how long past its long poll a receive may go
// unanswered before the consumer stops being ready: SQS (or the network)
// has stopped answering, and no error will come until the client's own
// timeout, if it has one.
const unansweredAfter = 30 * time.Second

// throttledFor is how long Status.Throttled stays true after a throttled
// call: past a few throttle cycles (a paced consumer is throttled every
// few seconds at the quota), so a dashboard does not flicker.
const throttledFor = 10 * time.Second

// pauserBreaker is the name the circuit breaker (Options.Breaker) pauses
// under.
const pauserBreaker = "circuit-breaker"

// control is the part of a Consumer that outlives a Run: who pauses it,
// the Run going on, and what Status reports. mu orders before run.mu.
type control struct {
	mu       sync.Mutex
	queue    string   // the queue as given to New, its URL once Run resolved a name
	pausedBy []string // sorted, unique
	r        *run     // the Run going on, nil between Runs
	started  time.Time
	stopped  bool  // a Run returned and no other started since
	runErr   error // the last Run's error

	errMu     sync.Mutex
	lastErr   error
	lastErrAt time.Time

	lastReceive  atomic.Int64 // UnixNano, 0 for none
	lastThrottle atomic.Int64 // UnixNano, 0 for none
	failStreak   atomic.Int32
}

// Pause stops intake: no receive starts while any pauser holds it. by names
// the pauser ("operator", "deploy"; the circuit breaker pauses as
// "circuit-breaker"; "" counts as "unnamed"); pausing twice under one name is one pause. Messages held go
// on: running handlers finish, waiting messages start, heartbeats and
// deletes continue. A receive already on its way (on an idle queue, a long
// poll of up to WaitTime) is not cut short: SQS may have picked messages
// for it, which a cancelled call would leave invisible for their
// visibility timeout with a receive counted, so its messages are handled.
// Pause may be called before Run (Run then starts paused) and from any
// goroutine; a paused Drain waits for Resume (or its ctx).
func (c *Consumer) Pause(by string) {
	c.setPaused(pauserName(by), true)
}

// Resume releases by's pause; intake resumes when no pauser is left. A
// name that does not hold a pause is ignored.
func (c *Consumer) Resume(by string) {
	c.setPaused(pauserName(by), false)
}

func pauserName(by string) string {
	if by == "" {
		return "unnamed"
	}
	return by
}

func (c *Consumer) setPaused(by string, pause bool) {
	ctl := &c.ctl
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	i, held := slices.BinarySearch(ctl.pausedBy, by)
	switch {
	case pause && !held:
		ctl.pausedBy = slices.Insert(ctl.pausedBy, i, by)
	case !pause && held:
		ctl.pausedBy = slices.Delete(ctl.pausedBy, i, i+1)
	default:
		return
	}
	if ctl.r != nil {
		ctl.r.setPaused(ctl.pausedLocked())
	}
}

// pausedLocked reports whether a pauser holds the Consumer, and one other
// than the circuit breaker (whose probe the others hold back). Callers
// hold ctl.mu.
func (ctl *control) pausedLocked() (paused, others bool) {
	n := len(ctl.pausedBy)
	if _, ok := slices.BinarySearch(ctl.pausedBy, pauserBreaker); ok {
		n--
	}
	return len(ctl.pausedBy) > 0, n > 0
}

// setPaused holds or lets go receives.
func (r *run) setPaused(paused, others bool) {
	r.mu.Lock()
	r.paused, r.pausedByOthers = paused, others
	r.mu.Unlock()
	r.turnCond.Broadcast()
}

// attach makes r the Run going on; it starts paused if a pauser holds the
// Consumer.
func (ctl *control) attach(r *run) {
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	ctl.r, ctl.started, ctl.stopped, ctl.runErr = r, time.Now(), false, nil
	ctl.failStreak.Store(0)
	r.paused, r.pausedByOthers = ctl.pausedLocked()
}

// detach records the end of the Run going on, with its error.
func (ctl *control) detach(err error) {
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	ctl.r, ctl.stopped, ctl.runErr = nil, true, err
}

// received records a successful receive.
func (ctl *control) received(now time.Time) {
	ctl.lastReceive.Store(now.UnixNano())
	if ctl.failStreak.Load() != 0 {
		ctl.failStreak.Store(0)
	}
}

// failed records a failed SQS call; receive says it was a receive (which
// counts toward readiness).
func (ctl *control) failed(err error, now time.Time, receive bool) {
	if backoff.IsThrottle(err) {
		ctl.lastThrottle.Store(now.UnixNano())
		return
	}
	if receive {
		ctl.failStreak.Add(1)
	}
	ctl.errMu.Lock()
	ctl.lastErr, ctl.lastErrAt = err, now
	ctl.errMu.Unlock()
}

// Status returns a snapshot of the consumer. It is cheap (two short locks)
// and safe to call from any goroutine, before, during and after Run.
func (c *Consumer) Status() Status {
	ctl := &c.ctl
	now := time.Now()
	s := Status{InFlight: int(c.stats.inFlight.Load()), FailedReceives: int(ctl.failStreak.Load())}
	if ns := ctl.lastReceive.Load(); ns != 0 {
		s.LastReceive = time.Unix(0, ns)
	}
	if ns := ctl.lastThrottle.Load(); ns != 0 {
		s.Throttled = now.Sub(time.Unix(0, ns)) < throttledFor
	}
	ctl.errMu.Lock()
	s.LastError, s.LastErrorAt = ctl.lastErr, ctl.lastErrAt
	ctl.errMu.Unlock()

	ctl.mu.Lock()
	s.Queue = ctl.queue
	s.PausedBy = slices.Clone(ctl.pausedBy)
	s.Started, s.RunError = ctl.started, ctl.runErr
	var hung time.Duration // the oldest receive on its way past its long poll
	switch r := ctl.r; {
	case r != nil:
		s.State = r.state()
		for i := range r.calling {
			if ns := r.calling[i].Load(); ns != 0 {
				hung = max(hung, now.Sub(time.Unix(0, ns))-c.opts.WaitTime)
			}
		}
	case ctl.stopped:
		s.State = StateStopped
	}
	ctl.mu.Unlock()

	switch {
	case s.State == StateNotStarted:
		s.NotReady = "not started"
	case s.State == StateStarting && s.LastError != nil && s.LastErrorAt.After(s.Started):
		s.NotReady = "starting: reading the queue's attributes failed: " + s.LastError.Error()
	case s.State == StateStarting:
		s.NotReady = "starting: reading the queue's attributes"
	case s.State == StateDraining:
		s.NotReady = "draining: receiving has stopped"
	case s.State == StateStopped && s.RunError != nil:
		s.NotReady = "stopped: " + s.RunError.Error()
	case s.State == StateStopped:
		s.NotReady = "stopped"
	case hung > unansweredAfter:
		s.NotReady = "SQS is not answering: a receive has waited " + (hung + c.opts.WaitTime).Truncate(time.Second).String()
	case s.FailedReceives >= notReadyAfter:
		msg := "SQS is failing: the last receives failed"
		if s.LastError != nil {
			msg += ": " + s.LastError.Error()
		}
		s.NotReady = msg
	}
	s.Ready = s.NotReady == ""
	return s
}

// state is where r is.
func (r *run) state() State {
	select {
	case <-r.visKnown:
	default:
		return StateStarting
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.pollDone || r.stopping:
		return StateDraining
	case r.paused:
		return StatePaused
	}
	return StateReceiving
}
