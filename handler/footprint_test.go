package handler

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The budget of a Lambda built with this package over one written by hand
// on aws-lambda-go alone: a few packages, and under 108 KiB of stripped
// binary. 100 KiB is the adapter's; the other 8 KiB pay for treating
// hooks, propagators, tracers and meters as untrusted code (a panic or a
// nil costs its signal, a blocked hook holds no message), which costs
// 16 KiB in whole pages, half of it won back by linking only the
// constructor's path (per message or whole batch). The SQS client stack
// stays out whatever the bytes.
const (
	maxExtraPackages = 8
	maxExtraBytes    = 108 << 10
)

// TestLambdaFootprint builds the smallest partial-batch Lambda with
// NewLambda (testdata/footprint/sqskit) and a hand-written one
// (testdata/footprint/handwritten), stripped as Lambda deployments are,
// and checks that this package adds no SQS client stack: its non-standard
// dependencies and its binary stay within the budget. The figures are in
// BENCHMARKS.md:
//
//	go test -run TestLambdaFootprint -v ./handler/
func TestLambdaFootprint(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two Lambda binaries")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	type footprint struct {
		deps  []string
		bytes int64
	}
	measure := func(name string) footprint {
		pkg := "./testdata/footprint/" + name
		out, err := exec.Command(goTool, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		bin := filepath.Join(t.TempDir(), name)
		build := exec.Command(goTool, "build", "-trimpath", "-ldflags=-s -w", "-o", bin, pkg)
		build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
		fi, err := os.Stat(bin)
		if err != nil {
			t.Fatal(err)
		}
		return footprint{deps: strings.Fields(string(out)), bytes: fi.Size()}
	}
	sqskit, hand := measure("sqskit"), measure("handwritten")
	t.Logf("hand-written: %d non-standard packages, %d bytes", len(hand.deps), hand.bytes)
	t.Logf("sqskit:       %d non-standard packages, %d bytes (+%d packages, +%d bytes)",
		len(sqskit.deps), sqskit.bytes, len(sqskit.deps)-len(hand.deps), sqskit.bytes-hand.bytes)
	for _, dep := range sqskit.deps {
		if strings.Contains(dep, "service/sqs") || strings.Contains(dep, "aws-sdk-go-v2") || strings.HasSuffix(dep, "sqskit/consumer") || strings.HasSuffix(dep, "sqskit/fifo") {
			t.Errorf("expect no SQS client stack in a Lambda, got %s", dep)
		}
	}
	if extra := len(sqskit.deps) - len(hand.deps); extra > maxExtraPackages {
		t.Errorf("expect at most %d packages more than by hand, got %d: %v", maxExtraPackages, extra, sqskit.deps)
	}
	if extra := sqskit.bytes - hand.bytes; extra >= maxExtraBytes {
		t.Errorf("expect under %d bytes more than by hand, got %d", maxExtraBytes, extra)
	}
}
