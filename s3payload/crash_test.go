package s3payload_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/consumer"
	"github.com/sqskit/sqskit/fifo"
	"github.com/sqskit/sqskit/s3payload"
	"github.com/sqskit/sqskit/sqsfake"
)

// crashEnv is one producer, one queue and one consumer's S3, with faults.
type crashEnv struct {
	t       *testing.T
	s3      *faultyS3
	srv     *sqsfake.Server
	q       string
	parking string
	sender  *s3payload.Sender
	bodies  []string
}

// sendAll sends every body, sending again (as a producer does) those whose
// Result says they failed, until each is acknowledged.
func (e *crashEnv) sendAll(ctx context.Context, bodies []string) {
	for try := 0; len(bodies) > 0; try++ {
		if try == 5 {
			e.t.Fatalf("%d messages never sent", len(bodies))
		}
		msgs := make([]fifo.Message, len(bodies))
		for i, b := range bodies {
			msgs[i] = fifo.Message{Body: b}
		}
		var again []string
		for i, r := range e.sender.SendBatch(ctx, msgs) {
			if r.Err != nil {
				again = append(again, bodies[i])
			}
		}
		bodies = again
	}
}

// TestCrashSafety injects a failure (or a crash) at each step between the
// S3 put, the SQS send, the SQS delete and the S3 delete, and proves that
// every payload reaches the handler byte for byte, that the objects left
// behind are the orphans that step can leave and no more, and that Sweep
// finds and deletes exactly them once they are older than its bound (and
// none before).
func TestCrashSafety(t *testing.T) {
	const n = 30
	steps := []struct {
		name string
		// before runs before the producer sends (faults to inject; bodies
		// a crashed producer offloaded without sending, to send again).
		before func(e *crashEnv, ctx context.Context)
		// consume runs the consumer; the default drains once.
		consume func(e *crashEnv, recv *s3payload.Receiver, h *seen)
		// maxOrphans bounds the objects left after everything was handled.
		maxOrphans func(e *crashEnv, recv *s3payload.Receiver) int
		// maxParked bounds the duplicates parked under ReasonMissing.
		maxParked int
	}{
		{name: "s3-put-fails", before: func(e *crashEnv, _ context.Context) { e.s3.failNext("PutObject", 3) }},
		{name: "crash-between-s3-put-and-sqs-send", before: func(e *crashEnv, ctx context.Context) {
			for _, b := range e.bodies[:3] {
				if _, _, err := e.sender.Offload(ctx, fifo.Message{Body: b}); err != nil {
					e.t.Fatal(err)
				}
			} // the process dies here; after its restart it sends everything
		}, maxOrphans: func(*crashEnv, *s3payload.Receiver) int { return 3 }},
		{name: "sqs-send-refused", before: func(e *crashEnv, _ context.Context) {
			// A call refused as a whole: the SDK may have retried inside
			// it after a request that stored the messages, so the
			// objects of its 10 messages stay, orphans for Sweep (the
			// producer sends those bodies again, with new objects).
			e.srv.Inject(sqsfake.Fault{Op: "SendMessageBatch", Times: 1, Err: &types.InvalidMessageContents{Message: aws.String("refused")}})
		}, maxOrphans: func(*crashEnv, *s3payload.Receiver) int { return 10 }},
		{name: "sqs-send-entries-refused", before: func(e *crashEnv, _ context.Context) {
			// SQS refuses entries in its answer: stored for certain not,
			// so their objects go at once.
			e.srv.Inject(sqsfake.Fault{Op: "SendMessageBatch", Times: 1, Entries: &sqsfake.EntryFault{Code: "InvalidMessageContents", SenderFault: true}})
		}},
		{name: "sqs-send-answer-lost", before: func(e *crashEnv, _ context.Context) {
			// Stored, but the answer is lost (a 500): the Sender sends
			// again, so a standard queue holds two copies of those
			// messages pointing to one object. The first copy handled
			// deletes it; the second finds it gone and is parked under
			// ReasonMissing: a duplicate, its payload already handled.
			e.srv.Inject(sqsfake.Fault{Op: "SendMessageBatch", Times: 1, AfterApply: true})
		}, maxParked: 10},
		{name: "sqs-delete-fails-for-good", before: func(e *crashEnv, _ context.Context) {
			// SQS refuses the deletes of one call for good: the messages
			// come back after their visibility timeout, and their objects
			// must still be there.
			e.srv.Inject(sqsfake.Fault{Op: "DeleteMessageBatch", Times: 1, Entries: &sqsfake.EntryFault{Code: "ReceiptHandleIsInvalid", SenderFault: true}})
		}, consume: drainTwice},
		{name: "sqs-delete-answer-lost", before: func(e *crashEnv, _ context.Context) {
			// Deleted, but the consumer is told it failed: it deletes
			// again, and the objects go once that is confirmed.
			e.srv.Inject(sqsfake.Fault{Op: "DeleteMessageBatch", Times: 1, AfterApply: true})
		}},
		{name: "s3-delete-fails", before: func(e *crashEnv, _ context.Context) { e.s3.failNext("DeleteObjects", 1) },
			maxOrphans: func(_ *crashEnv, r *s3payload.Receiver) int { return int(r.Stats().DeleteFailed) }},
		{name: "crash-between-sqs-delete-and-s3-delete", consume: func(e *crashEnv, recv *s3payload.Receiver, h *seen) {
			// The consumer deletes from SQS; the process dies before Run
			// deletes a single object.
			c, err := consumer.New(e.srv.Client(), e.q, h.handle, func(o *consumer.Options) {
				o.Middleware = append(o.Middleware, recv.Middleware())
				o.Hooks = recv.Hooks(consumer.Hooks{})
				o.WaitTime = time.Second
			})
			if err != nil {
				e.t.Fatal(err)
			}
			if err := c.Drain(context.Background()); err != nil {
				e.t.Fatal(err)
			}
		}, maxOrphans: func(*crashEnv, *s3payload.Receiver) int { return n }},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				e := &crashEnv{t: t, s3: newFaultyS3(newS3(t, nil), 0), srv: sqsfake.New()}
				e.q = createQueue(t, e.srv.Client(), "orders", nil)
				e.parking = createQueue(t, e.srv.Client(), "operator", nil)
				e.sender = newSender(t, e.s3, e.srv.Client(), e.q, func(o *s3payload.SenderOptions) { o.AlwaysThroughS3 = true; o.KeyPrefix = "in/" })
				for i := range n {
					e.bodies = append(e.bodies, fmt.Sprintf("%03d:", i)+payload(2000, i))
				}
				if step.before != nil {
					step.before(e, ctx)
				}
				e.sendAll(ctx, e.bodies)
				recv, err := s3payload.NewReceiver(e.s3, []string{"payloads"}, func(o *s3payload.ReceiverOptions) { o.KeyPrefix = "in/" })
				if err != nil {
					t.Fatal(err)
				}
				var h seen
				if step.consume != nil {
					step.consume(e, recv, &h)
				} else {
					parked := drain(t, e.srv.Client(), e.q, recv, h.handle, func(o *consumer.Options) { o.ParkingQueue = e.parking })
					if parked[s3payload.ReasonMissing] > step.maxParked || len(parked) > 1 {
						t.Errorf("expect at most %d duplicates parked as missing, got %v", step.maxParked, parked)
					}
					t.Logf("parked %v, handled %d", parked, len(h.bodies))
				}

				got := slices.Compact(h.sorted())
				if !slices.Equal(got, e.bodies) {
					t.Fatalf("expect all %d payloads handled byte for byte, got %d distinct", n, len(got))
				}
				orphans := len(keys(t, e.s3, "payloads"))
				bound := 0
				if step.maxOrphans != nil {
					bound = step.maxOrphans(e, recv)
				}
				if orphans > bound {
					t.Errorf("expect at most %d orphans, got %d", bound, orphans)
				}
				sweep := func() s3payload.SweepReport {
					rep, err := s3payload.Sweep(ctx, e.s3, "payloads", func(o *s3payload.SweepOptions) {
						o.KeyPrefix = "in/"
						o.Retention = 4 * 24 * time.Hour
					})
					if err != nil {
						t.Fatal(err)
					}
					return rep
				}
				if rep := sweep(); rep.Listed != orphans || rep.Deleted != 0 {
					t.Errorf("expect %d listed and none deleted before the bound, got %+v", orphans, rep)
				}
				time.Sleep(4*24*time.Hour + 13*time.Hour + time.Minute)
				if rep := sweep(); rep.Deleted != orphans || rep.Failed != 0 {
					t.Errorf("expect the %d orphans deleted past the bound, got %+v", orphans, rep)
				}
				if ks := keys(t, e.s3, "payloads"); len(ks) != 0 {
					t.Errorf("expect an empty bucket after the sweep, got %d objects", len(ks))
				}
			})
		})
	}
}

// drainTwice drains, checks that the objects of the messages whose delete
// failed are still there, waits out their visibility timeout, and drains
// again.
func drainTwice(e *crashEnv, recv *s3payload.Receiver, h *seen) {
	drain(e.t, e.srv.Client(), e.q, recv, h.handle)
	out, err := e.srv.Client().GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: &e.q, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		e.t.Fatal(err)
	}
	back := out.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible)]
	if ks := keys(e.t, e.s3, "payloads"); back == "0" || strconv.Itoa(len(ks)) != back {
		e.t.Errorf("expect one object for each of the %s messages to come back, got %d", back, len(ks))
	}
	time.Sleep(31 * time.Second)
	drain(e.t, e.srv.Client(), e.q, recv, h.handle)
}
