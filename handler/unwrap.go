package handler

import "github.com/sqskit/sqskit/internal/telemetry"

// is and asPanic are errors.Is and errors.As for this package's own
// errors, without the reflection those use: a Lambda that links this
// package stays within a few kilobytes of a hand-written one.

// is reports whether err or an error it wraps is target (by ==).
func is(err, target error) bool {
	return telemetry.Walk(err, func(e error) bool { return e == target })
}

// asPanic returns the *PanicError in err's chain, or nil.
func asPanic(err error) *PanicError {
	var p *PanicError
	telemetry.Walk(err, func(e error) bool {
		p, _ = e.(*PanicError)
		return p != nil
	})
	return p
}
