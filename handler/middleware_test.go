package handler

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sqskit/sqskit/internal/telemetry/telemetrytest"
)

// record is a middleware that notes when it is entered and left.
func record(name string, trail *[]string) Middleware {
	return func(next Handler) Handler {
		return func(ctx context.Context, m *Message) error {
			*trail = append(*trail, name+">")
			err := next(ctx, m)
			*trail = append(*trail, "<"+name)
			return err
		}
	}
}

func TestChainOrderFirstListedOutermost(t *testing.T) {
	var trail []string
	h := Chain(func(context.Context, *Message) error { trail = append(trail, "h"); return nil },
		record("a", &trail), nil, record("b", &trail))
	if err := h(context.Background(), &Message{}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"a>", "b>", "h", "<b", "<a"}; !slices.Equal(trail, want) {
		t.Fatalf("expect %v, got %v", want, trail)
	}
	var btrail []string
	bh := ChainBatch(func(context.Context, []*Message) []error { btrail = append(btrail, "h"); return nil },
		func(next BatchHandler) BatchHandler {
			return func(ctx context.Context, msgs []*Message) []error {
				btrail = append(btrail, "a")
				return next(ctx, msgs)
			}
		},
		func(next BatchHandler) BatchHandler {
			return func(ctx context.Context, msgs []*Message) []error {
				btrail = append(btrail, "b")
				return next(ctx, msgs)
			}
		})
	bh(context.Background(), nil)
	if !slices.Equal(btrail, []string{"a", "b", "h"}) {
		t.Fatalf("expect a, b, h, got %v", btrail)
	}
}

// Lambda applies Options.Middleware inside its own layer: a panic in a
// middleware fails only its message, and each middleware runs per message.
func TestLambdaMiddleware(t *testing.T) {
	var trail []string
	panicky := func(next Handler) Handler {
		return func(ctx context.Context, m *Message) error {
			if m.Body == "boom" {
				panic("in middleware")
			}
			return next(ctx, m)
		}
	}
	l := newLambda(t, func(context.Context, *Message) error { trail = append(trail, "h"); return nil },
		func(o *LambdaOptions) { o.Middleware = []Middleware{record("a", &trail), panicky} })
	resp, err := l.Handle(context.Background(), sqsEvent(stdArn, ":ok", ":boom"))
	if err != nil || failedIDs(resp) != "id-1" {
		t.Fatalf("expect the message whose middleware panicked failed, got %v, %v", failedIDs(resp), err)
	}
	// The panic unwinds through a: its second half does not run.
	if want := []string{"a>", "h", "<a", "a>"}; !slices.Equal(trail, want) {
		t.Fatalf("expect %v, got %v", want, trail)
	}
	if _, err := NewLambda(func(context.Context, *Message) error { return nil }, func(o *LambdaOptions) {
		o.BatchMiddleware = []BatchMiddleware{BatchTimeout(time.Second)}
	}); !errors.Is(err, ErrConfig) {
		t.Errorf("expect BatchMiddleware refused with a Handler, got %v", err)
	}
	if _, err := NewBatchLambda(func(context.Context, []*Message) []error { return nil }, func(o *LambdaOptions) {
		o.Middleware = []Middleware{Timeout(time.Second)}
	}); !errors.Is(err, ErrConfig) {
		t.Errorf("expect Middleware refused with a BatchHandler, got %v", err)
	}
}

func TestTimeoutMiddleware(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slow := func(ctx context.Context, m *Message) error {
			select {
			case <-ctx.Done():
				if m.Body == "finish anyway" {
					return nil
				}
				return ctx.Err()
			case <-time.After(time.Minute):
				return nil
			}
		}
		h := Timeout(5 * time.Second)(slow)
		start := time.Now()
		err := h(context.Background(), &Message{})
		if !errors.Is(err, ErrHandlerTimeout) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("expect ErrHandlerTimeout wrapping the handler's error, got %v", err)
		}
		if took := time.Since(start); took != 5*time.Second {
			t.Fatalf("expect the ctx cancelled after 5s, took %v", took)
		}
		if err := h(context.Background(), &Message{Body: "finish anyway"}); err != nil {
			t.Fatalf("expect a handler that returns nil after its deadline to succeed, got %v", err)
		}
		fast := Timeout(5 * time.Second)(func(ctx context.Context, _ *Message) error {
			if _, ok := ctx.Deadline(); !ok {
				t.Error("expect a deadline on the handler's ctx")
			}
			return errors.New("plain")
		})
		if err := fast(context.Background(), &Message{}); errors.Is(err, ErrHandlerTimeout) {
			t.Fatalf("expect an error before the deadline left alone, got %v", err)
		}
		if err := Timeout(0)(slow)(context.Background(), &Message{}); err != nil {
			t.Fatalf("expect Timeout(0) to add no timeout, got %v", err)
		}
		batch := BatchTimeout(time.Second)(func(ctx context.Context, msgs []*Message) []error {
			<-ctx.Done()
			return []error{nil, ctx.Err()}
		})
		errs := batch(context.Background(), []*Message{{}, {}})
		if errs[0] != nil || !errors.Is(errs[1], ErrHandlerTimeout) {
			t.Fatalf("expect the batch's failures after its deadline to match ErrHandlerTimeout, got %v", errs)
		}
	})
}

