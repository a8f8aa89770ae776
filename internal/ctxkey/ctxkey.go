// Package ctxkey holds the context keys under which a runtime gives a
// handler what it knows of its messages: package consumer and the Lambda
// adapter set them, package handler reads them (handler.LeaseFrom,
// handler.MessageContext).
package ctxkey

// Lease is the context key of a handler.Lease.
type Lease struct{}

// Messages is the context key of a BatchHandler call's messages' own ctxs:
// a map[*handler.Message]context.Context.
type Messages struct{}
