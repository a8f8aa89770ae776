package emulator_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// A command imports this package for Skips and Start: it must not link
// package testing into the binary (package fauxqs, with StartT, does).
func TestImportsNoTesting(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	if deps := strings.Fields(string(out)); slices.Contains(deps, "testing") {
		t.Errorf("expect no package testing among the dependencies, got it: %q", deps)
	}
}
