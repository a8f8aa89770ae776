// Package bench compares sqskit with the libraries a user would otherwise
// pick, in one benchmark run against the fauxqs emulator. It is a separate
// module so that those libraries never enter the dependency graph of
// sqskit's users.
package bench
