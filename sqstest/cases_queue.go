package sqstest

import (
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

func caseQueueCreateAndGetURL(t caseT, e *env) {
	name := e.queueName("std")
	out, err := e.api.CreateQueue(e.ctx(), &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	t.Cleanup(func() { _, _ = e.api.DeleteQueue(e.ctx(), &sqs.DeleteQueueInput{QueueUrl: out.QueueUrl}) })
	got, err := e.api.GetQueueUrl(e.ctx(), &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatalf("get url: %v", err)
	}
	equal(t, "url", aws.ToString(out.QueueUrl), aws.ToString(got.QueueUrl))
	if !strings.HasSuffix(*got.QueueUrl, "/"+name) {
		t.Fatalf("expect url ending in /%s, got %s", name, *got.QueueUrl)
	}
}

func caseQueueCreateIsIdempotentWithSameAttributes(t caseT, e *env) {
	name := e.queueName("std")
	in := &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: map[string]string{"VisibilityTimeout": "45"}}
	first, err := e.api.CreateQueue(e.ctx(), in)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	t.Cleanup(func() { _, _ = e.api.DeleteQueue(e.ctx(), &sqs.DeleteQueueInput{QueueUrl: first.QueueUrl}) })
	second, err := e.api.CreateQueue(e.ctx(), in)
	if err != nil {
		t.Fatalf("create again: %v", err)
	}
	equal(t, "url", aws.ToString(first.QueueUrl), aws.ToString(second.QueueUrl))
}

func caseQueueCreateWithDifferentAttributesFails(t caseT, e *env) {
	name := e.queueName("std")
	first, err := e.api.CreateQueue(e.ctx(), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: map[string]string{"VisibilityTimeout": "45"}})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	t.Cleanup(func() { _, _ = e.api.DeleteQueue(e.ctx(), &sqs.DeleteQueueInput{QueueUrl: first.QueueUrl}) })
	_, err = e.api.CreateQueue(e.ctx(), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: map[string]string{"VisibilityTimeout": "60"}})
	wantType[types.QueueNameExists](t, err)
}

func caseQueueInvalidName(t caseT, e *env) {
	for _, name := range []string{"has space", "has.dot", strings.Repeat("a", 81)} {
		_, err := e.api.CreateQueue(e.ctx(), &sqs.CreateQueueInput{QueueName: aws.String(name)})
		e.wantCode(t, err, "InvalidParameterValue")
	}
}

func caseQueueFIFONeedsSuffixAndAttribute(t caseT, e *env) {
	_, err := e.api.CreateQueue(e.ctx(), &sqs.CreateQueueInput{QueueName: aws.String(e.queueName("nosuffix")), Attributes: map[string]string{"FifoQueue": "true"}})
	e.wantCode(t, err, "InvalidParameterValue")
}

func caseQueueMissingQueueIsTyped(t caseT, e *env) {
	_, err := e.api.GetQueueUrl(e.ctx(), &sqs.GetQueueUrlInput{QueueName: aws.String(e.queueName("missing"))})
	wantType[types.QueueDoesNotExist](t, err)
}

func caseQueueDefaultAttributes(t caseT, e *env) {
	a := e.attrs(t, e.queue(t, nil))
	for k, want := range map[string]string{
		"VisibilityTimeout": "30", "DelaySeconds": "0", "MessageRetentionPeriod": "345600",
		"ReceiveMessageWaitTimeSeconds": "0", "ApproximateNumberOfMessages": "0",
	} {
		equal(t, k, want, a[k])
	}
	if !strings.HasPrefix(a["QueueArn"], "arn:aws:sqs:") {
		t.Fatalf("expect a queue ARN, got %q", a["QueueArn"])
	}
	if a["MaximumMessageSize"] != "1048576" && a["MaximumMessageSize"] != "262144" {
		t.Fatalf("expect MaximumMessageSize 1048576 (262144 before August 2025), got %q", a["MaximumMessageSize"])
	}
}

