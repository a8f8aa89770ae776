package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/sqskit/sqskit/sqsfake"
)

func TestRunInMemory(t *testing.T) {
	t.Setenv("SQSKIT_ENDPOINT", "")
	t.Setenv("SQSKIT_AWS", "")
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"backend: in-memory", "received 5 events, each once"} {
		if !strings.Contains(got, want) {
			t.Errorf("expect output to contain %q, got:\n%s", want, got)
		}
	}
	// Each customer's events in order; the two customers' interleave as
	// the batches carried them.
	perGroup := map[string][]string{}
	for _, line := range strings.Split(got, "\n") {
		if g, event, ok := strings.Cut(strings.TrimPrefix(line, "group "), ": "); ok && strings.HasPrefix(line, "group ") {
			perGroup[g] = append(perGroup[g], event)
		}
	}
	want := map[string][]string{
		"alice": {"alice: order created", "alice: order paid", "alice: order shipped"},
		"bobby": {"bobby: order created", "bobby: order cancelled"},
	}
	for g, events := range want {
		if strings.Join(perGroup[g], ", ") != strings.Join(events, ", ") {
			t.Errorf("group %s: expect %v, got %v in:\n%s", g, events, perGroup[g], got)
		}
	}
}

// Against an endpoint (sqsfake over HTTP) it sends to a queue of its own and
// deletes it at the end, so a second run within the 5-minute deduplication
// window sees its events again.
func TestRunOnEndpoint(t *testing.T) {
	srv := sqsfake.New()
	hs := sqsfake.StartHTTP(t, srv)
	t.Setenv("SQSKIT_ENDPOINT", hs.URL)
	for range 2 {
		var out bytes.Buffer
		if err := run(context.Background(), &out); err != nil {
			t.Fatal(err)
		}
		if want := "received 5 events, each once"; !strings.Contains(out.String(), want) {
			t.Errorf("expect %q in:\n%s", want, out.String())
		}
	}
	if n := srv.Calls().Op["DeleteQueue"]; n != 2 {
		t.Errorf("expect each run's queue deleted, got %d DeleteQueue calls", n)
	}
}
