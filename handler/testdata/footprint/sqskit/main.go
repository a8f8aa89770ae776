// Command sqskit is the smallest partial-batch Lambda built with sqskit:
// handler.NewLambda around a handler. TestLambdaFootprint compares its
// dependencies and binary with handwritten's.
package main

import (
	"context"
	"errors"
	"strings"

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
		panic(err)
	}
	lambda.Start(l.Handle)
}