func caseQueueSetAndGetAttributes(t caseT, e *env) {
	url := e.queue(t, nil)
	set := map[string]string{"VisibilityTimeout": "120", "DelaySeconds": "5", "ReceiveMessageWaitTimeSeconds": "3", "MessageRetentionPeriod": "3600", "MaximumMessageSize": "2048"}
	if _, err := e.api.SetQueueAttributes(e.ctx(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: set}); err != nil {
		t.Fatalf("set: %v", err)
	}
	a := e.attrs(t, url)
	for k, v := range set {
		equal(t, k, v, a[k])
	}
}

func caseQueueGetSelectedAttributes(t caseT, e *env) {
	a := e.attrs(t, e.queue(t, nil), types.QueueAttributeNameVisibilityTimeout)
	equal(t, "attribute count", 1, len(a))
	equal(t, "VisibilityTimeout", "30", a["VisibilityTimeout"])
}

func caseQueueInvalidAttributeValue(t caseT, e *env) {
	url := e.queue(t, nil)
	for k, v := range map[string]string{"VisibilityTimeout": "43201", "DelaySeconds": "901", "MessageRetentionPeriod": "59", "ReceiveMessageWaitTimeSeconds": "21", "MaximumMessageSize": "1023"} {
		_, err := e.api.SetQueueAttributes(e.ctx(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: map[string]string{k: v}})
		wantType[types.InvalidAttributeValue](t, err)
	}
}

func caseQueueUnknownAttributeName(t caseT, e *env) {
	_, err := e.api.SetQueueAttributes(e.ctx(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(e.queue(t, nil)), Attributes: map[string]string{"NoSuchAttribute": "1"}})
	wantType[types.InvalidAttributeName](t, err)
}

func caseQueueFIFOAttributesRefusedOnStandard(t caseT, e *env) {
	_, err := e.api.SetQueueAttributes(e.ctx(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(e.queue(t, nil)), Attributes: map[string]string{"ContentBasedDeduplication": "true"}})
	if err == nil {
		t.Fatal("expect an error setting ContentBasedDeduplication on a standard queue")
	}
}

func caseQueueListByPrefix(t caseT, e *env) {
	a, b := e.queue(t, nil), e.queue(t, nil)
	prefix := a[strings.LastIndex(a, "/")+1:]
	out, err := e.api.ListQueues(e.ctx(), &sqs.ListQueuesInput{QueueNamePrefix: aws.String(prefix)})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	found := map[string]bool{}
	for _, u := range out.QueueUrls {
		found[u[strings.LastIndex(u, "/")+1:]] = true
	}
	if !found[prefix] || found[b[strings.LastIndex(b, "/")+1:]] {
		t.Fatalf("expect only queues named %s*, got %v", prefix, out.QueueUrls)
	}
}

func caseQueueDeleteThenGone(t caseT, e *env) {
	url := e.queue(t, nil)
	if _, err := e.api.DeleteQueue(e.ctx(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}); err != nil {
		t.Fatalf("delete queue: %v", err)
	}
	_, err := e.api.SendMessage(e.ctx(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("x")})
	wantType[types.QueueDoesNotExist](t, err)
}

func caseQueueApproximateCounters(t caseT, e *env) {
	url := e.queue(t, nil)
	e.send(t, url, "visible")
	e.send(t, url, "in-flight")
	e.send(t, url, "delayed", func(in *sqs.SendMessageInput) { in.DelaySeconds = 60 })
	got := e.receive(t, url, maxMessages(1))
	equal(t, "received", 1, len(got))
	v, f, d := e.counts(t, url)
	equal(t, "visible", 1, v)
	equal(t, "not visible", 1, f)
	equal(t, "delayed", 1, d)
}

func caseQueuePurgeRemovesEverything(t caseT, e *env) {
	url := e.queue(t, nil)
	for _, b := range []string{"a", "b", "c"} {
		e.send(t, url, b)
	}
	e.receive(t, url, maxMessages(1))
	if _, err := e.api.PurgeQueue(e.ctx(), &sqs.PurgeQueueInput{QueueUrl: aws.String(url)}); err != nil {
		t.Fatalf("purge: %v", err)
	}
	v, f, _ := e.counts(t, url)
	equal(t, "visible + in flight", 0, v+f)
	equal(t, "received after purge", 0, len(e.receive(t, url)))
}

