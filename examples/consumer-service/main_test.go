package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestRunInMemory(t *testing.T) {
	t.Setenv("SQSKIT_ENDPOINT", "")
	t.Setenv("SQSKIT_AWS", "")
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	// Orders 0..19 but 13: 10·(190 − 13).
	if want := "handled 19 orders worth 1770, 1 failed"; !strings.Contains(out.String(), want) {
		t.Fatalf("expect %q in:\n%s", want, out.String())
	}
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
