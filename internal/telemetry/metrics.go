package telemetry

import (
	"context"
	"strconv"
	"time"

	"github.com/aws/smithy-go/metrics"
)

// Metric names. Where OpenTelemetry's messaging conventions name a metric,
// sqskit uses that name; its own are under "sqskit.". Attributes are low
// cardinality only: never a message id.
const (
	MetricConsumed          = "messaging.client.consumed.messages"
	MetricSent              = "messaging.client.sent.messages"
	MetricProcessDuration   = "messaging.process.duration"
	MetricOperationDuration = "messaging.client.operation.duration"
	MetricHandled           = "sqskit.consumer.handled"
	MetricFailed            = "sqskit.consumer.failed"
	MetricDeleted           = "sqskit.consumer.deleted"
	MetricDeleteFailed      = "sqskit.consumer.delete_failed"
	MetricReleased          = "sqskit.consumer.released"
	MetricExtended          = "sqskit.consumer.extended"
	MetricLeaseLost         = "sqskit.consumer.lease_lost"
	MetricHeld              = "sqskit.consumer.held"
	MetricParked            = "sqskit.consumer.parked"
	MetricInFlight          = "sqskit.consumer.in_flight"
	MetricThrottled         = "sqskit.consumer.throttled"
	MetricMessageAge        = "sqskit.consumer.message.age"
	MetricReplayDecisions   = "sqskit.replay.decisions"
	MetricTraceSkipped      = "sqskit.send.trace_context.skipped"
	MetricHandlerDuration   = "sqskit.handler.duration"
)

// KV is one metric attribute.
type KV struct {
	Key   string
	Value string
}

// Attrs is a fixed set of metric attributes, with its record option built
// once, so recording with it allocates nothing of sqskit's. A nil *Attrs
// is the empty set.
type Attrs struct {
	kvs []KV
	opt metrics.RecordMetricOption
}

// NewAttrs returns the set of kv.
func NewAttrs(kv ...KV) *Attrs {
	a := &Attrs{kvs: kv}
	a.opt = func(o *metrics.RecordMetricOptions) {
		for _, kv := range a.kvs {
			o.Properties.Set(kv.Key, kv.Value)
		}
	}
	return a
}

// QueueAttrs are the attributes every record about a queue carries.
func QueueAttrs(urlOrARN string) *Attrs {
	// Appended, not a variadic literal: a [2]KV array on the heap would
	// cost every Lambda binary its equality function.
	kvs := append(make([]KV, 0, 2), KV{AttrSystem, SystemSQS}, KV{AttrDestination, QueueName(urlOrARN)})
	return NewAttrs(kvs...)
}

// With returns a new set: a's attributes and kv.
func (a *Attrs) With(kv ...KV) *Attrs {
	var base []KV
	if a != nil {
		base = a.kvs
	}
	out := make([]KV, 0, len(base)+len(kv))
	return NewAttrs(append(append(out, base...), kv...)...)
}

func (a *Attrs) options() []metrics.RecordMetricOption {
	if a == nil {
		return nil
	}
	return []metrics.RecordMetricOption{a.opt}
}

// Meter makes instruments, or nothing (the zero Meter).
type Meter struct{ m metrics.Meter }

// NewMeter returns a Meter from mp under scope; a nil or no-op mp gives the
// zero Meter.
func NewMeter(mp metrics.MeterProvider, scope string) Meter {
	if !MetricsOn(mp) {
		return Meter{}
	}
	return Meter{m: mp.Meter(scope)}
}

// On reports whether instruments record anything.
func (m Meter) On() bool { return m.m != nil }

// Counter makes a counter. An instrument the provider refuses records
// nothing.
func (m Meter) Counter(name, unit, description string) Counter {
	if m.m == nil {
		return Counter{}
	}
	c, err := m.m.Int64Counter(name, instrument(unit, description))
	if err != nil {
		return Counter{}
	}
	return Counter{c: c}
}

// Histogram makes a histogram of float64 values (seconds, by the
// conventions).
func (m Meter) Histogram(name, unit, description string) Histogram {
	if m.m == nil {
		return Histogram{}
	}
	h, err := m.m.Float64Histogram(name, instrument(unit, description))
	if err != nil {
		return Histogram{}
	}
	return Histogram{h: h}
}

// Gauge registers an asynchronous up-down counter that reads read at each
// collection; Stop unregisters it. It returns nil when metrics are off.
func (m Meter) Gauge(name, unit, description string, attrs *Attrs, read func() int64) metrics.AsyncInstrument {
	if m.m == nil {
		return nil
	}
	opts := attrs.options()
	g, err := m.m.Int64AsyncUpDownCounter(name, func(ctx context.Context, o metrics.Int64Observer) {
		o.Observe(ctx, read(), opts...)
	}, instrument(unit, description))
	if err != nil {
		return nil
	}
	return g
}

