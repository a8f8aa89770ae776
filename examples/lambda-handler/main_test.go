package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/sqskit/sqskit/handler"
)

func TestRunLocally(t *testing.T) {
	l, err := handler.NewLambda(handle)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := runLocally(context.Background(), l, &out); err != nil {
		t.Fatal(err)
	}
	// m2 fails; m3 follows it in group alice, so it is not handled; bob's m4 is.
	want := `{"batchItemFailures":[{"itemIdentifier":"m2"},{"itemIdentifier":"m3"}]}`
	if got := strings.TrimSpace(out.String()); got != want {
		t.Fatalf("expect %s, got %s", want, got)
	}
}
