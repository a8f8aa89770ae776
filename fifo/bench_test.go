package fifo_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqskit/sqskit/fifo"
	"github.com/sqskit/sqskit/internal/fauxqs"
)

// BenchmarkSend compares, on sqsfake and on the fauxqs emulator in one run,
// one SendMessage per message (what a hand-written loop does) with SendBatch
// and with the Batcher under 32 concurrent callers, for 1 and 100 groups. One
// op is one message; it reports messages/s and API calls per message.
func BenchmarkSend(b *testing.B) {
	for _, name := range fauxqs.BackendNames() {
		b.Run(name, func(b *testing.B) {
			be := fauxqs.OpenBackend(b, name, 0)
			for _, groups := range []int{1, 100} {
				for _, mode := range []string{"SendMessage-each", "SendBatch", "Batcher-32-callers"} {
					b.Run(fmt.Sprintf("%s/groups=%d", mode, groups), func(b *testing.B) {
						benchSend(b, be, mode, groups)
					})
				}
			}
		})
	}
}

func benchSend(b *testing.B, be fauxqs.Backend, mode string, groups int) {
	ctx := context.Background()
	q, err := be.API.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("bench-" + strconv.FormatInt(time.Now().UnixNano(), 36) + ".fifo"),
		Attributes: map[string]string{"FifoQueue": "true"}})
	if err != nil {
		b.Fatal(err)
	}
	s, err := fifo.NewSender(be.API, *q.QueueUrl)
	if err != nil {
		b.Fatal(err)
	}
	msg := func(i int) fifo.Message {
		return fifo.Message{Body: `{"order":` + strconv.Itoa(i) + `,"items":["a","b"]}`, GroupID: "g" + strconv.Itoa(i%groups)}
	}
	be.ResetCalls()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	switch mode {
	case "SendMessage-each":
		for i := 0; i < b.N; i++ {
			if _, err := s.Send(ctx, msg(i)); err != nil {
				b.Fatal(err)
			}
		}
	case "SendBatch":
		const chunk = 100
		for i := 0; i < b.N; i += chunk {
			msgs := make([]fifo.Message, min(chunk, b.N-i))
			for j := range msgs {
				msgs[j] = msg(i + j)
			}
			for _, r := range s.SendBatch(ctx, msgs) {
				if r.Err != nil {
					b.Fatal(r.Err)
				}
			}
		}
	case "Batcher-32-callers":
		batcher, err := s.NewBatcher()
		if err != nil {
			b.Fatal(err)
		}
		var next atomic.Int64
		var wg sync.WaitGroup
		for range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := int(next.Add(1)) - 1; i < b.N; i = int(next.Add(1)) - 1 {
					if _, err := batcher.Send(ctx, msg(i)); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		if err := batcher.Close(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
	b.ReportMetric(float64(be.Calls())/float64(b.N), "calls/msg")
}
