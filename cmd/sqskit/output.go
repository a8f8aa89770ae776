package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"text/tabwriter"
)

// emit writes a command's result: v as indented JSON with -o json, or the
// table that rows draws for people. Columns are separated by tabs in rows'
// lines.
func (a *app) emit(v any, table func(w io.Writer)) error {
	if a.output == "json" {
		enc := json.NewEncoder(a.term.out)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	table(tw)
	if err := tw.Flush(); err != nil {
		return err
	}
	// An empty last cell leaves padding behind: trim it, so the lines
	// can be pasted and diffed as they are.
	lines := strings.SplitAfter(buf.String(), "\n")
	for i, l := range lines {
		if body, ok := strings.CutSuffix(l, "\n"); ok {
			lines[i] = strings.TrimRight(body, " ") + "\n"
		}
	}
	_, err := io.WriteString(a.term.out, strings.Join(lines, ""))
	return err
}

// row writes one table row: its cells separated by tabs.
func row(w io.Writer, cells ...any) {
	s := make([]string, len(cells))
	for i, c := range cells {
		s[i] = fmt.Sprint(c)
	}
	fmt.Fprintln(w, strings.Join(s, "\t"))
}

// progress reports long work (replay, redrive, conform) on standard error,
// redrawing one line, only when standard error is a terminal and the output
// is for people: scripts and logs see none of it.
type progress struct {
	mu    sync.Mutex
	w     io.Writer // nil: silent
	label string
	done  int
	total int // 0: unknown
}

func (a *app) progress(label string, total int) *progress {
	p := &progress{label: label, total: total}
	if a.term.progressVisible && a.output == "table" {
		p.w = a.term.err
	}
	return p
}

// add counts n more units of work done and redraws the line.
func (p *progress) add(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += n
	if p.w == nil {
		return
	}
	if p.total > 0 {
		const width = 30
		filled := min(width, p.done*width/p.total)
		fmt.Fprintf(p.w, "\r%s [%s%s] %d/%d", p.label, strings.Repeat("=", filled), strings.Repeat(" ", width-filled), p.done, p.total)
		return
	}
	fmt.Fprintf(p.w, "\r%s %d", p.label, p.done)
}

// finish ends the progress line.
func (p *progress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.w != nil {
		fmt.Fprintln(p.w)
	}
}
