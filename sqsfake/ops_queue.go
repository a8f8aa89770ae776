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

// createQueue creates a queue, or returns the URL of an existing queue with
// the same name and attributes.
func (s *Server) createQueue(ctx context.Context, in *sqs.CreateQueueInput) (*sqs.CreateQueueOutput, error) {
	f, err := s.begin(ctx, "CreateQueue", "", in)
	if err != nil {
		return nil, err
	}
	if in.QueueName == nil {
		return nil, errMissingParameter("QueueName")
	}
	name := *in.QueueName
	if err := sqsrule.CheckQueueName(name); err != nil {
		return nil, fromViolation(err)
	}
	// A FIFO queue needs both the .fifo suffix and FifoQueue=true; any other
	// FifoQueue value on a standard queue is an unknown attribute.
	fifo := sqsrule.IsFIFO(name)
	if flag, _ := strconv.ParseBool(in.Attributes["FifoQueue"]); flag != fifo {
		return nil, errInvalidParameter("Invalid value for the parameter QueueName or FifoQueue: a FIFO queue is created with FifoQueue=true and a name ending in .fifo; a standard queue name cannot end in .fifo")
	}
	if len(in.Tags) > maxTags {
		return nil, errTooManyTags(name)
	}
	for k, v := range in.Tags {
		if err := checkTag(k, v); err != nil {
			return nil, err
		}
	}
	now := s.lock()
	defer s.mu.Unlock()
	if q, ok := s.queues[name]; ok {
		if !q.equalAttrs(in.Attributes) {
			return nil, errQueueNameExists(name)
		}
		return &sqs.CreateQueueOutput{QueueUrl: aws.String(s.queueURL(ctx, name))}, end(f)
	}
	if at, ok := s.deletedAt[name]; ok && now.Sub(at) < queueDeleteCooldown {
		return nil, errQueueDeletedRecently()
	}
	q := newQueue(s.nextSeq(), name, s.queueArn(name), fifo, now)
	if err := q.attrs.apply(in.Attributes, attrContext{arn: q.arn, fifo: fifo, creating: true, lookupArn: s.lookupArn}); err != nil {
		return nil, err
	}
	maps.Copy(q.tags, in.Tags)
	s.queues[name] = q
	return &sqs.CreateQueueOutput{QueueUrl: aws.String(s.queueURL(ctx, name))}, end(f)
}

// getQueueURL returns the URL of a queue by name.
func (s *Server) getQueueURL(ctx context.Context, in *sqs.GetQueueUrlInput) (*sqs.GetQueueUrlOutput, error) {
	f, err := s.begin(ctx, "GetQueueUrl", aws.ToString(in.QueueName), in)
	if err != nil {
		return nil, err
	}
	if in.QueueName == nil {
		return nil, errMissingParameter("QueueName")
	}
	if in.QueueOwnerAWSAccountId != nil && *in.QueueOwnerAWSAccountId != s.opts.AccountID {
		return nil, errQueueDoesNotExist()
	}
	s.lock()
	defer s.mu.Unlock()
	if _, ok := s.queues[*in.QueueName]; !ok {
		return nil, errQueueDoesNotExist()
	}
	return &sqs.GetQueueUrlOutput{QueueUrl: aws.String(s.queueURL(ctx, *in.QueueName))}, end(f)
}

