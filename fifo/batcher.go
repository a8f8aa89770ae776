package fifo

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// BatcherOptions configure a Batcher. Zero values mean the defaults.
type BatcherOptions struct {
	// Linger is how long a partial batch waits for more messages before it
	// is sent. 0 means the default, 10 ms; negative is an error. A full
	// batch (10 entries, or the byte limit) goes at once.
	Linger time.Duration
	// SendConcurrency bounds the SendMessageBatch calls the Batcher keeps in
	// flight at once, each with up to 10 messages; on FIFO queues no two of
	// them share a group. 0 means the Sender's SendConcurrency (10 by
	// default); negative is an error.
	//
	// Messages a second ≤ calls in flight × messages per call ÷ latency: at
	// 10 ms per call, 10 calls move up to 10,000 messages a second, 4 calls
	// 4,000. Callers bound it too: each Send waits for its result, so n
	// callers keep at most n messages in the Batcher, and at 10 ms per call
	// 32 callers move at most 3,200 a second whatever the bound.
	//
	// The Batcher counts its own calls rather than drawing on a budget it
	// shares with the Sender's SendBatch calls: a shared budget would let
	// one large SendBatch hold every slot and stall the Batcher's callers
	// behind it (and the Batcher stall it in turn). It inherits the
	// Sender's value, so one setting sizes both.
	SendConcurrency int
}

// Batcher gathers messages from concurrent callers into SendMessageBatch
// calls, like the AWS Java SDK's batch manager, with up to SendConcurrency
// calls in flight. On a FIFO queue it keeps each group's order: messages of
// one group are sent in the order their Send calls reached the Batcher, no
// two calls in flight share a group, and a message waiting to be retried
// holds back only the later messages of its own group. When a message fails
// for good, the messages of its group still waiting fail with
// GroupBlockedError (unless the Sender continues groups after failures). On
// a standard queue nothing waits for anything but a free call slot.
//
// A Batcher owns one goroutine, plus one per call in flight; Close sends
// everything accepted so far and waits for all of them.
type Batcher struct {
	s    *Sender
	opts BatcherOptions

	requests chan *prepared
	closing  chan struct{}
	stopped  chan struct{}
	once     sync.Once
	ctx      context.Context // for batch calls; cancelled if Close gives up
	cancel   context.CancelFunc
}

// NewBatcher starts a Batcher on s. Close it to stop its goroutines.
func (s *Sender) NewBatcher(optFns ...func(*BatcherOptions)) (*Batcher, error) {
	var o BatcherOptions
	for _, fn := range optFns {
		if fn != nil { // an option left unset by a condition
			fn(&o)
		}
	}
	switch {
	case o.Linger < 0:
		return nil, fmt.Errorf("%w: Linger %v is negative", ErrConfig, o.Linger)
	case o.SendConcurrency < 0:
		return nil, fmt.Errorf("%w: SendConcurrency %d is negative", ErrConfig, o.SendConcurrency)
	}
	if o.Linger == 0 {
		o.Linger = 10 * time.Millisecond
	}
	if o.SendConcurrency == 0 {
		o.SendConcurrency = s.opts.SendConcurrency
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &Batcher{s: s, opts: o, requests: make(chan *prepared), closing: make(chan struct{}), stopped: make(chan struct{}), ctx: ctx, cancel: cancel}
	go b.dispatch()
	return b, nil
}

// Send queues m for the next batch and waits for its result. Invalid
// messages fail at once. If ctx ends first, Send returns ctx's error; a
// message already handed to a batch may still be sent.
func (b *Batcher) Send(ctx context.Context, m Message) (Result, error) {
	ctx, span := b.s.obs.startSend(ctx, 1)
	res, err := b.send(ctx, &m)
	b.s.obs.endSend(ctx, span, res)
	return res, err
}

func (b *Batcher) send(ctx context.Context, m *Message) (Result, error) {
	if _, err := b.s.queueURL(ctx); err != nil {
		return Result{Err: err}, err
	}
	p, err := b.s.prepare(ctx, 0, m)
	if err != nil {
		return Result{Err: err}, err
	}
	p.reply = make(chan Result, 1)
	select {
	case b.requests <- p:
	case <-b.closing:
		return Result{Err: ErrClosed}, ErrClosed
	case <-ctx.Done():
		return Result{Err: ctx.Err()}, ctx.Err()
	}
	select {
	case res := <-p.reply:
		return res, res.Err
	case <-ctx.Done():
		return Result{Err: ctx.Err()}, ctx.Err()
	}
}

// Close stops accepting messages, sends every accepted one, and waits for
// the Batcher's goroutines to end. If ctx ends first, batches in flight are
// cancelled (their callers get the error) and Close returns ctx's error
// once every goroutine has ended.
func (b *Batcher) Close(ctx context.Context) error {
	b.once.Do(func() { close(b.closing) })
	select {
	case <-b.stopped:
		b.cancel()
		return nil
	case <-ctx.Done():
		b.cancel()
		<-b.stopped
		return ctx.Err()
	}
}

// dispatch drives the pipeline: it adds arriving messages in arrival order,
// sends full batches at once and a partial one after Linger (or at Close),
// and settles the calls that come back.
func (b *Batcher) dispatch() {
	defer close(b.stopped)
	q := b.s.newPipeline(b.opts.SendConcurrency, false, func(p *prepared, r Result) { p.reply <- r })
	var (
		arrivals  int
		closing   = b.closing
		isClosing bool
		lingered  bool
		linger    *time.Timer
		lingerC   <-chan time.Time
		ctxDone   = b.ctx.Done()
	)
	for {
		if q.fill(b.ctx, lingered || isClosing) > 0 {
			lingered = false
		}
		if isClosing && q.idle() {
			if linger != nil {
				linger.Stop()
			}
			q.close()
			return
		}
		if lingerC == nil && q.queued > 0 && !lingered {
			linger = time.NewTimer(b.opts.Linger)
			lingerC = linger.C
		}
		select {
		case p := <-b.requests:
			p.index = arrivals
			arrivals++
			q.add(p)
		case <-lingerC:
			lingerC, lingered = nil, true
		case f := <-q.done:
			q.complete(b.ctx, f)
		case <-q.retryDue():
			q.wake()
		case <-closing:
			closing, isClosing = nil, true
		case <-ctxDone:
			ctxDone = nil // fill abandons what is not in flight
		}
	}
}
