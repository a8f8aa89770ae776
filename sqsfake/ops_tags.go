package sqsfake

import (
	"context"
	"maps"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Tag limits from the SQS quotas page: a key of 1 to 128 characters, a value
// of up to 256, letters, digits, white space and _ . : / = + - @, and no
// reserved aws: prefix on either.
const (
	maxTagKeyLen   = 128
	maxTagValueLen = 256
	maxTags        = 50
)

func errTooManyTags(queue string) error {
	return errInvalidParameter("Too many tags added for queue %s.", queue)
}

func checkTag(key, value string) error {
	if n := utf8.RuneCountInString(key); n == 0 || n > maxTagKeyLen {
		return errInvalidParameter("Tag key %q must be 1 to %d characters.", key, maxTagKeyLen)
	}
	if n := utf8.RuneCountInString(value); n > maxTagValueLen {
		return errInvalidParameter("Tag value for key %q must be at most %d characters.", key, maxTagValueLen)
	}
	for _, s := range []string{key, value} {
		if len(s) >= 4 && strings.EqualFold(s[:4], "aws:") {
			return errInvalidParameter("Tag keys and values must not begin with the reserved prefix aws: (got %q).", s)
		}
		for _, r := range s {
			if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.IsSpace(r) && !strings.ContainsRune("_.:/=+-@", r) {
				return errInvalidParameter("Tag %q holds %q; tags may hold letters, digits, white space and _ . : / = + - @.", s, r)
			}
		}
	}
	return nil
}

// tagQueue adds or overwrites tags.
func (s *Server) tagQueue(ctx context.Context, in *sqs.TagQueueInput) (*sqs.TagQueueOutput, error) {
	f, err := s.begin(ctx, "TagQueue", queueNameOf(in.QueueUrl), in)
	if err != nil {
		return nil, err
	}
	if len(in.Tags) == 0 {
		return nil, errMissingParameter("Tags")
	}
	for k, v := range in.Tags {
		if err := checkTag(k, v); err != nil {
			return nil, err
		}
	}
	s.lock()
	defer s.mu.Unlock()
	q, err := s.lookup(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	n := len(q.tags)
	for k := range in.Tags {
		if _, ok := q.tags[k]; !ok {
			n++
		}
	}
	if n > maxTags {
		return nil, errTooManyTags(q.name)
	}
	maps.Copy(q.tags, in.Tags)
	return &sqs.TagQueueOutput{}, end(f)
}

// untagQueue removes tags by key; absent keys are ignored.
func (s *Server) untagQueue(ctx context.Context, in *sqs.UntagQueueInput) (*sqs.UntagQueueOutput, error) {
	f, err := s.begin(ctx, "UntagQueue", queueNameOf(in.QueueUrl), in)
	if err != nil {
		return nil, err
	}
	if len(in.TagKeys) == 0 {
		return nil, errMissingParameter("TagKeys")
	}
	s.lock()
	defer s.mu.Unlock()
	q, err := s.lookup(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	for _, k := range in.TagKeys {
		delete(q.tags, k)
	}
	return &sqs.UntagQueueOutput{}, end(f)
}

// listQueueTags returns a queue's tags.
func (s *Server) listQueueTags(ctx context.Context, in *sqs.ListQueueTagsInput) (*sqs.ListQueueTagsOutput, error) {
	f, err := s.begin(ctx, "ListQueueTags", queueNameOf(in.QueueUrl), in)
	if err != nil {
		return nil, err
	}
	s.lock()
	defer s.mu.Unlock()
	q, err := s.lookup(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	var tags map[string]string
	if len(q.tags) > 0 {
		tags = maps.Clone(q.tags)
	}
	return &sqs.ListQueueTagsOutput{Tags: tags}, end(f)
}
