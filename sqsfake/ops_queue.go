package sqsfake

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqskit/sqskit/internal/sqsrule"
)

// queueDeleteCooldown is how long a deleted queue's name stays unusable.
const queueDeleteCooldown = 60 * time.Second

// purgeCooldown is how long after a purge another purge is refused.
const purgeCooldown = 60 * time.Second

// CreateQueue creates a queue, or returns the URL of an existing queue with
// the same name and attributes.
func (c *Client) CreateQueue(ctx context.Context, in *sqs.CreateQueueInput, _ ...func(*sqs.Options)) (*sqs.CreateQueueOutput, error) {
	const op = "CreateQueue"
	if in == nil || in.QueueName == nil {
		return nil, opError(op, errMissingParameter("QueueName"))
	}
	if _, err := c.s.begin(ctx, op, nil); err != nil {
		return nil, err
	}
	out, err := c.s.createQueue(*in.QueueName, in.Attributes, in.Tags)
	if err != nil {
		return nil, opError(op, err)
	}
	return out, nil
}

func (s *Server) createQueue(name string, attrs, tags map[string]string) (*sqs.CreateQueueOutput, error) {
	if err := sqsrule.CheckQueueName(name); err != nil {
		return nil, fromViolation(err)
	}
	// A FIFO queue needs both the .fifo suffix and FifoQueue=true.
	fifo := sqsrule.IsFIFO(name)
	if flag, _ := strconv.ParseBool(attrs["FifoQueue"]); flag != fifo {
		return nil, errInvalidParameter("Invalid value for the parameter QueueName or FifoQueue: a FIFO queue is created with FifoQueue=true and a name ending in .fifo; a standard queue name cannot end in .fifo")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if q, ok := s.queues[name]; ok {
		if !q.equalAttrs(attrs) {
			return nil, errQueueNameExists(name)
		}
		return &sqs.CreateQueueOutput{QueueUrl: aws.String(q.url)}, nil
	}
	if at, ok := s.deletedAt[name]; ok && now.Sub(at) < queueDeleteCooldown {
		return nil, errQueueDeletedRecently()
	}
	q := &queue{
		name: name, url: s.queueURL(name), arn: s.queueArn(name), fifo: fifo,
		created: now, modified: now, attrs: defaultAttrs(fifo), tags: maps.Clone(tags),
		bySeq: map[uint64]*message{}, dedup: map[string]dedupEntry{}, attempts: map[string]*attempt{},
	}
	if err := q.attrs.apply(attrs, fifo, true, s.lookupArn); err != nil {
		return nil, err
	}
	s.queues[name] = q
	return &sqs.CreateQueueOutput{QueueUrl: aws.String(q.url)}, nil
}

// GetQueueUrl returns the URL of a queue by name.
func (c *Client) GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, _ ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error) {
	const op = "GetQueueUrl"
	if in == nil || in.QueueName == nil {
		return nil, opError(op, errMissingParameter("QueueName"))
	}
	if _, err := c.s.begin(ctx, op, nil); err != nil {
		return nil, err
	}
	if in.QueueOwnerAWSAccountId != nil && *in.QueueOwnerAWSAccountId != c.s.opts.AccountID {
		return nil, opError(op, errQueueDoesNotExist())
	}
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	q, ok := c.s.queues[*in.QueueName]
	if !ok {
		return nil, opError(op, errQueueDoesNotExist())
	}
	return &sqs.GetQueueUrlOutput{QueueUrl: aws.String(q.url)}, nil
}

// GetQueueAttributes returns the named attributes, or all of them for "All".
func (c *Client) GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, _ ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	const op = "GetQueueAttributes"
	if in == nil {
		return nil, opError(op, errMissingParameter("QueueUrl"))
	}
	if _, err := c.s.begin(ctx, op, in.QueueUrl); err != nil {
		return nil, err
	}
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	q, err := c.s.lookup(in.QueueUrl)
	if err != nil {
		return nil, opError(op, err)
	}
	now := c.s.now()
	q.expire(now)
	all := q.attributes(now)
	out := map[string]string{}
	for _, n := range in.AttributeNames {
		name := string(n)
		if name == "All" {
			maps.Copy(out, all)
			continue
		}
		if !isQueueAttributeName(name) {
			return nil, opError(op, errInvalidAttributeName(name))
		}
		if v, ok := all[name]; ok {
			out[name] = v
		}
	}
	return &sqs.GetQueueAttributesOutput{Attributes: out}, nil
}

// SetQueueAttributes changes settable attributes.
func (c *Client) SetQueueAttributes(ctx context.Context, in *sqs.SetQueueAttributesInput, _ ...func(*sqs.Options)) (*sqs.SetQueueAttributesOutput, error) {
	const op = "SetQueueAttributes"
	if in == nil {
		return nil, opError(op, errMissingParameter("QueueUrl"))
	}
	if _, err := c.s.begin(ctx, op, in.QueueUrl); err != nil {
		return nil, err
	}
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	q, err := c.s.lookup(in.QueueUrl)
	if err != nil {
		return nil, opError(op, err)
	}
	attrs := q.attrs
	attrs.passthrough = maps.Clone(q.attrs.passthrough)
	if err := attrs.apply(in.Attributes, q.fifo, false, c.s.lookupArn); err != nil {
		return nil, opError(op, err)
	}
	q.attrs = attrs
	q.nextExpiry = time.Time{} // a shorter retention may expire messages now
	q.modified = c.s.now()
	c.s.notify() // a shorter delay can make messages receivable
	return &sqs.SetQueueAttributesOutput{}, nil
}

