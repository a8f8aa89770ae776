// Package ctxkey holds the context keys this module's packages pass to
// each other: under Lease and Messages a runtime gives a handler what it
// knows of its messages (package consumer and the Lambda adapter set them,
// package handler reads them: handler.LeaseFrom, handler.MessageContext);
// under LosslessHooks package replay asks the consumer it runs on for
// every hook signal.
package ctxkey

// Lease is the context key of a handler.Lease.
type Lease struct{}

// Messages is the context key of a BatchHandler call's messages' own ctxs:
// a map[*handler.Message]context.Context.
type Messages struct{}

// LosslessHooks, set on a consumer's Run ctx by a package of this module
// (replay counts its Report on the consumer's hooks), makes that Run's
// hooks lossless: their queue grows while they lag instead of dropping.
type LosslessHooks struct{}
