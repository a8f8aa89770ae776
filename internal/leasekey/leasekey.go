// Package leasekey holds the context key under which a runtime gives a
// handler its message's visibility lease (handler.LeaseFrom): package
// consumer answers it without a context.WithValue per message.
package leasekey

// Key is the context key of a handler.Lease.
type Key struct{}
