// Package backend gives the example programs an SQS client: in-memory
// (sqsfake) by default, or a real endpoint when the environment names one.
//
//	SQSKIT_ENDPOINT=http://127.0.0.1:4566  an emulator, with static test credentials
//	SQSKIT_AWS=1                          real AWS, with the default credential chain
package backend

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqskit/sqskit/sqsfake"
)

// Open returns a client and a word saying which backend it talks to.
func Open(ctx context.Context) (sqsfake.API, string, error) {
	if endpoint := os.Getenv("SQSKIT_ENDPOINT"); endpoint != "" {
		return sqs.New(sqs.Options{
			Region:       "us-east-1",
			BaseEndpoint: aws.String(endpoint),
			Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		}), endpoint, nil
	}
	if os.Getenv("SQSKIT_AWS") != "" {
		cfg, err := config.LoadDefaultConfig(ctx)
		if err != nil {
			return nil, "", fmt.Errorf("load AWS config: %w", err)
		}
		return sqs.NewFromConfig(cfg), "AWS " + cfg.Region, nil
	}
	return sqsfake.New().Client(), "in-memory", nil
}

// Queue creates (or finds) a queue and returns its URL.
func Queue(ctx context.Context, api sqsfake.API, name string, attrs map[string]string) (string, error) {
	out, err := api.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		return "", fmt.Errorf("create queue %s: %w", name, err)
	}
	return *out.QueueUrl, nil
}
