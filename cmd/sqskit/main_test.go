package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"go.uber.org/goleak"

	"github.com/sqskit/sqskit/sqsfake"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

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
	}
	code := runApp(t.Context(), args, a)
	return invocation{stdout: out.String(), stderr: errOut.String(), code: code}
}

func TestBadArgumentsExitTwoBeforeAnyCall(t *testing.T) {
	srv := sqsfake.New()
	for _, args := range [][]string{
		{"no-such-command"},
		{"--no-such-flag"},
		{"-o", "yaml"},
	} {
		got := invoke(t, srv, "", args...)
		if got.code != exitUsage || got.stderr == "" {
			t.Errorf("sqskit %q: exit %d, stderr %q; want exit %d and a reason", args, got.code, got.stderr, exitUsage)
		}
	}
	if calls := srv.Calls(); calls.Total() != 0 {
		t.Errorf("bad arguments made calls: %v", calls.Op)
	}
}