func instrument(unit, description string) metrics.InstrumentOption {
	return func(o *metrics.InstrumentOptions) { o.UnitLabel, o.Description = unit, description }
}

// Counter is an int64 counter, or nothing (the zero Counter).
type Counter struct{ c metrics.Int64Counter }

// Add adds n with attrs.
func (c Counter) Add(ctx context.Context, n int64, attrs *Attrs) {
	if c.c != nil {
		c.c.Add(ctx, n, attrs.options()...)
	}
}

// Histogram is a float64 histogram, or nothing (the zero Histogram).
type Histogram struct{ h metrics.Float64Histogram }

// On reports whether the histogram records anything.
func (h Histogram) On() bool { return h.h != nil }

// Record records v with attrs.
func (h Histogram) Record(ctx context.Context, v float64, attrs *Attrs) {
	if h.h != nil {
		h.h.Record(ctx, v, attrs.options()...)
	}
}

// Seconds records d in seconds.
func (h Histogram) Seconds(ctx context.Context, d time.Duration, attrs *Attrs) {
	if h.h != nil {
		h.h.Record(ctx, d.Seconds(), attrs.options()...)
	}
}

// ConsumerMetrics are the instruments every consuming runtime records: the
// long-poller (package consumer) and the Lambda adapter (package handler).
// What only the long-poller does is in SettleMetrics, so a Lambda links
// none of it.
type ConsumerMetrics struct {
	// noCompare: nothing compares instruments, and a comparable struct this
	// size costs every Lambda binary an equality function.
	_                         [0]func()
	On                        bool
	Consumed, Handled, Failed Counter
	ProcessDuration           Histogram
	MessageAge                Histogram
	meter                     Meter
}

// NewConsumerMetrics makes the consuming side's instruments.
func NewConsumerMetrics(m Meter) ConsumerMetrics {
	if !m.On() {
		return ConsumerMetrics{}
	}
	return ConsumerMetrics{
		On:              true,
		meter:           m,
		Consumed:        m.Counter(MetricConsumed, "{message}", "Messages received."),
		Handled:         m.Counter(MetricHandled, "{message}", "Messages whose handler succeeded."),
		Failed:          m.Counter(MetricFailed, "{message}", "Messages that failed (handler error, panic, timeout, not started, lease lost), by error.type."),
		ProcessDuration: m.Histogram(MetricProcessDuration, "s", "Handler duration, by error.type on failure."),
		MessageAge:      m.Histogram(MetricMessageAge, "s", "Time from SentTimestamp to receive: the queue's lag."),
	}
}

// SettleMetrics are the instruments of the long-poller's own settlement:
// deletes, visibility changes, holds, parks and its SQS calls.
type SettleMetrics struct {
	_                                                                  [0]func()
	Deleted, DeleteFailed, Released, Extended, LeaseLost, Held, Parked Counter
	Throttled                                                          Counter
	OperationDuration                                                  Histogram
}

// NewSettleMetrics makes the long-poller's settlement instruments.
func NewSettleMetrics(m Meter) SettleMetrics {
	if !m.On() {
		return SettleMetrics{}
	}
	return SettleMetrics{
		Deleted:           m.Counter(MetricDeleted, "{message}", "Messages deleted after success."),
		DeleteFailed:      m.Counter(MetricDeleteFailed, "{message}", "Deletes that failed for good: the message comes back."),
		Released:          m.Counter(MetricReleased, "{message}", "Failed or unstarted messages made visible again."),
		Extended:          m.Counter(MetricExtended, "{message}", "Visibility extensions by the heartbeat."),
		LeaseLost:         m.Counter(MetricLeaseLost, "{message}", "Messages whose visibility could not be kept."),
		Held:              m.Counter(MetricHeld, "{message}", "Messages a handler held (kept invisible) without failing them."),
		Parked:            m.Counter(MetricParked, "{message}", "Messages escalated to the parking queue and deleted."),
		Throttled:         m.Counter(MetricThrottled, "{call}", "SQS calls throttled (the consumer then paces that operation), by operation name."),
		OperationDuration: m.Histogram(MetricOperationDuration, "s", "SQS call duration, by operation name and error.type."),
	}
}

// Meter returns the Meter the instruments came from.
func (c ConsumerMetrics) Meter() Meter { return c.meter }

// Age returns now − the message's SentTimestamp (epoch milliseconds, as SQS
// writes it), and false when the attribute is missing or malformed.
func Age(sentTimestamp string, now time.Time) (time.Duration, bool) {
	ms, err := strconv.ParseInt(sentTimestamp, 10, 64)
	if err != nil || ms <= 0 {
		return 0, false
	}
	return max(now.Sub(time.UnixMilli(ms)), 0), true
}
