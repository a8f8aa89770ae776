//go:build !sqstestcheck

package main

import (
	"strings"
	"testing"

	"github.com/sqskit/sqskit/sqsfake"
)

// Without sqstest.Check, conform says why and exits 1, whatever its flags.
func TestConformNotInThisBuild(t *testing.T) {
	got := invoke(t, sqsfake.New(), "", "conform", "--known-gaps", "fauxqs", "--prefix", "x-")
	if got.code != exitFailed || !strings.Contains(got.stderr, "sqstestcheck") {
		t.Errorf("expect exit %d and the build tag named, got %d: %s", exitFailed, got.code, got.stderr)
	}
}
