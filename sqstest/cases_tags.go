package sqstest

import (
	"errors"
	"fmt"
	"maps"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
)

func (e *env) tags(t caseT, url string) map[string]string {
	t.Helper()
	out, err := e.api.ListQueueTags(e.ctx(), &sqs.ListQueueTagsInput{QueueUrl: aws.String(url)})
	if err != nil {
		t.Fatalf("list tags: %v", err)
	}
	return out.Tags
}

func equalMaps(t caseT, what string, want, got map[string]string) {
	t.Helper()
	if !maps.Equal(want, got) {
		t.Fatalf("%s: expect %v, got %v", what, want, got)
	}
}

func caseTagsGivenAtCreationAreReadable(t caseT, e *env) {
	name := e.queueName("tagged")
	out, err := e.api.CreateQueue(e.ctx(), &sqs.CreateQueueInput{QueueName: aws.String(name), Tags: map[string]string{"team": "payments", "env": "test"}})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	t.Cleanup(func() { _, _ = e.api.DeleteQueue(e.ctx(), &sqs.DeleteQueueInput{QueueUrl: out.QueueUrl}) })
	equalMaps(t, "tags", map[string]string{"team": "payments", "env": "test"}, e.tags(t, *out.QueueUrl))
}

func caseTagsTagUntagList(t caseT, e *env) {
	url := e.queue(t, nil)
	equal(t, "tags of a new queue", 0, len(e.tags(t, url)))
	if _, err := e.api.TagQueue(e.ctx(), &sqs.TagQueueInput{QueueUrl: aws.String(url), Tags: map[string]string{"a": "1", "b": "2", "c": "3"}}); err != nil {
		t.Fatalf("tag: %v", err)
	}
	equalMaps(t, "after tagging", map[string]string{"a": "1", "b": "2", "c": "3"}, e.tags(t, url))
	if _, err := e.api.UntagQueue(e.ctx(), &sqs.UntagQueueInput{QueueUrl: aws.String(url), TagKeys: []string{"a", "absent"}}); err != nil {
		t.Fatalf("untag: %v", err)
	}
	equalMaps(t, "after untagging", map[string]string{"b": "2", "c": "3"}, e.tags(t, url))
}

func caseTagsSameKeyOverwrites(t caseT, e *env) {
	url := e.queue(t, nil)
	for _, v := range []string{"old", "new"} {
		if _, err := e.api.TagQueue(e.ctx(), &sqs.TagQueueInput{QueueUrl: aws.String(url), Tags: map[string]string{"k": v}}); err != nil {
			t.Fatalf("tag: %v", err)
		}
	}
	equalMaps(t, "tags", map[string]string{"k": "new"}, e.tags(t, url))
}

func caseTagsReservedPrefixRefused(t caseT, e *env) {
	url := e.queue(t, nil)
	for _, tags := range []map[string]string{{"aws:owner": "me"}, {"AWS:owner": "me"}, {"owner": "aws:me"}} {
		if _, err := e.api.TagQueue(e.ctx(), &sqs.TagQueueInput{QueueUrl: aws.String(url), Tags: tags}); err == nil {
			t.Fatalf("expect tags %v to be refused", tags)
		}
	}
	_, err := e.api.CreateQueue(e.ctx(), &sqs.CreateQueueInput{QueueName: aws.String(e.queueName("reserved")), Tags: map[string]string{"aws:x": "y"}})
	if err == nil {
		t.Fatal("expect a reserved tag at creation to be refused")
	}
	equal(t, "tags after the refusals", 0, len(e.tags(t, url)))
}

func caseTagsMissingQueueIsTyped(t caseT, e *env) {
	url := e.queue(t, nil)
	if _, err := e.api.DeleteQueue(e.ctx(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}); err != nil {
		t.Fatalf("delete queue: %v", err)
	}
	_, err := e.api.ListQueueTags(e.ctx(), &sqs.ListQueueTagsInput{QueueUrl: aws.String(url)})
	wantType[types.QueueDoesNotExist](t, err)
}

func caseTagsAtMost50(t caseT, e *env) {
	url := e.queue(t, nil)
	tags := map[string]string{}
	for i := range 50 {
		tags[fmt.Sprintf("k%02d", i)] = "v"
	}
	if _, err := e.api.TagQueue(e.ctx(), &sqs.TagQueueInput{QueueUrl: aws.String(url), Tags: tags}); err != nil {
		t.Fatalf("tag with 50: %v", err)
	}
	_, err := e.api.TagQueue(e.ctx(), &sqs.TagQueueInput{QueueUrl: aws.String(url), Tags: map[string]string{"one-more": "v"}})
	e.wantCode(t, err, "InvalidParameterValue")
	equal(t, "tags kept", 50, len(e.tags(t, url)))
}

func caseTagsEmptyTagAndUntagRefused(t caseT, e *env) {
	url := e.queue(t, nil)
	_, err := e.api.TagQueue(e.ctx(), &sqs.TagQueueInput{QueueUrl: aws.String(url), Tags: map[string]string{}})
	wantClientError(t, "TagQueue with no tags", err)
	_, err = e.api.UntagQueue(e.ctx(), &sqs.UntagQueueInput{QueueUrl: aws.String(url), TagKeys: []string{}})
	wantClientError(t, "UntagQueue with no keys", err)
}

// wantClientError fails unless err is a service error of the sender's
// fault: the request was refused, whatever the code.
func wantClientError(t caseT, what string, err error) {
	t.Helper()
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorFault() == smithy.FaultServer {
		t.Fatalf("%s: expect the request refused, got %v", what, err)
	}
}
