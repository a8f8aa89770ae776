package telemetry

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/metrics"
	"github.com/aws/smithy-go/tracing"
)

func TestQueueName(t *testing.T) {
	for in, want := range map[string]string{
		"https://sqs.us-east-1.amazonaws.com/123456789012/orders.fifo": "orders.fifo",
		"arn:aws:sqs:us-east-1:123456789012:orders":                    "orders",
		"orders": "orders",
		"":       "",
	} {
		if got := QueueName(in); got != want {
			t.Errorf("QueueName(%q): expect %q, got %q", in, want, got)
		}
	}
}

func TestErrorType(t *testing.T) {
	api := &smithy.GenericAPIError{Code: "AWS.SimpleQueueService.NonExistentQueue"}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("receive: %w", api), "NonExistentQueue"},
		{errors.Join(errors.New("x"), context.Canceled), ErrorTypeCanceled},
		{fmt.Errorf("wait: %w", context.DeadlineExceeded), ErrorTypeTimeout},
		{errors.New("plain"), ErrorTypeOther},
	} {
		if got := ErrorType(tc.err); got != tc.want {
			t.Errorf("ErrorType(%v): expect %q, got %q", tc.err, tc.want, got)
		}
	}
}

func TestAge(t *testing.T) {
	now := time.UnixMilli(10_000)
	if d, ok := Age("4000", now); !ok || d != 6*time.Second {
		t.Errorf("expect 6s, got %v, %v", d, ok)
	}
	if d, ok := Age("20000", now); !ok || d != 0 {
		t.Errorf("expect a timestamp in the future to count as 0, got %v", d)
	}
	for _, bad := range []string{"", "x", "-1"} {
		if _, ok := Age(bad, now); ok {
			t.Errorf("expect %q refused", bad)
		}
	}
}

// Off, the hot path's calls allocate nothing.
func TestOffAllocatesNothing(t *testing.T) {
	tr := NewTracer(tracing.NopTracerProvider{}, "s", "https://q/orders")
	m := NewConsumerMetrics(NewMeter(metrics.NopMeterProvider{}, "s"))
	if tr.On() || m.On {
		t.Fatal("expect no-op providers to switch telemetry off")
	}
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		c, s := tr.Start(ctx, tracing.SpanKindConsumer, OperationProcess, OperationProcess)
		s.Set(AttrMessageID, "id")
		s.End(errors.ErrUnsupported)
		m.Consumed.Add(c, 1, nil)
		m.ProcessDuration.Seconds(c, time.Second, nil)
	})
	if allocs != 0 {
		t.Fatalf("expect no allocation with telemetry off, got %v", allocs)
	}
}
