package backoff

import (
	"errors"
	"testing"
	"time"
)

// pointerStrategy is a strategy behind a pointer, without a Validate
// method: a typed nil of it is a nil strategy.
type pointerStrategy struct{ d time.Duration }

func (s *pointerStrategy) Delay(int, time.Duration) time.Duration { return s.d }

// Validate used to pass a typed-nil strategy and FromBackOff(nil), and any
// decorator around them, so fifo.NewSender and replay.New accepted them and
// panicked at the first retry or decision.
func TestValidateRefusesNilStrategiesInsideValues(t *testing.T) {
	for name, s := range map[string]Strategy{
		"typed nil":                    (*pointerStrategy)(nil),
		"FromBackOff(nil)":             FromBackOff(nil),
		"MaxAttempts around typed nil": MaxAttempts{S: (*pointerStrategy)(nil), N: 3},
		"Capped around FromBackOff":    Capped{S: FromBackOff(nil), Cap: time.Second},
		"Budgeted around FromBackOff":  Budgeted{S: FromBackOff(nil), B: &Budget{}},
		"ByError throttle typed nil":   ByError{Default: Constant{}, Throttle: (*pointerStrategy)(nil)},
	} {
		var ce *ConfigError
		if err := Validate(s); !errors.As(err, &ce) {
			t.Errorf("%s: expect a *ConfigError, got %v", name, err)
		}
	}
	if err := Validate(&pointerStrategy{d: time.Second}); err != nil {
		t.Errorf("a non-nil pointer strategy: expect valid, got %v", err)
	}
}

// NewIterator(nil).NextBackOff used to panic; an iterator over no strategy
// stops at once.
func TestIteratorOverNilStrategyStops(t *testing.T) {
	it := NewIterator(nil)
	if d := it.NextBackOff(); d != Stop {
		t.Fatalf("expect Stop, got %v", d)
	}
	it.Reset()
	if d := it.NextBackOff(); d != Stop || it.Attempt() != 0 {
		t.Fatalf("expect Stop after Reset and no attempt counted, got %v at attempt %d", d, it.Attempt())
	}
}
