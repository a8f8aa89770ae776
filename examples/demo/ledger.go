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

// ledger records what happens to every order, from the handler and from
// the consumers' and the replayers' hooks, and prints the timeline: each
// event at once on a real endpoint; in memory, once the story has ended,
// every event at the moment and in the turn its message was received
// (hooks are told after the event, on a goroutine of their own, so when a
// hook runs says nothing). It is safe for concurrent use.
type ledger struct {
	mu     sync.Mutex
	out    io.Writer
	st     *stage
	orders map[string]*order
	live   bool // print each event as it happens (real time)
	brief  bool // too many orders for a line each: a status line per minute
	lines  []line
	calls  map[string]int   // the handler call that a receive brought, by receipt handle
	failed map[string]error // consumer failures waiting for their release, by receipt handle
	marks  []mark           // brief mode: what the status lines count
	lastAt time.Duration    // brief mode, live: the last status line's time

	inPlace []time.Duration         // consumer redelivery delays
	replays map[int][]time.Duration // replay delays, by attempt
	unknown int                     // hook calls for messages that are no order of the story
	notes   int                     // lines about no single order so far
}

// line is one timeline event.
type line struct {
	r      receipt
	source string
	order  *order
	text   string
	group  string // events printed together per turn: this is their text
}

// mark is an event a status line counts.
type mark struct {
	r    receipt
	kind int // markCall, markDelivered, markEscalated
}

const (
	markCall = iota
	markDelivered
	markEscalated
)

func newLedger(out io.Writer, st *stage, orders map[string]*order, live bool) *ledger {
	return &ledger{out: out, st: st, orders: orders, live: live, brief: len(orders) > maxTimelineOrders,
		calls: map[string]int{}, failed: map[string]error{}, replays: map[int][]time.Duration{}}
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

// add records an event about the message received with handle. Callers
// hold l.mu.
func (l *ledger) add(source, handle string, o *order, format string, args ...any) {
	l.record(line{r: l.st.receipt(handle), source: source, order: o, text: fmt.Sprintf(format, args...)})
}

// addGrouped adds an event printed on one line with the other orders of
// the same kind and turn. Callers hold l.mu.
func (l *ledger) addGrouped(source, handle string, o *order, group string) {
	l.record(line{r: l.st.receipt(handle), source: source, order: o, group: group})
}

func (l *ledger) record(ln line) {
	if !l.live {
		l.lines = append(l.lines, ln)
		return
	}
	if l.brief {
		l.statusLive()
		return
	}
	l.print([]line{ln})
}

func (l *ledger) mark(handle string, kind int) {
	l.marks = append(l.marks, mark{r: l.st.receipt(handle), kind: kind})
}

// called counts a handler call of the message received with handle and
// returns its number for the order.
func (l *ledger) called(o *order, handle string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	o.calls++
	l.calls[handle] = o.calls
	l.mark(handle, markCall)
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
			l.failed[m.ReceiptHandle] = err
		},
		Released: func(_ context.Context, m *handler.Message, in time.Duration) {
			l.mu.Lock()
			defer l.mu.Unlock()
			o := l.find(m.Body)
			err := l.failed[m.ReceiptHandle]
			delete(l.failed, m.ReceiptHandle)
			if o == nil {
				l.unknown++
				return
			}
			back := "back at once"
			if in > 0 {
				back = "back in " + short(in)
			}
			switch {
			case errors.Is(err, handler.ErrHeldBack), errors.Is(err, handler.ErrNotStarted):
				l.addGrouped(f.name, m.ReceiptHandle, o, "not started behind a failed order of their FIFO group, released: "+back)
			case err != nil:
				l.inPlace = append(l.inPlace, in)
				l.add(f.name, m.ReceiptHandle, o, "%s failed (call %d, receive %d): %v; %s", o.ID, l.calls[m.ReceiptHandle], m.ReceiveCount(), err, back)
			default:
				l.add(f.name, m.ReceiptHandle, o, "%s released; %s", o.ID, back)
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
			switch call := l.calls[m.ReceiptHandle]; {
			case o.deleted > 1:
				l.add(f.name, m.ReceiptHandle, o, "%s delivered again (a duplicate: at least once)", o.ID)
			case call == 1:
				l.mark(m.ReceiptHandle, markDelivered)
				l.addGrouped(f.name, m.ReceiptHandle, o, "delivered at the first call")
			default:
				l.mark(m.ReceiptHandle, markDelivered)
				l.add(f.name, m.ReceiptHandle, o, "%s delivered at call %d", o.ID, call)
			}
		},
	}
}

