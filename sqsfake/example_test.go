package sqsfake_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/sqskit/sqskit/sqsfake"
)

// A visibility timeout expires when the manual clock passes it, and the
// message comes back with a higher receive count.
func Example() {
	ctx := context.Background()
	clock := sqsfake.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	srv := sqsfake.New(func(o *sqsfake.Options) { o.Clock = clock })
	client := srv.Client()

	q, _ := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders")})
	_, _ = client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("order 42")})

	receive := func() {
		out, _ := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    q.QueueUrl,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameApproximateReceiveCount},
		})
		for _, m := range out.Messages {
			fmt.Println(*m.Body, "received", m.Attributes["ApproximateReceiveCount"], "times")
		}
		if len(out.Messages) == 0 {
			fmt.Println("nothing visible")
		}
	}
	receive()
	receive()
	clock.Advance(31 * time.Second) // past the 30 s default visibility timeout
	receive()
	fmt.Println("calls:", srv.Calls().Op["ReceiveMessage"])
	// Output:
	// order 42 received 1 times
	// nothing visible
	// order 42 received 2 times
	// calls: 3
}

// A fault with AfterApply makes a send take effect while the caller sees an
// error, as when a response is lost: a retry then sends a second copy.
func ExampleServer_Inject() {
	ctx := context.Background()
	srv := sqsfake.New()
	client := srv.Client()
	q, _ := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("events")})

	lost := srv.Inject(sqsfake.Fault{Op: "SendMessage", Times: 1, AfterApply: true})
	send := func() error {
		_, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("event")})
		return err
	}
	fmt.Println("first send failed:", send() != nil)
	fmt.Println("retry failed:", send() != nil)

	attrs, _ := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl, AttributeNames: []types.QueueAttributeName{"ApproximateNumberOfMessages"}})
	fmt.Println("messages queued:", attrs.Attributes["ApproximateNumberOfMessages"], "fault fired:", lost.Fired())
	// Output:
	// first send failed: true
	// retry failed: false
	// messages queued: 2 fault fired: 1
}

// Errors carry the SDK's types, so errors.As works as with *sqs.Client.
func Example_errors() {
	ctx := context.Background()
	client := sqsfake.New().Client()
	_, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("missing")})
	var notFound *types.QueueDoesNotExist
	fmt.Println(errors.As(err, &notFound), notFound.ErrorCode())
	// Output:
	// true AWS.SimpleQueueService.NonExistentQueue
}

// The in-process client is the SDK's own: it refuses a nil required member
// before anything is sent, and wraps service errors with their HTTP status.
func ExampleServer_Client() {
	ctx := context.Background()
	client := sqsfake.New().Client()
	q, _ := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders")})

	_, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl}) // no MessageBody
	var invalid smithy.InvalidParamsError
	fmt.Println("refused before sending:", errors.As(err, &invalid))

	_, err = client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("missing")})
	var resp *awshttp.ResponseError
	fmt.Println("HTTP status:", errors.As(err, &resp) && resp.HTTPStatusCode() == 400)
	// Output:
	// refused before sending: true
	// HTTP status: true
}

// Code that builds its own client, or runs in another process, talks to the
// server over HTTP; queue URLs point back at it.
func ExampleNewHTTPServer() {
	ctx := context.Background()
	hs, err := sqsfake.NewHTTPServer(sqsfake.New())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer hs.Close()

	client := hs.SDKClient() // or sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.BaseEndpoint = aws.String(hs.URL) })
	q, _ := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders")})
	_, _ = client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("order 42")})
	out, _ := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl})
	fmt.Println(strings.TrimPrefix(*q.QueueUrl, hs.URL), *out.Messages[0].Body)
	// Output:
	// /123456789012/orders order 42
}

// With Options.Quota, a FIFO queue allows SQS's 300 calls a second per
// action; the next call in the same second is throttled, and time on the
// Server's clock refills the quota.
func ExampleQuota() {
	ctx := context.Background()
	clock := sqsfake.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	client := sqsfake.New(func(o *sqsfake.Options) { o.Clock = clock; o.Quota = &sqsfake.Quota{} }).Client()
	q, _ := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders.fifo"), Attributes: map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"}})
	send := func(i int) error {
		_, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String(fmt.Sprint(i)), MessageGroupId: aws.String("g")})
		return err
	}
	sent := 0
	for send(sent) == nil {
		sent++
	}
	var apiErr smithy.APIError
	fmt.Println(sent, "sent, then", errors.As(send(sent), &apiErr) && apiErr.ErrorCode() == "ThrottlingException")
	clock.Advance(100 * time.Millisecond)
	fmt.Println("after 100 ms:", send(sent+1) == nil)
	// Output:
	// 300 sent, then true
	// after 100 ms: true
}
