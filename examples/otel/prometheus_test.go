package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/metrics/smithyotelmetrics"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/sqskit/sqskit/consumer"
	"github.com/sqskit/sqskit/fifo"
	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/sqsfake"
)

// handlerDelays are the handler's run times, cycled over the messages: from
// 1 ms to 300 ms, as a real handler's spread.
var handlerDelays = []time.Duration{time.Millisecond, 3 * time.Millisecond, 20 * time.Millisecond, 60 * time.Millisecond, 300 * time.Millisecond}

// workload sends ten messages (two of the calls slowed by 30 ms) and
// consumes them with handlers of handlerDelays' lengths, recording on mp.
func workload(t *testing.T, mp *sdkmetric.MeterProvider) {
	t.Helper()
	ctx := context.Background()
	srv := sqsfake.New()
	client := srv.Client()
	out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders")})
	if err != nil {
		t.Fatal(err)
	}
	meter := smithyotelmetrics.Adapt(mp)
	sender, err := fifo.NewSender(client, "orders", func(o *fifo.SenderOptions) { o.MeterProvider = meter })
	if err != nil {
		t.Fatal(err)
	}
	srv.Inject(sqsfake.Fault{Op: "SendMessage", Times: 2, Latency: 30 * time.Millisecond})
	const n = 10
	for i := range n {
		if _, err := sender.Send(ctx, fifo.Message{Body: strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := consumer.New(client, aws.ToString(out.QueueUrl), func(_ context.Context, m *handler.Message) error {
		i, _ := strconv.Atoi(m.Body)
		time.Sleep(handlerDelays[i%len(handlerDelays)])
		return nil
	}, func(o *consumer.Options) { o.MeterProvider = meter; o.WaitTime = time.Second })
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(runCtx) }()
	for deadline := time.Now().Add(10 * time.Second); c.Stats().Deleted < n && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := c.Stats().Deleted; got != n {
		t.Fatalf("expect %d handled and deleted, got %d", n, got)
	}
}

// scrape GETs the handler as Prometheus does and returns, for each series
// of metric (its labels but le), the cumulative count at each bucket bound.
func scrape(t *testing.T, h http.Handler, metric string) map[string]map[float64]float64 {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %v %s", err, resp.Status)
	}
	series := map[string]map[float64]float64{}
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, metric+"_bucket{")
		if !ok {
			continue
		}
		labels, value, _ := strings.Cut(rest, "} ")
		i := strings.Index(labels, `le="`)
		if i < 0 {
			t.Fatalf("no le label in %q", line)
		}
		le := labels[i+4 : i+4+strings.Index(labels[i+4:], `"`)]
		key := labels[:i]
		bound, err := strconv.ParseFloat(strings.Replace(le, "+Inf", "Inf", 1), 64)
		if err != nil {
			t.Fatalf("le %q: %v", le, err)
		}
		count, err := strconv.ParseFloat(value, 64)
		if err != nil {
			t.Fatalf("count %q: %v", value, err)
		}
		if series[key] == nil {
			series[key] = map[float64]float64{}
		}
		series[key][bound] = count
	}
	if len(series) == 0 {
		t.Fatalf("expect %s in the scrape, got:\n%s", metric, body)
	}
	return series
}

// bucketsBelow counts the buckets with bounds up to limit that hold at least
// one observation, in a series of cumulative counts.
func bucketsBelow(cumulative map[float64]float64, limit float64) int {
	filled, prev := 0, 0.0
	for _, b := range sortedBounds(cumulative) {
		if b > limit {
			break
		}
		if cumulative[b] > prev {
			filled++
		}
		prev = cumulative[b]
	}
	return filled
}

func sortedBounds(m map[float64]float64) []float64 {
	return slices.Sorted(maps.Keys(m))
}

// With the views, a scrape of OpenTelemetry's Prometheus exporter spreads
// handler runs of 1–300 ms and SQS calls of under 1 ms to 30 ms over
// several buckets below 5 s; with OpenTelemetry's default buckets the same
// workload lands in one.
func TestPrometheusScrapeSpreadsDurations(t *testing.T) {
	mp, h, err := prometheusMeterProvider()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = mp.Shutdown(context.Background()) }()
	workload(t, mp)

	for _, c := range []struct {
		metric, series string
		min            int
	}{
		{"messaging_process_duration_seconds", `messaging_destination_name="orders"`, 4},
		{"messaging_client_operation_duration_seconds", `messaging_operation_name="send"`, 2},
	} {
		t.Run(c.metric, func(t *testing.T) {
			found := false
			for labels, cumulative := range scrape(t, h, c.metric) {
				if !strings.Contains(labels, c.series) {
					continue
				}
				found = true
				t.Logf("%s{%s}: %d buckets below 5 s hold observations", c.metric, labels, bucketsBelow(cumulative, 5))
				if got := bucketsBelow(cumulative, 5); got < c.min {
					t.Errorf("%s{%s}: expect observations in at least %d buckets below 5 s, got %d: %v", c.metric, labels, c.min, got, cumulative)
				}
			}
			if !found {
				t.Errorf("expect a series with %s", c.series)
			}
		})
	}

	t.Run("OpenTelemetry's default buckets", func(t *testing.T) {
		reg := prometheus.NewRegistry()
		exporter, err := otelprom.New(otelprom.WithRegisterer(reg))
		if err != nil {
			t.Fatal(err)
		}
		plain := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
		defer func() { _ = plain.Shutdown(context.Background()) }()
		workload(t, plain)
		for labels, cumulative := range scrape(t, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), "messaging_process_duration_seconds") {
			if got := bucketsBelow(cumulative, 5); got != 1 {
				t.Errorf("{%s}: expect every run in one bucket below 5 s, got %d: %v", labels, got, cumulative)
			}
		}
	})
}

// The command's -prometheus output is a Prometheus scrape with the
// duration histograms in seconds.
func TestRunPrometheusPrintsAScrape(t *testing.T) {
	var out strings.Builder
	if err := runPrometheus(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# TYPE messaging_process_duration_seconds histogram",
		fmt.Sprintf(`le="%g"`, sqsCallBuckets()[0]), "sqskit_consumer_message_age_seconds_bucket"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("expect %q in the scrape", want)
		}
	}
}
