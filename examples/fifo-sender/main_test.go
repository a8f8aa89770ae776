package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestRunInMemory(t *testing.T) {
	t.Setenv("SQSKIT_ENDPOINT", "")
	t.Setenv("SQSKIT_AWS", "")
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"backend: in-memory",
		"group alice: alice: order created\ngroup bobby: bobby: order created\ngroup alice: alice: order paid\ngroup bobby: bobby: order cancelled\ngroup alice: alice: order shipped\n",
		"received 5 events, each once",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("expect output to contain %q, got:\n%s", want, got)
		}
	}
}
