package sqstest

import (
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
)

func (e *env) arn(t caseT, url string) string {
	t.Helper()
	return e.attrs(t, url, types.QueueAttributeNameQueueArn)["QueueArn"]
}

// deadLettered makes a source queue whose n messages ("m0" …) sit in its
// dead-letter queue, and returns both URLs and the messages' original ids.
func (e *env) deadLettered(t caseT, n int) (src, dlq string, ids []string) {
	t.Helper()
	dlq = e.queue(t, nil)
	src = e.queue(t, map[string]string{"RedrivePolicy": redrivePolicy(t, e, dlq, 1)})
	for i := range n {
		ids = append(ids, aws.ToString(e.send(t, src, "m"+strconv.Itoa(i)).MessageId))
	}
	for got := 0; got < n; {
		msgs := e.receive(t, src, visibility(1))
		if len(msgs) == 0 {
			t.Fatalf("expect %d messages to receive once, got %d", n, got)
		}
		got += len(msgs)
	}
	e.advance(seconds(1.2))
	for range 20 {
		e.receive(t, src) // receives past maxReceiveCount move the messages
		if v, _, _ := e.counts(t, dlq); v == n {
			return src, dlq, ids
		}
	}
	t.Fatalf("expect %d messages in the dead-letter queue", n)
	return
}

func (e *env) startMove(t caseT, in *sqs.StartMessageMoveTaskInput) string {
	t.Helper()
	out, err := e.api.StartMessageMoveTask(e.ctx(), in)
	if err != nil {
		t.Fatalf("start move task: %v", err)
	}
	return aws.ToString(out.TaskHandle)
}

func (e *env) moveTasks(t caseT, sourceArn string, max int32) []types.ListMessageMoveTasksResultEntry {
	t.Helper()
	out, err := e.api.ListMessageMoveTasks(e.ctx(), &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(sourceArn), MaxResults: aws.Int32(max)})
	if err != nil {
		t.Fatalf("list move tasks: %v", err)
	}
	return out.Results
}

// awaitMove lets time pass until the source's latest task has the status.
func (e *env) awaitMove(t caseT, sourceArn, status string) types.ListMessageMoveTasksResultEntry {
	t.Helper()
	for range 60 {
		if got := e.moveTasks(t, sourceArn, 1); len(got) == 1 && aws.ToString(got[0].Status) == status {
			return got[0]
		}
		e.advance(time.Second)
	}
	t.Fatalf("expect the move task to reach %s", status)
	return types.ListMessageMoveTasksResultEntry{}
}

// drainBodies receives and deletes everything visible, returning the bodies
// sorted.
func (e *env) drainBodies(t caseT, url string) []string {
	t.Helper()
	var out []string
	for range 50 {
		got := e.receive(t, url)
		if len(got) == 0 {
			break
		}
		for _, m := range got {
			out = append(out, aws.ToString(m.Body))
			e.delete(t, url, m)
		}
	}
	slices.Sort(out)
	return out
}

func caseMoveBackToOriginalSource(t caseT, e *env) {
	src, dlq, ids := e.deadLettered(t, 3)
	dlqArn := e.arn(t, dlq)
	e.startMove(t, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(dlqArn)})
	task := e.awaitMove(t, dlqArn, "COMPLETED")
	equal(t, "moved", int64(3), task.ApproximateNumberOfMessagesMoved)
	equal(t, "to move", int64(3), aws.ToInt64(task.ApproximateNumberOfMessagesToMove))
	equal(t, "destination (none given)", "", aws.ToString(task.DestinationArn))
	equal(t, "handle of a finished task", "", aws.ToString(task.TaskHandle))
	got := e.receive(t, src)
	for len(got) < 3 {
		more := e.receive(t, src)
		if len(more) == 0 {
			break
		}
		got = append(got, more...)
	}
	equal(t, "back in the source", 3, len(got))
	for _, m := range got {
		equal(t, "a moved message starts its receive count again", "1", m.Attributes["ApproximateReceiveCount"])
		if slices.Contains(ids, aws.ToString(m.MessageId)) {
			t.Fatalf("expect a moved message to get a new MessageId, got the original %s", aws.ToString(m.MessageId))
		}
	}
	v, f, _ := e.counts(t, dlq)
	equal(t, "left in the dead-letter queue", 0, v+f)
}

func caseMoveToADestination(t caseT, e *env) {
	src, dlq, _ := e.deadLettered(t, 2)
	dest := e.queue(t, nil)
	dlqArn, destArn := e.arn(t, dlq), e.arn(t, dest)
	e.startMove(t, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(dlqArn), DestinationArn: aws.String(destArn)})
	task := e.awaitMove(t, dlqArn, "COMPLETED")
	equal(t, "destination", destArn, aws.ToString(task.DestinationArn))
	equalSlices(t, "in the destination", []string{"m0", "m1"}, e.drainBodies(t, dest))
	equal(t, "in the source", 0, len(e.receive(t, src)))
}

