package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The command exports every span and the metrics with the stdout
// exporters.
func TestRunExportsSpansAndMetrics(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"Name": "send orders"`, `"Name": "process orders-dlq"`, `"Name": "SQS.SendMessageBatch"`,
		`"Name": "messaging.client.consumed.messages"`, `"Name": "sqskit.replay.decisions"`, `"Name": "sqskit.consumer.message.age"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("expect %s in the export", want)
		}
	}
}