func caseQueuePurgeTwiceWithinAMinute(t caseT, e *env) {
	url := e.queue(t, nil)
	if _, err := e.api.PurgeQueue(e.ctx(), &sqs.PurgeQueueInput{QueueUrl: aws.String(url)}); err != nil {
		t.Fatalf("purge: %v", err)
	}
	_, err := e.api.PurgeQueue(e.ctx(), &sqs.PurgeQueueInput{QueueUrl: aws.String(url)})
	wantType[types.PurgeQueueInProgress](t, err)
}

func caseQueueFIFOFalseOnStandardIsUnknownAttribute(t caseT, e *env) {
	// Code that writes FifoQueue=strconv.FormatBool(isFifo) fails in
	// production: SQS knows the attribute only on FIFO queues.
	out, err := e.api.CreateQueue(e.ctx(), &sqs.CreateQueueInput{QueueName: aws.String(e.queueName("std")), Attributes: map[string]string{"FifoQueue": "false"}})
	if err == nil {
		_, _ = e.api.DeleteQueue(e.ctx(), &sqs.DeleteQueueInput{QueueUrl: out.QueueUrl})
	}
	wantType[types.InvalidAttributeName](t, err)
}

func caseQueueFIFONameNeedsFIFOAttribute(t caseT, e *env) {
	out, err := e.api.CreateQueue(e.ctx(), &sqs.CreateQueueInput{QueueName: aws.String(e.queueName("noattr.fifo"))})
	if err == nil {
		_, _ = e.api.DeleteQueue(e.ctx(), &sqs.DeleteQueueInput{QueueUrl: out.QueueUrl})
	}
	e.wantCode(t, err, "InvalidParameterValue")
}

func caseQueueRecreatedQueueNeverHonoursOldReceiptHandles(t caseT, e *env) {
	name := e.queueName("again")
	create := func() string {
		out, err := e.api.CreateQueue(e.ctx(), &sqs.CreateQueueInput{QueueName: aws.String(name)})
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		return *out.QueueUrl
	}
	url := create()
	e.send(t, url, "old")
	old := e.receive(t, url)
	equal(t, "received from the first queue", 1, len(old))
	if _, err := e.api.DeleteQueue(e.ctx(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}); err != nil {
		t.Fatalf("delete queue: %v", err)
	}
	e.advance(61 * time.Second)
	url = create()
	t.Cleanup(func() { _, _ = e.api.DeleteQueue(e.ctx(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}) })
	e.send(t, url, "new")
	fresh := e.receive(t, url, visibility(1))
	equal(t, "received from the new queue", 1, len(fresh))
	if aws.ToString(fresh[0].ReceiptHandle) == aws.ToString(old[0].ReceiptHandle) {
		t.Fatal("expect receipt handles never to repeat across queues of one name")
	}
	_, _ = e.api.DeleteMessage(e.ctx(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: old[0].ReceiptHandle})
	e.advance(2 * time.Second)
	equalSlices(t, "the new message survives a delete with the old handle", []string{"new"}, bodies(e.receive(t, url)))
}

