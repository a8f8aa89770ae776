// Package losslesshooks lets a package of this module make a consumer's
// hooks lossless. A consumer drops the signals (hook calls, span ends,
// measurements) that do not fit its bounded queue, as consumer.Hooks says;
// package replay counts its Report and calls its own hooks from those
// hooks, so a dropped signal would be a message missing from a Report
// while it did leave the DLQ.
package losslesshooks

// Set, installed by package consumer, makes the hooks of c (a
// *consumer.Consumer, before it runs) lossless: its signal queue grows
// while the hooks lag instead of dropping new signals. The hooks must be
// this module's code and fast; Run's bound on reporting still applies.
var Set func(c any)