// getQueueAttributes returns the named attributes, or all of them for "All".
func (s *Server) getQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput) (*sqs.GetQueueAttributesOutput, error) {
	f, err := s.begin(ctx, "GetQueueAttributes", queueNameOf(in.QueueUrl), in)
	if err != nil {
		return nil, err
	}
	now := s.lock()
	defer s.mu.Unlock()
	q, err := s.lookup(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	q.tick(now)
	all := q.attributes()
	var out map[string]string
	for _, n := range in.AttributeNames {
		name := string(n)
		if name != "All" && !isQueueAttributeName(name) {
			return nil, errInvalidAttributeName(name)
		}
		if out == nil {
			out = map[string]string{}
		}
		if name == "All" {
			maps.Copy(out, all)
		} else if v, ok := all[name]; ok {
			out[name] = v
		}
	}
	return &sqs.GetQueueAttributesOutput{Attributes: out}, end(f)
}

// setQueueAttributes changes settable attributes.
func (s *Server) setQueueAttributes(ctx context.Context, in *sqs.SetQueueAttributesInput) (*sqs.SetQueueAttributesOutput, error) {
	f, err := s.begin(ctx, "SetQueueAttributes", queueNameOf(in.QueueUrl), in)
	if err != nil {
		return nil, err
	}
	now := s.lock()
	defer s.mu.Unlock()
	q, err := s.lookup(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	if in.Attributes == nil {
		return nil, errMissingParameter("Attributes")
	}
	attrs := q.attrs
	attrs.passthrough = maps.Clone(q.attrs.passthrough)
	if err := attrs.apply(in.Attributes, attrContext{arn: q.arn, fifo: q.fifo, lookupArn: s.lookupArn}); err != nil {
		return nil, err
	}
	q.tick(now)
	if q.fifo && attrs.delay != q.attrs.delay {
		// On FIFO queues a new delay is retroactive: messages already
		// waiting take it (developer guide, delay queues).
		q.msgs.redelay(time.Duration(attrs.delay)*time.Second, now)
	}
	q.attrs = attrs
	q.tick(now) // a shorter retention may expire messages now
	q.modified = now
	s.notify() // a shorter delay can make messages receivable
	return &sqs.SetQueueAttributesOutput{}, end(f)
}

// deleteQueue deletes a queue and its messages. The name cannot be reused
// for 60 seconds.
func (s *Server) deleteQueue(ctx context.Context, in *sqs.DeleteQueueInput) (*sqs.DeleteQueueOutput, error) {
	f, err := s.begin(ctx, "DeleteQueue", queueNameOf(in.QueueUrl), in)
	if err != nil {
		return nil, err
	}
	now := s.lock()
	defer s.mu.Unlock()
	q, err := s.lookup(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	delete(s.queues, q.name)
	s.deletedAt[q.name] = now
	s.notify() // long polls on the queue end
	return &sqs.DeleteQueueOutput{}, end(f)
}

// purgeQueue deletes every message, in flight or not. A second purge within
// 60 seconds fails with PurgeQueueInProgress.
func (s *Server) purgeQueue(ctx context.Context, in *sqs.PurgeQueueInput) (*sqs.PurgeQueueOutput, error) {
	f, err := s.begin(ctx, "PurgeQueue", queueNameOf(in.QueueUrl), in)
	if err != nil {
		return nil, err
	}
	now := s.lock()
	defer s.mu.Unlock()
	q, err := s.lookup(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	if !q.lastPurge.IsZero() && now.Sub(q.lastPurge) < purgeCooldown {
		return nil, errPurgeInProgress()
	}
	q.lastPurge = now
	q.purge()
	return &sqs.PurgeQueueOutput{}, end(f)
}

// listQueues lists queue URLs by name prefix, paginated when MaxResults is
// set.
func (s *Server) listQueues(ctx context.Context, in *sqs.ListQueuesInput) (*sqs.ListQueuesOutput, error) {
	f, err := s.begin(ctx, "ListQueues", "", in)
	if err != nil {
		return nil, err
	}
	s.lock()
	var names []string
	for name := range s.queues {
		if strings.HasPrefix(name, aws.ToString(in.QueueNamePrefix)) {
			names = append(names, name)
		}
	}
	s.mu.Unlock()
	slices.Sort(names)
	names, next, err := paginate(names, in.MaxResults, in.NextToken)
	if err != nil {
		return nil, err
	}
	return &sqs.ListQueuesOutput{QueueUrls: s.queueURLs(ctx, names), NextToken: next}, end(f)
}

// listDeadLetterSourceQueues lists the queues whose redrive policy targets
// the given queue.
func (s *Server) listDeadLetterSourceQueues(ctx context.Context, in *sqs.ListDeadLetterSourceQueuesInput) (*sqs.ListDeadLetterSourceQueuesOutput, error) {
	f, err := s.begin(ctx, "ListDeadLetterSourceQueues", queueNameOf(in.QueueUrl), in)
	if err != nil {
		return nil, err
	}
	s.lock()
	dlq, err := s.lookup(in.QueueUrl)
	var names []string
	if err == nil {
		names = s.sourcesOf(dlq)
	}
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	names, next, err := paginate(names, in.MaxResults, in.NextToken)
	if err != nil {
		return nil, err
	}
	urls := s.queueURLs(ctx, names)
	if urls == nil {
		urls = []string{} // a required member: SQS sends an empty list
	}
	return &sqs.ListDeadLetterSourceQueuesOutput{QueueUrls: urls, NextToken: next}, end(f)
}

// sourcesOf returns the sorted names of the queues whose redrive policy
// targets dlq. Callers hold s.mu.
func (s *Server) sourcesOf(dlq *queue) []string {
	var names []string
	for _, q := range s.queues {
		if q.attrs.redrive != nil && q.attrs.redrive.DeadLetterTargetArn == dlq.arn {
			names = append(names, q.name)
		}
	}
	slices.Sort(names)
	return names
}

func (s *Server) queueURLs(ctx context.Context, names []string) []string {
	if len(names) == 0 {
		return nil
	}
	urls := make([]string, len(names))
	for i, n := range names {
		urls[i] = s.queueURL(ctx, n)
	}
	return urls
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