// replayHooks reports the replayer's events on flow f.
func (l *ledger) replayHooks(f *flow, maxBackoff time.Duration) replay.Hooks {
	const source = "replayer"
	return replay.Hooks{
		Replayed: func(_ context.Context, m *types.Message, d replay.Decision, _ string) {
			l.mu.Lock()
			defer l.mu.Unlock()
			o, handle := l.find(aws.ToString(m.Body)), aws.ToString(m.ReceiptHandle)
			if o == nil {
				l.unknown++
				return
			}
			o.replays++
			l.replays[d.Attempt] = append(l.replays[d.Attempt], d.Delay)
			switch {
			case o.heldFor == d.Attempt:
				l.add(source, handle, o, "%s replay %d of %d is due: sent back to %s", o.ID, d.Attempt, f.maxReplays, f.name)
				return
			case f.fifo: // it waited in the DLQ, behind an earlier order of its group
				l.add(source, handle, o, "%s dead-lettered after %d receives; replay %d of %d is due already: sent back to %s", o.ID, f.maxReceives, d.Attempt, f.maxReplays, f.name)
				return
			}
			l.add(source, handle, o, "%s dead-lettered after %d receives; replay %d of %d: back on %s in %s", o.ID, f.maxReceives, d.Attempt, f.maxReplays, f.name, short(d.Delay))
		},
		Held: func(_ context.Context, m *types.Message, d replay.Decision, _ time.Time) {
			l.mu.Lock()
			defer l.mu.Unlock()
			o, handle := l.find(aws.ToString(m.Body)), aws.ToString(m.ReceiptHandle)
			if o == nil {
				l.unknown++
				return
			}
			if o.heldFor == d.Attempt {
				l.add(source, handle, o, "%s replay %d of %d not due yet: held in the DLQ again (a hold lasts 12h at most, the longest SQS keeps a message invisible)",
					o.ID, d.Attempt, f.maxReplays)
				return
			}
			o.heldFor = d.Attempt
			l.add(source, handle, o, "%s dead-lettered after %d receives; replay %d of %d due in %s: held in the DLQ (%s)",
				o.ID, f.maxReceives, d.Attempt, f.maxReplays, short(d.Delay), whyHeld(f, d.Delay, maxBackoff))
		},
		Escalated: func(_ context.Context, m *types.Message, d replay.Decision) {
			l.mu.Lock()
			defer l.mu.Unlock()
			o, handle := l.find(aws.ToString(m.Body)), aws.ToString(m.ReceiptHandle)
			if o == nil {
				l.unknown++
				return
			}
			o.escalated = string(d.Reason)
			l.mark(handle, markEscalated)
			l.add(source, handle, o, "%s dead-lettered; escalated to the operator queue: %s (%s)", o.ID, d.Reason, d.Detail)
		},
		Failed: func(_ context.Context, m *types.Message, err error) {
			l.mu.Lock()
			defer l.mu.Unlock()
			if o := l.find(aws.ToString(m.Body)); o != nil {
				l.add(source, aws.ToString(m.ReceiptHandle), o, "%s could not be moved yet: %v", o.ID, err)
			}
		},
		Rejected: func(_ context.Context, m *types.Message, d replay.Decision, err error) {
			l.mu.Lock()
			defer l.mu.Unlock()
			if o := l.find(aws.ToString(m.Body)); o != nil {
				l.add(source, aws.ToString(m.ReceiptHandle), o, "%s rejected by SQS in every form, left in the DLQ: %v", o.ID, err)
			}
		},
	}
}

