// Package backend gives the example programs an SQS client: in-memory
// (sqsfake) by default, or a real endpoint when the environment names one.
//
//	SQSKIT_ENDPOINT=http://127.0.0.1:9324  an emulator (cmd/sqsfake, fauxqs, …)
//	SQSKIT_AWS=1                          real AWS, with the default credential chain
package backend

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/sqsfake"
)

// AWS is the endpoint that means real AWS, as the SDK resolves it.
const AWS = "aws"

// Endpoint returns the endpoint the environment names: SQSKIT_ENDPOINT, AWS
// when SQSKIT_AWS is set, or "" for in memory.
func Endpoint() string {
	if e := os.Getenv("SQSKIT_ENDPOINT"); e != "" {
		return e
	}
	if os.Getenv("SQSKIT_AWS") != "" {
		return AWS
	}
	return ""
}

// Client returns an SDK client for endpoint: AWS for real AWS (the default
// credential chain and region), or the URL of an emulator or a regional
// endpoint. For a URL, credentials come from the environment when
// AWS_ACCESS_KEY_ID or AWS_PROFILE is set, else static test credentials
// (emulators accept any); the region is the environment's, else us-east-1.
// The client has its own connections; closeIdle closes those left open, for
// a program that ends, or a test that checks for leaked goroutines.
func Client(ctx context.Context, endpoint string, optFns ...func(*sqs.Options)) (client *sqs.Client, closeIdle func(), err error) {
	if endpoint == "" {
		return nil, nil, errors.New("backend: no endpoint")
	}
	var loads []func(*config.LoadOptions) error
	if endpoint != AWS && os.Getenv("AWS_ACCESS_KEY_ID") == "" && os.Getenv("AWS_PROFILE") == "" {
		loads = append(loads, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")))
	}
	cfg, err := config.LoadDefaultConfig(ctx, loads...)
	if err != nil {
		return nil, nil, fmt.Errorf("load AWS config: %w", err)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	transport := awshttp.NewBuildableClient().GetTransport() // the SDK's defaults
	first := func(o *sqs.Options) {
		o.HTTPClient = &http.Client{Transport: transport}
		if endpoint != AWS {
			o.BaseEndpoint = aws.String(endpoint)
		}
	}
	return sqs.NewFromConfig(cfg, append([]func(*sqs.Options){first}, optFns...)...), transport.CloseIdleConnections, nil
}

// Open returns a client for the environment's endpoint (see Endpoint) and a
// word saying which backend it talks to.
func Open(ctx context.Context) (sqsfake.API, string, error) {
	endpoint := Endpoint()
	if endpoint == "" {
		return sqsfake.New().Client(), "in-memory", nil
	}
	client, _, err := Client(ctx, endpoint)
	if err != nil {
		return nil, "", err
	}
	if endpoint == AWS {
		return client, "AWS " + client.Options().Region, nil
	}
	return client, endpoint, nil
}

// Queue creates (or finds) a queue and returns its URL.
func Queue(ctx context.Context, api sqsfake.API, name string, attrs map[string]string) (string, error) {
	out, err := api.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		return "", fmt.Errorf("create queue %s: %w", name, err)
	}
	return *out.QueueUrl, nil
}

// Queues creates the queues of one run and deletes them when it ends. On an
// endpoint every name gets Prefix, so that two runs never share a queue.
type Queues struct {
	API sqsfake.API
	// Prefix goes before every name; NewQueues sets a fresh one for an
	// endpoint and none in memory.
	Prefix  string
	created []string
}

// NewQueues returns Queues for api: with the prefix base followed by a
// run's own suffix (base-<time in base 36>-) on an endpoint, and no prefix
// in memory.
func NewQueues(api sqsfake.API, endpoint, base string) *Queues {
	q := &Queues{API: api}
	if endpoint != "" {
		q.Prefix = base + "-" + strconv.FormatInt(time.Now().UnixMilli(), 36) + "-"
	}
	return q
}

// Create creates the queue Prefix+name and returns its URL.
func (q *Queues) Create(ctx context.Context, name string, attrs map[string]string) (string, error) {
	url, err := Queue(ctx, q.API, q.Prefix+name, attrs)
	if err != nil {
		return "", err
	}
	q.created = append(q.created, url)
	return url, nil
}

// ARN returns a queue's ARN, for a redrive policy.
func (q *Queues) ARN(ctx context.Context, url string) (string, error) {
	out, err := q.API.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err != nil {
		return "", fmt.Errorf("queue ARN: %w", err)
	}
	return out.Attributes[string(types.QueueAttributeNameQueueArn)], nil
}

// RedrivePolicy returns the RedrivePolicy attribute that sends a message to
// dlqArn after maxReceives receives.
func RedrivePolicy(dlqArn string, maxReceives int) string {
	return fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"%d"}`, dlqArn, maxReceives)
}

// DeleteAll deletes the queues Create made, even after ctx ended, within
// 30 s; it returns the first error.
func (q *Queues) DeleteAll(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	var first error
	for _, url := range q.created {
		if _, err := q.API.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}); err != nil && first == nil {
			first = fmt.Errorf("delete queue %s: %w", url, err)
		}
	}
	q.created = nil
	return first
}
