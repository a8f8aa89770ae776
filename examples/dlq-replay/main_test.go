package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"go.uber.org/goleak"
	"testing/synctest"
)

func TestRunInMemory(t *testing.T) {
	t.Setenv("SQSKIT_ENDPOINT", "")
	t.Setenv("SQSKIT_AWS", "")
	synctest.Test(t, func(t *testing.T) {
		var out bytes.Buffer
		if err := run(context.Background(), &out); err != nil {
			t.Fatal(err)
		}
		want := "replay 1 after 2s\nreplay 2 after 4s\nreplay 3 after 8s\nescalated: attempts-exhausted (replayed 3 times, the maximum is 3)\nhandled 8 times in all\n" +
			`operator queue: body {"order":42,"sku":"does-not-exist"}, tenant acme, reason attempts-exhausted`
		if !strings.Contains(out.String(), want) {
			t.Fatalf("expect:\n%s\ngot:\n%s", want, out.String())
		}
	})
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