func caseQueueDeletedNameCooldown(t caseT, e *env) {
	name := e.queueName("cool")
	out, err := e.api.CreateQueue(e.ctx(), &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if _, err := e.api.DeleteQueue(e.ctx(), &sqs.DeleteQueueInput{QueueUrl: out.QueueUrl}); err != nil {
		t.Fatalf("delete queue: %v", err)
	}
	again, err := e.api.CreateQueue(e.ctx(), &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err == nil {
		_, _ = e.api.DeleteQueue(e.ctx(), &sqs.DeleteQueueInput{QueueUrl: again.QueueUrl})
	}
	wantType[types.QueueDeletedRecently](t, err)
}

func caseQueueUnknownAttributeInGet(t caseT, e *env) {
	_, err := e.api.GetQueueAttributes(e.ctx(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(e.queue(t, nil)), AttributeNames: []types.QueueAttributeName{"NoSuchAttribute"}})
	wantType[types.InvalidAttributeName](t, err)
}

func caseQueueListPaginates(t caseT, e *env) {
	a := e.queue(t, nil)
	prefix := a[strings.LastIndex(a, "/")+1:]
	for _, suffix := range []string{"-x", "-y"} {
		name := prefix + suffix
		out, err := e.api.CreateQueue(e.ctx(), &sqs.CreateQueueInput{QueueName: aws.String(name)})
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		t.Cleanup(func() { _, _ = e.api.DeleteQueue(e.ctx(), &sqs.DeleteQueueInput{QueueUrl: out.QueueUrl}) })
	}
	var all []string
	var token *string
	for page := 0; ; page++ {
		out, err := e.api.ListQueues(e.ctx(), &sqs.ListQueuesInput{QueueNamePrefix: aws.String(prefix), MaxResults: aws.Int32(2), NextToken: token})
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		if len(out.QueueUrls) > 2 {
			t.Fatalf("expect at most 2 per page, got %d", len(out.QueueUrls))
		}
		all = append(all, out.QueueUrls...)
		if token = out.NextToken; token == nil || page > 5 {
			break
		}
	}
	equal(t, "queues over the pages", 3, len(all))
}

func caseQueueTimestamps(t caseT, e *env) {
	url := e.queue(t, nil)
	a := e.attrs(t, url)
	created, err1 := strconv.ParseInt(a["CreatedTimestamp"], 10, 64)
	modified, err2 := strconv.ParseInt(a["LastModifiedTimestamp"], 10, 64)
	if err1 != nil || err2 != nil || created <= 0 || modified < created {
		t.Fatalf("expect epoch seconds with LastModified >= Created, got %q and %q", a["CreatedTimestamp"], a["LastModifiedTimestamp"])
	}
}

func caseQueuePolicyMustBeJSON(t caseT, e *env) {
	url := e.queue(t, nil)
	_, err := e.api.SetQueueAttributes(e.ctx(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: map[string]string{"Policy": "allow everyone"}})
	wantType[types.InvalidAttributeValue](t, err)
	arn := e.arn(t, url)
	policy := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"*"},"Action":"sqs:SendMessage","Resource":"` + arn + `"}]}`
	if _, err := e.api.SetQueueAttributes(e.ctx(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: map[string]string{"Policy": policy}}); err != nil {
		t.Fatalf("expect a JSON policy to be accepted: %v", err)
	}
	if e.attrs(t, url, types.QueueAttributeNamePolicy)["Policy"] == "" {
		t.Fatal("expect the policy to be readable")
	}
}

func caseQueueKMSDataKeyReusePeriodRange(t caseT, e *env) {
	url := e.queue(t, nil)
	for _, v := range []string{"59", "86401", "five"} {
		_, err := e.api.SetQueueAttributes(e.ctx(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: map[string]string{"KmsDataKeyReusePeriodSeconds": v}})
		wantType[types.InvalidAttributeValue](t, err)
	}
	if _, err := e.api.SetQueueAttributes(e.ctx(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: map[string]string{"KmsDataKeyReusePeriodSeconds": "600"}}); err != nil {
		t.Fatalf("expect 600 s to be accepted: %v", err)
	}
}

func caseQueueDeleteMissingQueueIsTyped(t caseT, e *env) {
	url := e.queue(t, nil)
	if _, err := e.api.DeleteQueue(e.ctx(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}); err != nil {
		t.Fatalf("delete queue: %v", err)
	}
	_, err := e.api.DeleteQueue(e.ctx(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
	wantType[types.QueueDoesNotExist](t, err)
}

func caseQueueApproximateCountersFIFO(t caseT, e *env) {
	url := e.fifo(t, nil)
	e.sendFIFO(t, url, "a", "a1")
	e.sendFIFO(t, url, "a", "a2")
	e.sendFIFO(t, url, "b", "b1")
	equal(t, "received", 1, len(e.receive(t, url, maxMessages(1))))
	v, f, _ := e.counts(t, url)
	equal(t, "visible (a locked group's messages count)", 2, v)
	equal(t, "not visible", 1, f)
}

func caseQueueListDeadLetterSourceQueues(t caseT, e *env) {
	dlq := e.queue(t, nil)
	src := e.queue(t, map[string]string{"RedrivePolicy": redrivePolicy(t, e, dlq, 3)})
	e.queue(t, nil)
	out, err := e.api.ListDeadLetterSourceQueues(e.ctx(), &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: aws.String(dlq)})
	if err != nil {
		t.Fatalf("list sources: %v", err)
	}
	equalSlices(t, "sources", []string{src}, out.QueueUrls)
}

func caseQueueNameAcceptedAsQueueURL(t caseT, e *env) {
	url := e.queue(t, nil)
	name := url[strings.LastIndex(url, "/")+1:]
	if _, err := e.api.SendMessage(e.ctx(), &sqs.SendMessageInput{QueueUrl: aws.String(name), MessageBody: aws.String("by name")}); err != nil {
		t.Fatalf("send with the queue name %q as QueueUrl: expect SQS to resolve it, got %v", name, err)
	}
	equalSlices(t, "received by URL", []string{"by name"}, bodies(e.receive(t, url)))
}

func caseQueueCreateIdempotentAcrossJSONSpellings(t caseT, e *env) {
	dlq := e.queue(t, nil)
	arn := e.attrs(t, dlq, "QueueArn")["QueueArn"]
	name := e.queueName("src")
	spellings := []string{
		`{"deadLetterTargetArn":"` + arn + `","maxReceiveCount":5}`,
		`{"deadLetterTargetArn": "` + arn + `", "maxReceiveCount": "5"}`, // Python's json.dumps, count as a string
		`{"maxReceiveCount":"5","deadLetterTargetArn":"` + arn + `"}`,
	}
	var first string
	for i, p := range spellings {
		out, err := e.api.CreateQueue(e.ctx(), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: map[string]string{"RedrivePolicy": p}})
		if err != nil {
			t.Fatalf("create #%d with RedrivePolicy %s: expect the same queue, got %v", i+1, p, err)
		}
		if i == 0 {
			first = *out.QueueUrl
			t.Cleanup(func() { _, _ = e.api.DeleteQueue(e.ctx(), &sqs.DeleteQueueInput{QueueUrl: out.QueueUrl}) })
		}
		equal(t, "queue URL", first, *out.QueueUrl)
	}
}

func caseQueueEmptyPolicyRemovesIt(t caseT, e *env) {
	url := e.queue(t, nil)
	arn := e.attrs(t, url, "QueueArn")["QueueArn"]
	policy := `{"Version":"2012-10-17","Statement":[{"Sid":"s","Effect":"Allow","Principal":{"AWS":"*"},"Action":"sqs:SendMessage","Resource":"` + arn + `"}]}`
	for _, p := range []string{policy, ""} {
		if _, err := e.api.SetQueueAttributes(e.ctx(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: map[string]string{"Policy": p}}); err != nil {
			t.Fatalf("set Policy %q: %v", p, err)
		}
	}
	if p, ok := e.attrs(t, url, "Policy")["Policy"]; ok {
		t.Fatalf("expect no Policy after setting it to \"\", got %q", p)
	}
}

func caseQueueAddAndRemovePermission(t caseT, e *env) {
	url := e.queue(t, nil)
	add := &sqs.AddPermissionInput{QueueUrl: aws.String(url), Label: aws.String("partner-send"), AWSAccountIds: []string{"111122223333"}, Actions: []string{"SendMessage", "ReceiveMessage"}}
	if _, err := e.api.AddPermission(e.ctx(), add); err != nil {
		t.Fatalf("add permission: %v", err)
	}
	p := e.attrs(t, url, "Policy")["Policy"]
	for _, want := range []string{`"partner-send"`, "111122223333", "SendMessage", "ReceiveMessage"} {
		if !strings.Contains(p, want) {
			t.Fatalf("expect the policy to hold %s, got %s", want, p)
		}
	}
	_, err := e.api.AddPermission(e.ctx(), add)
	e.wantCode(t, err, "InvalidParameterValue") // the label exists
	if _, err := e.api.RemovePermission(e.ctx(), &sqs.RemovePermissionInput{QueueUrl: aws.String(url), Label: aws.String("partner-send")}); err != nil {
		t.Fatalf("remove permission: %v", err)
	}
	if p, ok := e.attrs(t, url, "Policy")["Policy"]; ok && strings.Contains(p, "partner-send") {
		t.Fatalf("expect the statement gone, got %s", p)
	}
	_, err = e.api.RemovePermission(e.ctx(), &sqs.RemovePermissionInput{QueueUrl: aws.String(url), Label: aws.String("partner-send")})
	e.wantCode(t, err, "InvalidParameterValue") // no such label
}
