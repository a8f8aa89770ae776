package s3payload_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sqskit/sqskit/consumer"
	"github.com/sqskit/sqskit/fifo"
	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/internal/fauxqs"
	"github.com/sqskit/sqskit/s3payload"
)

// BenchmarkThroughput256KiB moves b.N bodies of 256 KiB from a producer
// (SendBatch) through a queue to a consumer (handled and deleted), plain
// through SQS or offloaded to S3 (AlwaysThroughS3: 256 KiB is the default
// threshold itself), with 0 and 10 ms added to every SQS and S3 call.
// It reports messages a second for the send and for the whole trip.
//
//	flock /tmp/sqskit-heavy.lock go test -run '^$' -bench Throughput256KiB -benchtime 400x .
func BenchmarkThroughput256KiB(b *testing.B) {
	for _, latency := range []time.Duration{0, 10 * time.Millisecond} {
		for _, through := range []string{"sqs", "s3"} {
			b.Run(through+"/"+fauxqs.LatencyName(latency), func(b *testing.B) {
				benchThroughput(b, through == "s3", latency)
			})
		}
	}
}

func benchThroughput(b *testing.B, viaS3 bool, latency time.Duration) {
	ctx := context.Background()
	be := fauxqs.Fake(latency)
	q := createQueue(b, be.Client, "bench", nil)
	s3api := newFaultyS3(newS3(b, nil), latency)
	fs, err := fifo.NewSender(be.API, q)
	if err != nil {
		b.Fatal(err)
	}
	s, err := s3payload.NewSender(s3api, fs, "payloads", func(o *s3payload.SenderOptions) { o.AlwaysThroughS3 = true })
	if err != nil {
		b.Fatal(err)
	}
	recv, err := s3payload.NewReceiver(s3api, []string{"payloads"})
	if err != nil {
		b.Fatal(err)
	}
	body := payload(256<<10, 0)
	msgs := make([]fifo.Message, b.N)
	for i := range msgs {
		msgs[i] = fifo.Message{Body: body}
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()

	start := time.Now()
	if viaS3 {
		for _, r := range s.SendBatch(ctx, msgs) {
			if r.Err != nil {
				b.Fatal(r.Err)
			}
		}
	} else {
		for _, r := range fs.SendBatch(ctx, msgs) {
			if r.Err != nil {
				b.Fatal(r.Err)
			}
		}
	}
	sent := time.Since(start)

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var handled atomic.Int64
	h := func(_ context.Context, m *handler.Message) error {
		if len(m.Body) != len(body) {
			b.Errorf("expect %d bytes, got %d", len(body), len(m.Body))
		}
		if handled.Add(1) == int64(b.N) {
			stop()
		}
		return nil
	}
	c, err := consumer.New(be.API, q, h, func(o *consumer.Options) {
		o.VisibilityTimeout = time.Minute
		o.WaitTime = time.Second
		o.Concurrency = 32
		o.MaxInFlight = 256 // 256 KiB each: 64 MiB held at most
		if viaS3 {
			o.Middleware = []handler.Middleware{recv.Middleware()}
			o.Hooks = recv.Hooks(consumer.Hooks{})
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	runDone := make(chan error, 1)
	go func() { runDone <- recv.Run(runCtx) }()
	if err := c.Run(runCtx); err != nil {
		b.Fatal(err)
	}
	<-runDone
	total := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/sent.Seconds(), "sent/s")
	b.ReportMetric(float64(b.N)/total.Seconds(), "msgs/s")
	if viaS3 {
		b.ReportMetric(float64(s3api.Calls("PutObject")+s3api.Calls("GetObject")+s3api.Calls("DeleteObjects"))/float64(b.N), "s3calls/msg")
	}
	b.ReportMetric(float64(be.Calls())/float64(b.N), "sqscalls/msg")
}
