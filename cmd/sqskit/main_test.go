package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"go.uber.org/goleak"

	"github.com/sqskit/sqskit/internal/fauxqs"
	"github.com/sqskit/sqskit/sqsfake"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the outputs")

// binary is the sqskit command built once for the end-to-end tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sqskit-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "sqskit")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		os.RemoveAll(dir)
		os.Exit(code)
	}))
}

// invocation is one run of the command in process, against srv.
type invocation struct {
	stdout, stderr string
	code           int
}

// invoke runs sqskit with args against srv's in-process client, without a
// terminal unless stdin is given (then it acts as a person at a terminal
// typing stdin).
func invoke(t *testing.T, srv *sqsfake.Server, stdin string, args ...string) invocation {
	t.Helper()
	var out, errOut bytes.Buffer
	a := &app{
		term: terminal{in: strings.NewReader(stdin), out: &out, err: &errOut, interactive: stdin != ""},
		newClient: func(context.Context) (*sqs.Client, error) {
			return srv.Client(), nil
		},
		shortPoll: true,
	}
	code := runApp(t.Context(), args, a)
	return invocation{stdout: out.String(), stderr: errOut.String(), code: code}
}

// golden compares got with testdata/name.golden, or rewrites it with
// -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s: output differs from the golden file (go test -update rewrites it)\n--- want\n%s--- got\n%s", path, want, got)
	}
}

// parseJSON decodes an -o json output into v, refusing fields v lacks, so
// the JSON form and its struct cannot drift.
func parseJSON(t *testing.T, out string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("parse the JSON output back: %v\n%s", err, out)
	}
}

// mustSucceed fails the test unless the invocation exited 0.
func mustSucceed(t *testing.T, got invocation) {
	t.Helper()
	if got.code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", got.code, got.stderr)
	}
}

// startFauxqs starts the fauxqs emulator for one test, or skips the test
// when it is not installed (unless SQSKIT_REQUIRE_EMULATOR=1, as in CI).
func startFauxqs(t *testing.T) *fauxqs.Emulator {
	t.Helper()
	emu, err := fauxqs.Start(t.Context())
	if errors.Is(err, fauxqs.ErrNotInstalled) && os.Getenv("SQSKIT_REQUIRE_EMULATOR") != "1" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emu.Close() })
	return emu
}
