// Command handwritten is a partial-batch Lambda written by hand on
// aws-lambda-go alone, the baseline of TestLambdaFootprint.
package main

import (
	"context"
	"errors"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
)

func handle(_ context.Context, m events.SQSMessage) error {
	if strings.Contains(m.Body, "invalid") {
		return errors.New("invalid payment")
	}
	return nil
}

func main() {
	lambda.Start(func(ctx context.Context, e events.SQSEvent) (events.SQSEventResponse, error) {
		var resp events.SQSEventResponse
		for _, m := range e.Records {
			if err := handle(ctx, m); err != nil {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
			}
		}
		return resp, nil
	})
}