// maxDelay is the longest delay SQS gives a message it is sent
// with (DelaySeconds).
const maxDelay = 900 * time.Second

// whyHeld says why a replay waits in the DLQ rather than on its queue,
// naming the limit its delay meets: a FIFO queue takes no per-message
// delay, a standard one 900 s at most; and a delay is cut to the policy's
// MaxBackoff.
func whyHeld(f *flow, delay, maxBackoff time.Duration) string {
	why := "until it is due"
	switch {
	case f.fifo:
		why = "FIFO queues take no per-message delay"
	case delay > maxDelay:
		why = "longer than the 900 s SQS can delay a message it is sent"
	}
	if delay >= maxBackoff {
		why += "; the delay is cut to the policy's MaxBackoff, " + short(maxBackoff)
	}
	return why
}

// note adds a line that concerns no single order (the producer's sends).
func (l *ledger) note(source, format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.notes++
	l.record(line{r: receipt{at: l.st.now(), index: l.notes}, source: source, text: fmt.Sprintf(format, args...)})
}

// finish prints the timeline in memory, and the last status line.
func (l *ledger) finish() {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.live && l.brief:
		l.lastAt = -time.Hour
		l.statusLive()
	case l.brief:
		l.statusFromMarks()
	case !l.live:
		// A turn's events come from the hooks in no particular order: the
		// grouped ones first, then by where the message was in its
		// receive.
		slices.SortFunc(l.lines, func(a, b line) int {
			return cmp.Or(a.r.at.Compare(b.r.at), cmp.Compare(a.r.turn, b.r.turn),
				cmp.Compare(rank(a.group == ""), rank(b.group == "")), cmp.Compare(a.group, b.group), cmp.Compare(a.r.index, b.r.index), cmp.Compare(a.text, b.text))
		})
		l.print(l.lines)
	}
	l.lines = nil
}

// print prints lines, those of one group and turn together.
func (l *ledger) print(lines []line) {
	for i := 0; i < len(lines); {
		ln := lines[i]
		text := ln.text
		if ln.group != "" {
			var group []*order
			for ; i < len(lines) && lines[i].group == ln.group && lines[i].r.turn == ln.r.turn && lines[i].r.at.Equal(ln.r.at); i++ {
				group = append(group, lines[i].order)
			}
			text = orderIDs(group) + " " + ln.group
		} else {
			i++
		}
		fmt.Fprintf(l.out, "%9s  %-12s %s\n", clock(ln.r.at.Sub(l.st.start)), ln.source, text)
	}
}

// statusLive prints, on an endpoint, for a story too large for a line per
// event, a line of counts at most once a minute.
func (l *ledger) statusLive() {
	at := l.st.now().Sub(l.st.start)
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
	l.status(at, delivered, escalated, calls)
}

// statusFromMarks prints, in memory, for a story too large for a line per
// event, a line of counts after the first moment and then after each
// moment at least a minute from the last line, and one at the end.
func (l *ledger) statusFromMarks() {
	slices.SortFunc(l.marks, func(a, b mark) int { return a.r.at.Compare(b.r.at) })
	var delivered, escalated, calls int
	last := -time.Hour
	for i, m := range l.marks {
		switch m.kind {
		case markCall:
			calls++
		case markDelivered:
			delivered++
		case markEscalated:
			escalated++
		}
		at := m.r.at.Sub(l.st.start)
		if end := i == len(l.marks)-1 || !l.marks[i+1].r.at.Equal(m.r.at); end && (at-last >= time.Minute || i == len(l.marks)-1) {
			last = at
			l.status(at, delivered, escalated, calls)
		}
	}
}

func (l *ledger) status(at time.Duration, delivered, escalated, calls int) {
	fmt.Fprintf(l.out, "%9s  delivered %d, escalated %d, pending %d; %d handler calls\n",
		clock(at), delivered, escalated, len(l.orders)-delivered-escalated, calls)
}

// rank orders false before true.
func rank(b bool) int {
	if b {
		return 1
	}
	return 0
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
	s = strings.Replace(s, "m0s", "m", 1)
	return strings.Replace(s, "h0s", "h", 1)
}
