// Package sqsrule holds the SQS limits and validation rules shared by sqskit's
// packages: sqsfake enforces them as the service does, and the senders check
// them before any call so that bad input fails fast with a typed error.
//
// Every check returns a *Violation that names the SQS error code the service
// would answer with, so callers can either turn it into the service's error
// (sqsfake) or wrap it in their own typed error (fifo, replay).
package sqsrule
