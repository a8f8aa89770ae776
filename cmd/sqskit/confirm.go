package main

import (
	"bufio"
	"errors"
	"fmt"
	"strings"
)

// confirm asks before a change: --yes confirms; at a terminal the person
// types want (the queue's name, for a purge) or "yes"; without a terminal
// and without --yes nothing is changed and the command exits 3.
func (a *app) confirm(what, want string) error {
	if a.yes {
		return nil
	}
	if !a.term.interactive {
		return &exitError{code: exitNotConfirmed, err: fmt.Errorf("%s: not confirmed, nothing changed (pass --yes; there is no terminal to ask)", what)}
	}
	fmt.Fprintf(a.term.err, "%s\nType %q to confirm: ", what, want)
	line, err := bufio.NewReader(a.term.in).ReadString('\n')
	if err != nil && line == "" {
		return &exitError{code: exitNotConfirmed, err: errors.New("not confirmed, nothing changed")}
	}
	if strings.TrimSpace(line) != want {
		return &exitError{code: exitNotConfirmed, err: fmt.Errorf("typed %q, not %q: nothing changed", strings.TrimSpace(line), want)}
	}
	return nil
}
