// Command lambda-handler is an AWS Lambda function for an SQS event source
// with ReportBatchItemFailures, or for an EventBridge Pipes target (which
// passes the records as a bare JSON array; Handle accepts both): failed
// messages are reported one by one, so the rest of the batch is not
// retried.
//
// It is built on package handler, which links no SQS client: the binary is
// within 100 KB of a Lambda written by hand on aws-lambda-go alone.
//
// Deployed (AWS_LAMBDA_RUNTIME_API set) it serves invocations. Run locally it
// handles a sample event and prints the response.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/sqskit/sqskit/handler"
)

func handle(_ context.Context, m *handler.Message) error {
	if strings.Contains(m.Body, "invalid") {
		return errors.New("invalid payment")
	}
	return nil
}

func main() {
	l, err := handler.NewLambda(handle)
	if err != nil {
		log.Fatal(err)
	}
	if os.Getenv("AWS_LAMBDA_RUNTIME_API") != "" {
		lambda.Start(l.Handle)
		return
	}
	if err := runLocally(context.Background(), l, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func runLocally(ctx context.Context, l *handler.Lambda, out io.Writer) error {
	arn := "arn:aws:sqs:us-east-1:123456789012:payments.fifo"
	event := events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "m1", Body: `{"payment":1}`, EventSourceARN: arn, Attributes: map[string]string{"MessageGroupId": "alice"}},
		{MessageId: "m2", Body: `{"payment":2,"invalid":true}`, EventSourceARN: arn, Attributes: map[string]string{"MessageGroupId": "alice"}},
		{MessageId: "m3", Body: `{"payment":3}`, EventSourceARN: arn, Attributes: map[string]string{"MessageGroupId": "alice"}},
		{MessageId: "m4", Body: `{"payment":4}`, EventSourceARN: arn, Attributes: map[string]string{"MessageGroupId": "bob"}},
	}}
	resp, err := l.Handle(ctx, handler.Event(event))
	if err != nil {
		return err
	}
	b, err := json.Marshal(resp)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, string(b))
	return nil
}
