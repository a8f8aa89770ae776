package backoff_test

import (
	"testing"
	"time"

	cenkalti "github.com/cenkalti/backoff/v4"

	"github.com/sqskit/sqskit/backoff"
)

var sink time.Duration

// BenchmarkNextBackOff compares one delay from each strategy, through the
// BackOff interface, with cenkalti v4's ExponentialBackOff in the same run.
// cenkalti reads the clock on every call (for MaxElapsedTime); ours do not.
func BenchmarkNextBackOff(b *testing.B) {
	base, cap := 100*time.Millisecond, 20*time.Second
	strategies := []struct {
		name string
		s    backoff.Strategy
	}{
		{"Exponential", backoff.Exponential{Base: base, Cap: cap}},
		{"FullJitter", backoff.FullJitter{Base: base, Cap: cap}},
		{"EqualJitter", backoff.EqualJitter{Base: base, Cap: cap}},
		{"DecorrelatedJitter", backoff.DecorrelatedJitter{Base: base, Cap: cap}},
		{"DecorrelatedJitterV2", backoff.DecorrelatedJitterV2{MedianFirst: base, Cap: cap}},
		{"Randomized", backoff.Randomized{Initial: base, Multiplier: 1.5, Factor: 0.5, Cap: cap}},
		{"Constant", backoff.Constant{D: base}},
	}
	b.Run("cenkalti-v4-Exponential", func(b *testing.B) {
		c := cenkalti.NewExponentialBackOff()
		c.MaxInterval, c.MaxElapsedTime = cap, 0
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if i%16 == 0 {
				c.Reset()
			}
			sink = c.NextBackOff()
		}
	})
	for _, st := range strategies {
		b.Run("sqskit-"+st.name, func(b *testing.B) {
			it := backoff.NewIterator(st.s)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if i%16 == 0 {
					it.Reset()
				}
				sink = it.NextBackOff()
			}
		})
	}
}

// BenchmarkConstruction compares making a ready-to-use backoff.
func BenchmarkConstruction(b *testing.B) {
	b.Run("cenkalti-v4", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			sink = cenkalti.NewExponentialBackOff().InitialInterval
		}
	})
	b.Run("sqskit-FullJitter", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			sink = backoff.NewIterator(backoff.FullJitter{Base: time.Millisecond, Cap: time.Second}).NextBackOff()
		}
	})
}

// BenchmarkParallel shares one strategy value across goroutines (each with
// its own iterator, as documented); cenkalti needs one BackOff per goroutine.
func BenchmarkParallel(b *testing.B) {
	b.Run("cenkalti-v4", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			c := cenkalti.NewExponentialBackOff()
			c.MaxElapsedTime = 0
			var d time.Duration
			for i := 0; pb.Next(); i++ {
				if i%16 == 0 {
					c.Reset()
				}
				d = c.NextBackOff()
			}
			_ = d
		})
	})
	shared := backoff.FullJitter{Base: time.Millisecond, Cap: 20 * time.Second}
	b.Run("sqskit-FullJitter", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			var d time.Duration
			for i := 0; pb.Next(); i++ {
				d = shared.Delay(i%16, d)
			}
		})
	})
}