func caseMoveRateLimitsProgress(t caseT, e *env) {
	_, dlq, _ := e.deadLettered(t, 5)
	dlqArn := e.arn(t, dlq)
	e.startMove(t, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(dlqArn), MaxNumberOfMessagesPerSecond: aws.Int32(1)})
	e.advance(2 * time.Second)
	task := e.moveTasks(t, dlqArn, 1)[0]
	equal(t, "status after 2 s", "RUNNING", aws.ToString(task.Status))
	equal(t, "moved after 2 s at 1/s", int64(2), task.ApproximateNumberOfMessagesMoved)
	equal(t, "rate", int32(1), aws.ToInt32(task.MaxNumberOfMessagesPerSecond))
	if aws.ToString(task.TaskHandle) == "" {
		t.Fatal("expect a running task to list its handle")
	}
	v, _, _ := e.counts(t, dlq)
	equal(t, "left in the dead-letter queue", 3, v)
	e.advance(3 * time.Second)
	equal(t, "status after 5 s", "COMPLETED", aws.ToString(e.moveTasks(t, dlqArn, 1)[0].Status))
}

func caseMoveCancelStopsMoving(t caseT, e *env) {
	src, dlq, _ := e.deadLettered(t, 3)
	dlqArn := e.arn(t, dlq)
	handle := e.startMove(t, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(dlqArn), MaxNumberOfMessagesPerSecond: aws.Int32(1)})
	e.advance(time.Second)
	out, err := e.api.CancelMessageMoveTask(e.ctx(), &sqs.CancelMessageMoveTaskInput{TaskHandle: aws.String(handle)})
	if err != nil {
		t.Fatalf("cancel: %v", err)
	}
	equal(t, "moved before the cancel", int64(1), out.ApproximateNumberOfMessagesMoved)
	e.advance(5 * time.Second)
	equal(t, "status", "CANCELLED", aws.ToString(e.moveTasks(t, dlqArn, 1)[0].Status))
	v, _, _ := e.counts(t, dlq)
	equal(t, "left in the dead-letter queue", 2, v)
	equal(t, "moved to the source", 1, len(e.receive(t, src)))
}

func caseMoveOneRunningTaskPerSource(t caseT, e *env) {
	_, dlq, _ := e.deadLettered(t, 3)
	dlqArn := e.arn(t, dlq)
	handle := e.startMove(t, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(dlqArn), MaxNumberOfMessagesPerSecond: aws.Int32(1)})
	_, err := e.api.StartMessageMoveTask(e.ctx(), &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(dlqArn)})
	if err == nil {
		t.Fatal("expect a second task on the same source to be refused")
	}
	if _, err := e.api.CancelMessageMoveTask(e.ctx(), &sqs.CancelMessageMoveTaskInput{TaskHandle: aws.String(handle)}); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	e.startMove(t, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(dlqArn)})
}

func caseMoveSourceMustBeADeadLetterQueue(t caseT, e *env) {
	plain := e.queue(t, nil)
	e.send(t, plain, "m")
	_, err := e.api.StartMessageMoveTask(e.ctx(), &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(e.arn(t, plain))})
	var apiErr smithy.APIError
	if err == nil || !errors.As(err, &apiErr) {
		t.Fatalf("expect an API error for a source that is no dead-letter queue, got %v", err)
	}
}

func caseMoveUnknownSource(t caseT, e *env) {
	url := e.queue(t, nil)
	arn := e.arn(t, url)
	if _, err := e.api.DeleteQueue(e.ctx(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}); err != nil {
		t.Fatalf("delete queue: %v", err)
	}
	_, err := e.api.StartMessageMoveTask(e.ctx(), &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(arn)})
	wantType[types.ResourceNotFoundException](t, err)
}

func caseMoveRateOutOfRange(t caseT, e *env) {
	_, dlq, _ := e.deadLettered(t, 1)
	for _, rate := range []int32{0, 501} {
		_, err := e.api.StartMessageMoveTask(e.ctx(), &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(e.arn(t, dlq)), MaxNumberOfMessagesPerSecond: aws.Int32(rate)})
		if err == nil {
			t.Fatalf("expect rate %d to be refused", rate)
		}
	}
}

func caseMoveListNewestFirst(t caseT, e *env) {
	src, dlq, _ := e.deadLettered(t, 1)
	dlqArn := e.arn(t, dlq)
	e.startMove(t, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(dlqArn)})
	e.awaitMove(t, dlqArn, "COMPLETED")
	dest := e.queue(t, nil)
	e.failTimes(t, src, 1)
	for range 20 {
		e.receive(t, src)
		if v, _, _ := e.counts(t, dlq); v == 1 {
			break
		}
	}
	e.startMove(t, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(dlqArn), DestinationArn: aws.String(e.arn(t, dest))})
	e.awaitMove(t, dlqArn, "COMPLETED")
	all := e.moveTasks(t, dlqArn, 10)
	equal(t, "tasks", 2, len(all))
	equal(t, "newest first", e.arn(t, dest), aws.ToString(all[0].DestinationArn))
	if all[0].StartedTimestamp < all[1].StartedTimestamp {
		t.Fatalf("expect newest first, got %d then %d", all[0].StartedTimestamp, all[1].StartedTimestamp)
	}
	equal(t, "default MaxResults", 1, len(e.moveTasks(t, dlqArn, 1)))
}

func caseMoveCancelUnknownTask(t caseT, e *env) {
	_, err := e.api.CancelMessageMoveTask(e.ctx(), &sqs.CancelMessageMoveTaskInput{TaskHandle: aws.String("bm90LWEtdGFzaw")})
	if err == nil {
		t.Fatal("expect an unknown task handle to be refused")
	}
}
