package fifo_test

import (
	"context"
	"testing"

	"github.com/sqskit/sqskit/fifo"
	"github.com/sqskit/sqskit/internal/telemetry/telemetrytest"
)

// A Propagator, TracerProvider or MeterProvider that panics or returns nil
// costs the trace context or the measurement, never the send.
func TestSendSurvivesItsTelemetry(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault telemetrytest.Fault
	}{
		{"provider panics", telemetrytest.PanicProvider},
		{"start panics", telemetrytest.PanicStart},
		{"use panics", telemetrytest.PanicUse},
		{"nil results", telemetrytest.NilResult},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, "orders", nil)
			h := telemetrytest.Hostile{Fault: tc.fault}
			s := f.sender(t, func(o *fifo.SenderOptions) { o.Propagator, o.TracerProvider, o.MeterProvider = h, h, h })
			res, err := s.Send(context.Background(), fifo.Message{Body: "order"})
			if err != nil || res.MessageID == "" {
				t.Fatalf("expect the message sent, got %+v, %v", res, err)
			}
		})
	}
}
