package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"
)

// confirm asks before a change: --yes confirms; at a terminal the person
// types want (the queue's name, for a purge) or "yes"; without a terminal
// and without --yes nothing is changed and the command exits 3. Ctrl-C
// (ctx ending) at the prompt is an answer too: not confirmed, exit 3.
func (a *app) confirm(ctx context.Context, what, want string) error {
	if a.yes {
		return nil
	}
	if !a.term.interactive {
		return &exitError{code: exitNotConfirmed, err: fmt.Errorf("%s: not confirmed, nothing changed (pass --yes; there is no terminal to ask)", what)}
	}
	fmt.Fprintf(a.term.err, "%s\nType %q to confirm: ", what, want)
	type answer struct {
		line string
		err  error
	}
	// The read cannot be cancelled: it runs on its own, and an interrupt
	// does not wait for it (the command ends; the read with it).
	answers := make(chan answer, 1)
	go func() {
		line, err := bufio.NewReader(a.term.in).ReadString('\n')
		answers <- answer{line, err}
	}()
	var line string
	select {
	case <-ctx.Done():
		fmt.Fprintln(a.term.err)
		return &exitError{code: exitNotConfirmed, err: errors.New("interrupted at the prompt: not confirmed, nothing changed")}
	case ans := <-answers:
		if ans.err != nil && ans.line == "" {
			return &exitError{code: exitNotConfirmed, err: errors.New("not confirmed, nothing changed")}
		}
		line = ans.line
	}
	if strings.TrimSpace(line) != want {
		return &exitError{code: exitNotConfirmed, err: fmt.Errorf("typed %q, not %q: nothing changed", strings.TrimSpace(line), want)}
	}
	return nil
}
