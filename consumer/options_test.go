package consumer

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/handler"
)

// An option error keeps its cause: a strategy that Validate refuses is
// matched by its own error type as well as by ErrConfig.
func TestOptionErrorWrapsItsCause(t *testing.T) {
	o := Options{RedeliveryBackoff: backoff.Exponential{Base: -1}}
	err := resolve(&o)
	var ce *backoff.ConfigError
	if !errors.Is(err, ErrConfig) || !errors.As(err, &ce) {
		t.Fatalf("expect ErrConfig wrapping a *backoff.ConfigError, got %v", err)
	}
}

// Options that would misbehave once running are refused with ErrConfig by
// New, before any message is touched: a size whose channel or worker pool
// cannot be made, a backoff strategy that is nil inside, a receive backoff
// that never waits (Run would spin), a heartbeat that would burn a core, a
// WaitTime SQS would silently truncate, a value outside its range, a
// typed-nil client that would panic inside Run. A HeartbeatInterval that
// only the queue's own visibility timeout shows to be too long is refused
// by Run before its first receive, so the message stays visible and
// unhandled rather than losing its lease between beats.
func TestOptionsThatWouldMisbehaveAreRefused(t *testing.T) {
	f := newQueue(t, "jobs", nil)
	h := func(context.Context, *handler.Message) error { return nil }
	cases := map[string]func(*Options){
		"MaxInFlight 1<<50 (makechan panic)":         func(o *Options) { o.MaxInFlight = 1 << 50 },
		"Concurrency 1<<40":                          func(o *Options) { o.Concurrency = 1 << 40 },
		"FromBackOff(nil) (nil func call)":           func(o *Options) { o.RedeliveryBackoff = backoff.FromBackOff(nil) },
		"typed nil strategy":                         func(o *Options) { o.RedeliveryBackoff = (*backoff.Capped)(nil) },
		"FullJitter{} receive backoff (never waits)": func(o *Options) { o.ReceiveBackoff = backoff.FullJitter{} },
		"HeartbeatInterval 1ns (burns a core)":       func(o *Options) { o.HeartbeatInterval = time.Nanosecond },
		"WaitTime 1500ms (silently truncated)":       func(o *Options) { o.WaitTime = 1500 * time.Millisecond },
		"MaxReceiveConcurrency above its bound":      func(o *Options) { o.MaxReceiveConcurrency = 1 << 20 },
		"ReceiveConcurrency above MaxReceive":        func(o *Options) { o.ReceiveConcurrency, o.MaxReceiveConcurrency = 5, 4 },
		"HandlerTimeout below 1s":                    func(o *Options) { o.HandlerTimeout = time.Millisecond },
		"DeleteLinger above 1s":                      func(o *Options) { o.DeleteLinger = time.Minute },
	}
	for name, fn := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := New(f.client, f.url, h, fn); !errors.Is(err, ErrConfig) {
				t.Fatalf("expect ErrConfig, got %v", err)
			}
		})
	}
	t.Run("typed nil client (would panic in Run)", func(t *testing.T) {
		if _, err := New((*sqs.Client)(nil), f.url, h); !errors.Is(err, ErrConfig) {
			t.Fatalf("expect ErrConfig, got %v", err)
		}
	})
	t.Run("HeartbeatInterval too long for the queue's visibility", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := newQueue(t, "short", map[string]string{"VisibilityTimeout": "20"})
			q.send(t, "", "m")
			var handled atomic.Int64
			c, err := New(q.client, q.url, func(context.Context, *handler.Message) error { handled.Add(1); return nil }, func(o *Options) {
				o.HeartbeatInterval = 25 * time.Second
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Run(context.Background()); !errors.Is(err, ErrConfig) {
				t.Fatalf("expect Run to refuse it with ErrConfig, got %v", err)
			}
			if v, _ := q.counts(t); v != 1 || handled.Load() != 0 {
				t.Fatalf("expect the message left unhandled and visible, got %d visible, %d handled", v, handled.Load())
			}
		})
	})
}
