package main

import (
	"fmt"
	"io"

	"github.com/sqskit/sqskit/internal/queueref"
)

// emitPlan prints what a replay would move. mode is "DRY RUN" or
// "REHEARSAL".
func (a *app) emitPlan(p *replayPlan, mode string) error {
	type planJSON struct {
		Mode string `json:"mode"`
		*replayPlan
	}
	return a.emit(planJSON{Mode: mode, replayPlan: p}, func(w io.Writer) {
		fmt.Fprintf(w, "%s: nothing was moved. From %s, %d received: %d selected to replay, %d selected but not replayable, %d not selected",
			mode, queueref.Name(p.Queue), p.Received, len(p.Selected), len(p.NotReplayable), p.NotSelected)
		if p.OverMax > 0 {
			fmt.Fprintf(w, ", %d over --max", p.OverMax)
		}
		fmt.Fprintln(w, ".")
		fmt.Fprintf(w, "Note: %s.\n", p.Note)
		if len(p.Selected) > 0 {
			fmt.Fprintln(w)
			row(w, "ID", "GROUP", "AGE", "COUNTER", "REASON", "TARGET")
			for _, m := range p.Selected {
				row(w, m.ID, dash(m.Group), age(p.At, m.Sent), m.Counter, dash(m.Reason), m.Target)
			}
		}
		notMovable(w, p.NotReplayable, p.NotFound)
	})
}

// notMovable lists the selected messages that cannot be replayed, and the
// --id values no message had.
func notMovable(w io.Writer, unfits []unfit, notFound []string) {
	if len(unfits) > 0 {
		fmt.Fprintln(w)
		row(w, "NOT REPLAYABLE", "WHY")
		for _, u := range unfits {
			row(w, u.ID, u.Why)
		}
	}
	if len(notFound) > 0 {
		fmt.Fprintln(w)
		row(w, "NOT FOUND (--id)", "WHY")
		for _, id := range notFound {
			row(w, id, "no message received has it as its MessageId or original id (in flight, delayed, gone, or mistyped)")
		}
	}
}

// emitResult prints what a replay did.
func (a *app) emitResult(r *replayResult) error {
	return a.emit(r, func(w io.Writer) {
		fmt.Fprintf(w, "Replayed from %s: %d moved, %d skipped, %d failed.\n", queueref.Name(r.Queue), r.Moved, r.Skipped, r.Failed)
		if len(r.Messages) > 0 {
			fmt.Fprintln(w)
			row(w, "MOVED", "TARGET")
			for _, m := range r.Messages {
				row(w, m.ID, m.Target)
			}
		}
		if len(r.Failures) > 0 {
			fmt.Fprintln(w)
			row(w, "FAILED (still in "+queueref.Name(r.Queue)+")", "WHY")
			for _, u := range r.Failures {
				row(w, u.ID, u.Why)
			}
		}
		notMovable(w, r.NotReplayable, r.NotFound)
	})
}

// emitRehearsal prints what a rehearsal did in its in-memory copy.
func (a *app) emitRehearsal(r *rehearsal) error {
	return a.emit(r, func(w io.Writer) {
		fmt.Fprintf(w, "REHEARSAL in an in-memory copy (sqsfake): %d of %d selected messages copied; %d moved, %d failed; %d left in the copy of %s. Nothing real was changed.\n",
			r.Copied, r.Selected, r.Result.Moved, r.Result.Failed, r.LeftInSource, queueref.Name(r.Queue))
		if len(r.Arrived) > 0 {
			fmt.Fprintln(w)
			row(w, "ORIGINAL ID", "TARGET", "GROUP", "COUNTER", "ATTRIBUTES")
			for _, m := range r.Arrived {
				row(w, m.OriginalID, m.Target, dash(m.Group), dash(m.Counter), m.Attributes)
			}
		}
		if len(r.Result.Failures) > 0 {
			fmt.Fprintln(w)
			row(w, "FAILED", "WHY")
			for _, u := range r.Result.Failures {
				row(w, u.ID, u.Why)
			}
		}
	})
}
