package consumer

import (
	"errors"
	"testing"

	"github.com/sqskit/sqskit/backoff"
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
