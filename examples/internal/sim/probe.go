package sim

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"
)

// Probe watches the SQS calls of a story through SDK middleware on each
// client: the calls under way, the long polls among them, and the receive
// loops that hold messages between two receives. It counts requests per
// operation too (SDK retries included, as SQS bills them). It is safe for
// concurrent use.
type Probe struct {
	clock *Clock // nil: counting only (a real endpoint)

	mu       sync.Mutex
	active   int    // calls under way, long polls aside
	polls    int    // long polls under way
	changes  uint64 // calls started or ended so far
	holding  int    // loops between a receive that returned messages and their next receive
	requests map[string]int
}

// NewProbe returns a probe for a story on clock; with a nil clock (a real
// endpoint, real time) it only counts requests.
func NewProbe(clock *Clock) *Probe {
	return &Probe{clock: clock, requests: map[string]int{}}
}

// Instrument adds the probe to an SQS client's options:
//
//	client := srv.Client(probe.Instrument)
func (p *Probe) Instrument(o *sqs.Options) {
	o.APIOptions = append(o.APIOptions, p.count, func(s *middleware.Stack) error {
		return s.Initialize.Add(middleware.InitializeMiddlewareFunc("sim.calls", p.track), middleware.Before)
	})
}

// InstrumentReplayer adds the probe to the client of a replay.Replayer that
// runs with Concurrency 1, so one loop makes all its receives: the loop holds
// the messages a receive returned, and works on them, until it receives
// again. On a simulated clock it also shifts the SentTimestamp of the
// messages the replayer receives from the queue's fake time to the
// machine's: the replayer reads the machine's clock to tell when a message
// held in the DLQ is due, as it would beside real SQS, whose clock is the
// world's.
func (p *Probe) InstrumentReplayer(o *sqs.Options) {
	p.Instrument(o)
	l := &loop{p: p}
	o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
		return s.Initialize.Add(middleware.InitializeMiddlewareFunc("sim.loop", l.receive), middleware.After)
	})
}

// count counts every request, after the SDK's retry middleware.
func (p *Probe) count(s *middleware.Stack) error {
	return s.Finalize.Insert(middleware.FinalizeMiddlewareFunc("sim.count", func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
		p.mu.Lock()
		p.requests[middleware.GetOperationName(ctx)]++
		p.mu.Unlock()
		return next.HandleFinalize(ctx, in)
	}), "Retry", middleware.After)
}

func (p *Probe) track(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
	r, ok := in.Parameters.(*sqs.ReceiveMessageInput)
	poll := ok && r.WaitTimeSeconds > 0
	p.mu.Lock()
	if poll {
		p.polls++
	} else {
		p.active++
	}
	p.changes++
	p.mu.Unlock()
	out, md, err := next.HandleInitialize(ctx, in)
	p.mu.Lock()
	if poll {
		p.polls--
	} else {
		p.active--
	}
	p.changes++
	p.mu.Unlock()
	return out, md, err
}

// loop is the one receive loop of a client. It holds messages from a
// receive that returned some until its next receive begins.
type loop struct {
	p       *Probe
	holding bool // guarded by p.mu
}

func (l *loop) receive(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
	if _, ok := in.Parameters.(*sqs.ReceiveMessageInput); !ok {
		return next.HandleInitialize(ctx, in)
	}
	l.hold(false)
	out, md, err := next.HandleInitialize(ctx, in)
	res, ok := out.Result.(*sqs.ReceiveMessageOutput)
	if err != nil || !ok || len(res.Messages) == 0 {
		return out, md, err
	}
	if l.p.clock != nil {
		skew := time.Until(l.p.clock.Now())
		for i := range res.Messages {
			m := &res.Messages[i]
			if ms, perr := strconv.ParseInt(m.Attributes["SentTimestamp"], 10, 64); perr == nil {
				m.Attributes["SentTimestamp"] = strconv.FormatInt(ms-skew.Milliseconds(), 10)
			}
		}
	}
	l.hold(true)
	return out, md, err
}

func (l *loop) hold(h bool) {
	l.p.mu.Lock()
	defer l.p.mu.Unlock()
	switch {
	case h && !l.holding:
		l.p.holding++
	case !h && l.holding:
		l.p.holding--
	}
	l.holding = h
}

// Requests returns the requests made so far, per operation.
func (p *Probe) Requests() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int, len(p.requests))
	for op, n := range p.requests {
		out[op] = n
	}
	return out
}

// quiet reports whether no call is under way but long polls parked on the
// clock, at least pollers of them, and no loop holds messages; changes lets
// a caller see that nothing happened between two looks.
func (p *Probe) quiet(pollers int) (ok bool, changes uint64) {
	p.mu.Lock()
	active, polls, holding, changes := p.active, p.polls, p.holding, p.changes
	p.mu.Unlock()
	return active == 0 && holding == 0 && polls >= pollers && p.clock.Timers() == polls, changes
}
