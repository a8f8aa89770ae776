package telemetrytest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/aws/smithy-go/metrics"
)

// Meter is a MeterProvider and a Meter that records every measurement.
type Meter struct {
	mu      sync.Mutex
	points  []Point
	units   map[string]string
	async   map[string]func(context.Context, metrics.Int64Observer)
	stopped map[string]bool
}

var _ metrics.MeterProvider = (*Meter)(nil)

// Point is one measurement: an instrument's name, value and attributes.
type Point struct {
	Name  string
	Value float64
	Attrs map[string]string
}

// Meter returns m.
func (m *Meter) Meter(string, ...metrics.MeterOption) metrics.Meter { return m }

func (m *Meter) record(name string, v float64, opts []metrics.RecordMetricOption) {
	var o metrics.RecordMetricOptions
	for _, fn := range opts {
		fn(&o)
	}
	attrs := map[string]string{}
	for k, v := range o.Properties.Values() {
		attrs[fmt.Sprint(k)] = fmt.Sprint(v)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.points = append(m.points, Point{Name: name, Value: v, Attrs: attrs})
}

func (m *Meter) define(name string, opts []metrics.InstrumentOption) {
	var o metrics.InstrumentOptions
	for _, fn := range opts {
		fn(&o)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.units == nil {
		m.units = map[string]string{}
	}
	m.units[name] = o.UnitLabel
}

// Unit returns the unit an instrument was made with.
func (m *Meter) Unit(name string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.units[name]
}

// Points returns the measurements of name whose attributes include every
// "key=value" of match.
func (m *Meter) Points(name string, match ...string) []Point {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Point
next:
	for _, p := range m.points {
		if p.Name != name {
			continue
		}
		for _, kv := range match {
			k, v, _ := strings.Cut(kv, "=")
			if p.Attrs[k] != v {
				continue next
			}
		}
		out = append(out, p)
	}
	return out
}

// Sum adds the values of Points(name, match...).
func (m *Meter) Sum(name string, match ...string) float64 {
	sum := 0.0
	for _, p := range m.Points(name, match...) {
		sum += p.Value
	}
	return sum
}

// Names lists the instruments that recorded something.
func (m *Meter) Names() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	set := map[string]bool{}
	for _, p := range m.points {
		set[p.Name] = true
	}
	return slices.Sorted(maps.Keys(set))
}

// Observe runs the callback of the asynchronous instrument name, as a
// collection would, and returns what it observed; false when there is none
// (or it was stopped).
func (m *Meter) Observe(name string) (int64, bool) {
	m.mu.Lock()
	cb, ok := m.async[name]
	stopped := m.stopped[name]
	m.mu.Unlock()
	if !ok || stopped {
		return 0, false
	}
	var o observer
	cb(context.Background(), &o)
	return o.v, true
}

type observer struct{ v int64 }

func (o *observer) Observe(_ context.Context, v int64, _ ...metrics.RecordMetricOption) { o.v = v }

type instrument struct {
	m    *Meter
	name string
}

func (i instrument) Add(ctx context.Context, v int64, opts ...metrics.RecordMetricOption) {
	i.m.record(i.name, float64(v), opts)
}
func (i instrument) Sample(ctx context.Context, v int64, opts ...metrics.RecordMetricOption) {
	i.m.record(i.name, float64(v), opts)
}
func (i instrument) Record(ctx context.Context, v int64, opts ...metrics.RecordMetricOption) {
	i.m.record(i.name, float64(v), opts)
}

type floatInstrument struct {
	m    *Meter
	name string
}

func (i floatInstrument) Add(ctx context.Context, v float64, opts ...metrics.RecordMetricOption) {
	i.m.record(i.name, v, opts)
}
func (i floatInstrument) Sample(ctx context.Context, v float64, opts ...metrics.RecordMetricOption) {
	i.m.record(i.name, v, opts)
}
func (i floatInstrument) Record(ctx context.Context, v float64, opts ...metrics.RecordMetricOption) {
	i.m.record(i.name, v, opts)
}

type asyncInstrument struct {
	m    *Meter
	name string
}

func (a asyncInstrument) Stop() {
	a.m.mu.Lock()
	defer a.m.mu.Unlock()
	if a.m.stopped == nil {
		a.m.stopped = map[string]bool{}
	}
	a.m.stopped[a.name] = true
}

func (m *Meter) int64(name string, opts []metrics.InstrumentOption) instrument {
	m.define(name, opts)
	return instrument{m, name}
}

func (m *Meter) float64(name string, opts []metrics.InstrumentOption) floatInstrument {
	m.define(name, opts)
	return floatInstrument{m, name}
}

func (m *Meter) asyncInt64(name string, cb metrics.Int64Callback, opts []metrics.InstrumentOption) (metrics.AsyncInstrument, error) {
	m.define(name, opts)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.async == nil {
		m.async = map[string]func(context.Context, metrics.Int64Observer){}
	}
	m.async[name] = cb
	delete(m.stopped, name)
	return asyncInstrument{m, name}, nil
}

func (m *Meter) Int64Counter(name string, opts ...metrics.InstrumentOption) (metrics.Int64Counter, error) {
	return m.int64(name, opts), nil
}
func (m *Meter) Int64UpDownCounter(name string, opts ...metrics.InstrumentOption) (metrics.Int64UpDownCounter, error) {
	return m.int64(name, opts), nil
}
func (m *Meter) Int64Gauge(name string, opts ...metrics.InstrumentOption) (metrics.Int64Gauge, error) {
	return m.int64(name, opts), nil
}
func (m *Meter) Int64Histogram(name string, opts ...metrics.InstrumentOption) (metrics.Int64Histogram, error) {
	return m.int64(name, opts), nil
}
func (m *Meter) Int64AsyncCounter(name string, cb metrics.Int64Callback, opts ...metrics.InstrumentOption) (metrics.AsyncInstrument, error) {
	return m.asyncInt64(name, cb, opts)
}
func (m *Meter) Int64AsyncUpDownCounter(name string, cb metrics.Int64Callback, opts ...metrics.InstrumentOption) (metrics.AsyncInstrument, error) {
	return m.asyncInt64(name, cb, opts)
}
func (m *Meter) Int64AsyncGauge(name string, cb metrics.Int64Callback, opts ...metrics.InstrumentOption) (metrics.AsyncInstrument, error) {
	return m.asyncInt64(name, cb, opts)
}
func (m *Meter) Float64Counter(name string, opts ...metrics.InstrumentOption) (metrics.Float64Counter, error) {
	return m.float64(name, opts), nil
}
func (m *Meter) Float64UpDownCounter(name string, opts ...metrics.InstrumentOption) (metrics.Float64UpDownCounter, error) {
	return m.float64(name, opts), nil
}
func (m *Meter) Float64Gauge(name string, opts ...metrics.InstrumentOption) (metrics.Float64Gauge, error) {
	return m.float64(name, opts), nil
}
func (m *Meter) Float64Histogram(name string, opts ...metrics.InstrumentOption) (metrics.Float64Histogram, error) {
	return m.float64(name, opts), nil
}
func (m *Meter) Float64AsyncCounter(string, metrics.Float64Callback, ...metrics.InstrumentOption) (metrics.AsyncInstrument, error) {
	return nil, fmt.Errorf("telemetrytest: float64 asynchronous instruments are not recorded")
}
func (m *Meter) Float64AsyncUpDownCounter(string, metrics.Float64Callback, ...metrics.InstrumentOption) (metrics.AsyncInstrument, error) {
	return nil, fmt.Errorf("telemetrytest: float64 asynchronous instruments are not recorded")
}
func (m *Meter) Float64AsyncGauge(string, metrics.Float64Callback, ...metrics.InstrumentOption) (metrics.AsyncInstrument, error) {
	return nil, fmt.Errorf("telemetrytest: float64 asynchronous instruments are not recorded")
}
