package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/consumer"
	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/replay"
)

// ledger records what happens to every order, from the consumers' and the
// replayers' hooks, and prints the timeline: each event at once on a real
// endpoint, or each simulated moment's events together, sorted, once the
// clock leaves it. It is safe for concurrent use.
type ledger struct {
	mu     sync.Mutex
	out    io.Writer
	now    func() time.Time
	start  time.Time
	orders map[string]*order
	live   bool // print each event as it happens (real time)
	brief  bool // too many orders for a line each: a status line per minute
	lines  []line
	failed map[string]failure // consumer failures waiting for their release, by receipt handle
	lastAt time.Duration      // brief mode: the last status line's time

	inPlace []time.Duration         // consumer redelivery delays
	replays map[int][]time.Duration // replay delays, by attempt
	unknown int                     // hook calls for messages that are no order of the story
}

// failure is a consumer's failure of an order, until its release.
type failure struct {
	err  error
	call int // the order's handler calls when it failed
}

// line is one timeline event.
type line struct {
	at     time.Time
	source string
	order  *order
	text   string
	group  string // events printed together per moment and source: this is their text
}

func newLedger(out io.Writer, now func() time.Time, orders map[string]*order, live bool) *ledger {
	return &ledger{out: out, now: now, start: now(), orders: orders, live: live, brief: len(orders) > maxTimelineOrders,
		failed: map[string]failure{}, replays: map[int][]time.Duration{}}
}

// maxTimelineOrders is the most orders the timeline shows one by one.
const maxTimelineOrders = 60

// find returns the order a body is about, or nil.
func (l *ledger) find(body string) *order {
	var e event
	if json.Unmarshal([]byte(body), &e) != nil {
		return nil
	}
	return l.orders[e.Order]
}

func (l *ledger) add(source string, o *order, format string, args ...any) {
	l.lines = append(l.lines, line{at: l.now(), source: source, order: o, text: fmt.Sprintf(format, args...)})
	if l.live {
		l.flushLocked()
	}
}

// addGrouped adds an event printed on one line with the other orders of
// the same kind, source and moment.
func (l *ledger) addGrouped(source string, o *order, group string) {
	l.lines = append(l.lines, line{at: l.now(), source: source, order: o, group: group})
	if l.live {
		l.flushLocked()
	}
}

// called counts a handler call and returns its number for the order.
func (l *ledger) called(o *order) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	o.calls++
	return o.calls
}

func (l *ledger) handled(o *order) {
	l.mu.Lock()
	o.handled++
	l.mu.Unlock()
}

// consumerHooks reports a consumer's events on flow f.
func (l *ledger) consumerHooks(f *flow) consumer.Hooks {
	return consumer.Hooks{
		Failed: func(_ context.Context, m *handler.Message, err error) {
			l.mu.Lock()
			defer l.mu.Unlock()
			fl := failure{err: err}
			if o := l.find(m.Body); o != nil {
				fl.call = o.calls
			}
			l.failed[m.ReceiptHandle] = fl
		},
		Released: func(_ context.Context, m *handler.Message, in time.Duration) {
			l.mu.Lock()
			defer l.mu.Unlock()
			o := l.find(m.Body)
			fl := l.failed[m.ReceiptHandle]
			delete(l.failed, m.ReceiptHandle)
			if o == nil {
				l.unknown++
				return
			}
			back := "back at once"
			if in > 0 {
				back = "back in " + short(in)
			}
			switch err := fl.err; {
			case errors.Is(err, handler.ErrHeldBack), errors.Is(err, handler.ErrNotStarted):
				l.addGrouped(f.name, o, "not started behind a failed order of their FIFO group, released: "+back)
			case err != nil:
				l.inPlace = append(l.inPlace, in)
				l.add(f.name, o, "%s failed (call %d, receive %d): %v; %s", o.ID, fl.call, m.ReceiveCount(), err, back)
			default:
				l.add(f.name, o, "%s released; %s", o.ID, back)
			}
		},
		Deleted: func(_ context.Context, m *handler.Message) {
			l.mu.Lock()
			defer l.mu.Unlock()
			o := l.find(m.Body)
			if o == nil {
				l.unknown++
				return
			}
			o.deleted++
			switch {
			case o.deleted > 1:
				l.add(f.name, o, "%s delivered again (a duplicate: at least once)", o.ID)
			case o.calls == 1:
				l.addGrouped(f.name, o, "delivered at the first call")
			default:
				l.add(f.name, o, "%s delivered at call %d", o.ID, o.calls)
			}
		},
	}
}