// DeleteQueue deletes a queue and its messages. The name cannot be reused for
// 60 seconds.
func (c *Client) DeleteQueue(ctx context.Context, in *sqs.DeleteQueueInput, _ ...func(*sqs.Options)) (*sqs.DeleteQueueOutput, error) {
	const op = "DeleteQueue"
	if in == nil {
		return nil, opError(op, errMissingParameter("QueueUrl"))
	}
	if _, err := c.s.begin(ctx, op, in.QueueUrl); err != nil {
		return nil, err
	}
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	q, err := c.s.lookup(in.QueueUrl)
	if err != nil {
		return nil, opError(op, err)
	}
	delete(c.s.queues, q.name)
	c.s.deletedAt[q.name] = c.s.now()
	c.s.notify() // long polls on the queue end
	return &sqs.DeleteQueueOutput{}, nil
}

// PurgeQueue deletes every message, in flight or not. A second purge within
// 60 seconds fails with PurgeQueueInProgress.
func (c *Client) PurgeQueue(ctx context.Context, in *sqs.PurgeQueueInput, _ ...func(*sqs.Options)) (*sqs.PurgeQueueOutput, error) {
	const op = "PurgeQueue"
	if in == nil {
		return nil, opError(op, errMissingParameter("QueueUrl"))
	}
	if _, err := c.s.begin(ctx, op, in.QueueUrl); err != nil {
		return nil, err
	}
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	q, err := c.s.lookup(in.QueueUrl)
	if err != nil {
		return nil, opError(op, err)
	}
	now := c.s.now()
	if !q.lastPurge.IsZero() && now.Sub(q.lastPurge) < purgeCooldown {
		return nil, opError(op, errPurgeInProgress())
	}
	q.lastPurge = now
	for _, m := range q.messages {
		m.deleted = true
	}
	q.compact(true)
	q.attempts = map[string]*attempt{}
	return &sqs.PurgeQueueOutput{}, nil
}

// ListQueues lists queue URLs by name prefix, paginated when MaxResults is set.
func (c *Client) ListQueues(ctx context.Context, in *sqs.ListQueuesInput, _ ...func(*sqs.Options)) (*sqs.ListQueuesOutput, error) {
	const op = "ListQueues"
	if in == nil {
		in = &sqs.ListQueuesInput{}
	}
	if _, err := c.s.begin(ctx, op, nil); err != nil {
		return nil, err
	}
	c.s.mu.Lock()
	var urls []string
	for name, q := range c.s.queues {
		if strings.HasPrefix(name, aws.ToString(in.QueueNamePrefix)) {
			urls = append(urls, q.url)
		}
	}
	c.s.mu.Unlock()
	slices.Sort(urls)
	urls, next, err := paginate(urls, in.MaxResults, in.NextToken)
	if err != nil {
		return nil, opError(op, err)
	}
	return &sqs.ListQueuesOutput{QueueUrls: urls, NextToken: next}, nil
}

// ListDeadLetterSourceQueues lists the queues whose redrive policy targets
// the given queue.
func (c *Client) ListDeadLetterSourceQueues(ctx context.Context, in *sqs.ListDeadLetterSourceQueuesInput, _ ...func(*sqs.Options)) (*sqs.ListDeadLetterSourceQueuesOutput, error) {
	const op = "ListDeadLetterSourceQueues"
	if in == nil {
		return nil, opError(op, errMissingParameter("QueueUrl"))
	}
	if _, err := c.s.begin(ctx, op, in.QueueUrl); err != nil {
		return nil, err
	}
	c.s.mu.Lock()
	dlq, err := c.s.lookup(in.QueueUrl)
	var urls []string
	if err == nil {
		for _, q := range c.s.queues {
			if q.attrs.redrive != nil && q.attrs.redrive.DeadLetterTargetArn == dlq.arn {
				urls = append(urls, q.url)
			}
		}
	}
	c.s.mu.Unlock()
	if err != nil {
		return nil, opError(op, err)
	}
	slices.Sort(urls)
	urls, next, err := paginate(urls, in.MaxResults, in.NextToken)
	if err != nil {
		return nil, opError(op, err)
	}
	return &sqs.ListDeadLetterSourceQueuesOutput{QueueUrls: urls, NextToken: next}, nil
}

// paginate pages a sorted list: without maxResults it returns up to 1000
// items and no token, as SQS does.
func paginate(items []string, maxResults *int32, token *string) ([]string, *string, error) {
	if maxResults == nil {
		if len(items) > 1000 {
			items = items[:1000]
		}
		return items, nil, nil
	}
	n := int(*maxResults)
	if n < 1 || n > 1000 {
		return nil, nil, errInvalidParameter("Value %d for parameter MaxResults is invalid. Reason: must be 1 to 1000.", n)
	}
	start := 0
	if t := aws.ToString(token); t != "" {
		var err error
		if start, err = strconv.Atoi(t); err != nil || start < 0 || start > len(items) {
			return nil, nil, errInvalidParameter("Invalid NextToken.")
		}
	}
	end := min(start+n, len(items))
	var next *string
	if end < len(items) {
		next = aws.String(strconv.Itoa(end))
	}
	return items[start:end], next, nil
}
