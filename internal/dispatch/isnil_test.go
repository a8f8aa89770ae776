package dispatch

import (
	"context"
	"net/http"
	"testing"
)

type strategy interface{ Delay(int) int }

type ptrStrategy struct{}

func (*ptrStrategy) Delay(int) int { return 0 }

type funcStrategy func(int) int

func (f funcStrategy) Delay(n int) int { return f(n) }

type valueStrategy struct{}

func (valueStrategy) Delay(int) int { return 0 }

type intStrategy int

func (intStrategy) Delay(int) int { return 0 }

func TestIsNilTellsNoneFromSomething(t *testing.T) {
	var nilPtr *ptrStrategy
	var nilFunc funcStrategy
	var nilMap map[string]int
	var nilChan chan int
	var nilClient *http.Client
	var nilIface strategy
	for _, c := range []struct {
		name string
		v    any
		none bool
	}{
		{"nil", nil, true},
		{"nil interface value", nilIface, true},
		{"typed nil pointer", strategy(nilPtr), true},
		{"typed nil func", strategy(nilFunc), true},
		{"nil map", nilMap, true},
		{"nil chan", nilChan, true},
		{"typed nil client", nilClient, true},
		{"pointer", &ptrStrategy{}, false},
		{"func", funcStrategy(func(int) int { return 0 }), false},
		{"empty struct value", valueStrategy{}, false},
		{"zero int value", intStrategy(0), false},
		{"zero string", "", false},
		{"context", context.Background(), false},
		{"map", map[string]int{}, false},
	} {
		if got := IsNil(c.v); got != c.none {
			t.Errorf("%s: IsNil = %v, want %v", c.name, got, c.none)
		}
	}
}