// replayHooks reports the replayer's events on flow f.
func (l *ledger) replayHooks(f *flow) replay.Hooks {
	const source = "replayer"
	return replay.Hooks{
		Replayed: func(_ context.Context, m *types.Message, d replay.Decision, _ string) {
			l.mu.Lock()
			defer l.mu.Unlock()
			o := l.find(aws.ToString(m.Body))
			if o == nil {
				l.unknown++
				return
			}
			o.replays++
			l.replays[d.Attempt] = append(l.replays[d.Attempt], d.Delay)
			if f.fifo {
				l.add(source, o, "%s replay %d of %d is due: sent back to %s", o.ID, d.Attempt, f.maxReplays, f.name)
				return
			}
			l.add(source, o, "%s dead-lettered after %d receives; replay %d of %d: back on %s in %s", o.ID, f.maxReceives, d.Attempt, f.maxReplays, f.name, short(d.Delay))
		},
		Held: func(_ context.Context, m *types.Message, d replay.Decision, until time.Time) {
			l.mu.Lock()
			defer l.mu.Unlock()
			o := l.find(aws.ToString(m.Body))
			if o == nil {
				l.unknown++
				return
			}
			l.add(source, o, "%s dead-lettered after %d receives; replay %d of %d due in %s: held in the DLQ (FIFO queues take no per-message delay)",
				o.ID, f.maxReceives, d.Attempt, f.maxReplays, short(d.Delay))
		},
		Escalated: func(_ context.Context, m *types.Message, d replay.Decision) {
			l.mu.Lock()
			defer l.mu.Unlock()
			o := l.find(aws.ToString(m.Body))
			if o == nil {
				l.unknown++
				return
			}
			o.escalated = string(d.Reason)
			l.add(source, o, "%s dead-lettered; escalated to the operator queue: %s (%s)", o.ID, d.Reason, d.Detail)
		},
		Failed: func(_ context.Context, m *types.Message, err error) {
			l.mu.Lock()
			defer l.mu.Unlock()
			if o := l.find(aws.ToString(m.Body)); o != nil {
				l.add(source, o, "%s could not be moved yet: %v", o.ID, err)
			}
		},
		Rejected: func(_ context.Context, m *types.Message, d replay.Decision, err error) {
			l.mu.Lock()
			defer l.mu.Unlock()
			if o := l.find(aws.ToString(m.Body)); o != nil {
				l.add(source, o, "%s rejected by SQS in every form, left in the DLQ: %v", o.ID, err)
			}
		},
	}
}

// note adds a line that concerns no single order (the producer's sends).
func (l *ledger) note(source, format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.add(source, nil, format, args...)
}

// flush prints the events recorded so far; the Driver calls it before the
// clock leaves a moment.
func (l *ledger) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flushLocked()
}

func (l *ledger) flushLocked() {
	if l.brief {
		l.statusLocked()
		return
	}
	if !l.live {
		// Events of one moment come from goroutines in no particular order:
		// the producer's first, then the grouped ones, then the others by
		// order, each order's replay first (the replayer's hook runs after
		// its send, when the consumer may have the message already).
		slices.SortStableFunc(l.lines, func(a, b line) int {
			c := cmp.Or(a.at.Compare(b.at), cmp.Compare(rank(a.source != "producer"), rank(b.source != "producer")),
				cmp.Compare(rank(a.group == ""), rank(b.group == "")))
			if c == 0 && a.group != "" {
				c = cmp.Or(cmp.Compare(sourceRank(a.source), sourceRank(b.source)), cmp.Compare(a.group, b.group))
			}
			return cmp.Or(c, cmp.Compare(orderKey(a.order), orderKey(b.order)), cmp.Compare(rank(a.source != "replayer"), rank(b.source != "replayer")))
		})
	}
	for i := 0; i < len(l.lines); {
		ln := l.lines[i]
		text := ln.text
		if ln.group != "" {
			var group []*order
			for ; i < len(l.lines) && l.lines[i].group == ln.group && l.lines[i].source == ln.source && l.lines[i].at.Equal(ln.at); i++ {
				group = append(group, l.lines[i].order)
			}
			text = orderIDs(group) + " " + ln.group
		} else {
			i++
		}
		fmt.Fprintf(l.out, "%9s  %-12s %s\n", clock(ln.at.Sub(l.start)), ln.source, text)
	}
	l.lines = l.lines[:0]
}

// finish prints what is left of the timeline, and the last status line.
func (l *ledger) finish() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lastAt = -time.Hour
	l.flushLocked()
}

// statusLocked prints, for a story too large for a line per event, one line
// of counts per minute.
func (l *ledger) statusLocked() {
	l.lines = l.lines[:0]
	at := l.now().Sub(l.start)
	if at-l.lastAt < time.Minute && at != 0 {
		return
	}
	l.lastAt = at
	var delivered, escalated, calls int
	for _, o := range l.orders {
		calls += o.calls
		switch {
		case o.deleted > 0:
			delivered++
		case o.escalated != "":
			escalated++
		}
	}
	fmt.Fprintf(l.out, "%9s  delivered %d, escalated %d, pending %d; %d handler calls\n",
		clock(at), delivered, escalated, len(l.orders)-delivered-escalated, calls)
}

// sourceRank orders a moment's grouped events: the producer's, then the
// consumers' (FIFO first, as in the intro).
func sourceRank(source string) int {
	switch source {
	case "producer":
		return 0
	case "orders.fifo":
		return 1
	case "replayer":
		return 3
	}
	return 2
}

// rank orders false before true.
func rank(b bool) int {
	if b {
		return 1
	}
	return 0
}

func orderKey(o *order) string {
	if o == nil {
		return ""
	}
	return o.ID
}

// done reports whether every order reached its end: deleted after a
// success, or escalated.
func (l *ledger) done() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, o := range l.orders {
		if o.deleted == 0 && o.escalated == "" {
			return false
		}
	}
	return true
}

// clock formats a story time as m:ss.s, or h:mm:ss from an hour.
func clock(d time.Duration) string {
	if d >= time.Hour {
		return fmt.Sprintf("%d:%02d:%02d", int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60)
	}
	return fmt.Sprintf("%d:%04.1f", int(d.Minutes()), d.Seconds()-60*float64(int(d.Minutes())))
}

// short formats a delay to a tenth of a second.
func short(d time.Duration) string {
	s := d.Round(100 * time.Millisecond).String()
	s = strings.Replace(s, "h0m", "h", 1)
	return strings.Replace(s, "m0s", "m", 1)
}
