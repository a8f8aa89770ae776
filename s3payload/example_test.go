package s3payload_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/sqskit/sqskit/consumer"
	"github.com/sqskit/sqskit/fifo"
	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/s3payload"
	"github.com/sqskit/sqskit/sqsfake"
)

// A producer offloads a 2 MiB body to S3 and sends its pointer; a
// consumer's handler gets the body back, and the object is deleted once
// SQS confirmed the message's delete. Offline: gofakes3 serves S3 on a
// loopback port, sqsfake serves SQS in process.
func Example() {
	ctx := context.Background()
	fakeS3 := httptest.NewServer(gofakes3.New(s3mem.New()).Server())
	defer fakeS3.Close()
	s3api := s3.New(s3.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(fakeS3.URL), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
	})
	if _, err := s3api.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("payloads")}); err != nil {
		panic(err)
	}
	sqsapi := sqsfake.New().Client()
	q, err := sqsapi.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders")})
	if err != nil {
		panic(err)
	}

	// Send: bodies over 256 KiB go to S3 under "orders/".
	fs, err := fifo.NewSender(sqsapi, *q.QueueUrl)
	if err != nil {
		panic(err)
	}
	sender, err := s3payload.NewSender(s3api, fs, "payloads", func(o *s3payload.SenderOptions) { o.KeyPrefix = "orders/" })
	if err != nil {
		panic(err)
	}
	if _, err := sender.Send(ctx, fifo.Message{Body: strings.Repeat("x", 2<<20)}); err != nil {
		panic(err)
	}

	// Receive: resolve pointers to this bucket and prefix only.
	recv, err := s3payload.NewReceiver(s3api, []string{"payloads"}, func(o *s3payload.ReceiverOptions) { o.KeyPrefix = "orders/" })
	if err != nil {
		panic(err)
	}
	c, err := consumer.New(sqsapi, *q.QueueUrl, func(ctx context.Context, m *handler.Message) error {
		fmt.Println("handled", len(m.Body), "bytes")
		return nil
	}, func(o *consumer.Options) {
		o.Middleware = []handler.Middleware{recv.Middleware()}
		o.Hooks = recv.Hooks(consumer.Hooks{})
		o.WaitTime = time.Second
	})
	if err != nil {
		panic(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- recv.Run(runCtx) }() // deletes objects after SQS deletes
	if err := c.Drain(ctx); err != nil {
		panic(err)
	}
	stop()
	<-done
	fmt.Printf("%+v\n", recv.Stats())
	// Output:
	// handled 2097152 bytes
	// {Resolved:1 Deleted:1 DeleteFailed:0 Dropped:0}
}