func TestLoggingMiddleware(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h := Logging(l)(func(_ context.Context, m *Message) error {
		if m.Body == "secret-bad" {
			return errors.New("refused")
		}
		return nil
	})
	msg := func(id, body string) *Message {
		return &Message{ID: id, Body: body, Attributes: map[string]string{"MessageGroupId": "alice", "ApproximateReceiveCount": "3"}}
	}
	_ = h(context.Background(), msg("m1", "secret-good"))
	_ = h(context.Background(), msg("m2", "secret-bad"))
	out := buf.String()
	for _, want := range []string{`"msg":"handler: message handled"`, `"message_id":"m1"`, `"group_id":"alice"`, `"receive_count":"3"`,
		`"level":"WARN","msg":"handler: message failed"`, `"message_id":"m2"`, `"error":"refused"`} {
		if !strings.Contains(out, want) {
			t.Errorf("expect %s in the log, got %s", want, out)
		}
	}
	if strings.Contains(out, "secret") {
		t.Errorf("expect no body in the log, got %s", out)
	}
	if got := Logging(nil)(nil); got != nil {
		t.Error("expect Logging(nil) to leave the handler as it is")
	}
	buf.Reset()
	bh := BatchLogging(l)(func(context.Context, []*Message) []error { return []error{nil} })
	bh(context.Background(), []*Message{msg("m3", "a"), msg("m4", "b")})
	if !strings.Contains(buf.String(), `"message_id":"m4"`) || !strings.Contains(buf.String(), `"failed":1`) {
		t.Errorf("expect the message without a result logged as failed, got %s", buf.String())
	}
}

func TestMetricsMiddleware(t *testing.T) {
	mt := &telemetrytest.Meter{}
	h := Metrics(mt, "orders")(func(context.Context, *Message) error { return nil })
	_ = h(context.Background(), &Message{Body: "ok"})
	h2 := Metrics(mt, "orders")(func(context.Context, *Message) error { return &PanicError{Value: "x"} })
	_ = h2(context.Background(), &Message{})
	if n := len(mt.Points("sqskit.handler.duration", "sqskit.handler.name=orders")); n != 2 {
		t.Fatalf("expect two durations for the named handler, got %d", n)
	}
	if n := len(mt.Points("sqskit.handler.duration", "error.type=panic")); n != 1 {
		t.Fatalf("expect one failure with its error.type, got %d", n)
	}
	bh := BatchMetrics(mt, "bulk")(func(context.Context, []*Message) []error { return []error{nil, ErrHeldBack} })
	bh(context.Background(), []*Message{{}, {}})
	if n := len(mt.Points("sqskit.handler.duration", "sqskit.handler.name=bulk", "error.type=held_back")); n != 1 {
		t.Fatalf("expect the batch call's duration with its first failure, got %d", n)
	}
	if Metrics(nil, "x")(nil) != nil {
		t.Error("expect Metrics without a provider to leave the handler as it is")
	}
}

// A BatchLogging middleware given a typed-nil error fails that message,
// not the batch.
func TestBatchLoggingTypedNilError(t *testing.T) {
	l, err := NewBatchLambda(func(_ context.Context, msgs []*Message) []error {
		var broken *nilDerefError
		return []error{nil, broken}
	}, func(o *LambdaOptions) {
		o.BatchMiddleware = []BatchMiddleware{BatchLogging(slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)))}
	})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := l.Handle(context.Background(), sqsEvent(stdArn, ":done", ":broken"))
	if err != nil {
		t.Fatal(err)
	}
	if got := failedIDs(resp); got != "id-1" {
		t.Errorf("expect only id-1 failed, got %q", got)
	}
}
