package sqsfake

import (
	"context"
	"encoding/base64"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Message move tasks (StartMessageMoveTask, ListMessageMoveTasks,
// CancelMessageMoveTask) are SQS's own dead-letter queue redrive. sqsfake
// runs them on the server's clock without a goroutine: every call first
// moves what each running task's rate allows by now, and a long poll sleeps
// no later than a task's next move. A task moves its source's messages in
// delivery order, as new messages (new MessageId, receive count 0, the
// destination's own delay; on FIFO the group kept and the MessageId as
// deduplication id), to DestinationArn or, without one, to the queue each
// message was dead-lettered from (its DeadLetterQueueSourceArn).

const (
	maxMoveRate     = 500 // messages per second, the documented maximum
	defaultMoveRate = maxMoveRate
	moveHistory     = 10 // tasks ListMessageMoveTasks can return per source
)

// Task statuses, as SQS names them.
const (
	taskRunning   = "RUNNING"
	taskCompleted = "COMPLETED"
	taskCancelled = "CANCELLED"
	taskFailed    = "FAILED"
)

type moveTasks struct {
	bySource map[string][]*moveTask // source ARN → its latest tasks, oldest first
	running  []*moveTask
}

type moveTask struct {
	handle    string
	sourceArn string
	sourceID  uint64 // the source queue's incarnation: a queue created again under its name is another queue
	destArn   string // "" sends each message back to its DeadLetterQueueSourceArn
	rate      int    // messages per second
	rateGiven bool
	started   time.Time
	toMove    int64
	moved     int64
	status    string
	failure   string
}

// due is how many messages the task may have moved by now: rate per second
// since it started, counted in whole microseconds.
func (t *moveTask) due(now time.Time) int64 {
	n := int64(now.Sub(t.started)/time.Microsecond) * int64(t.rate) / 1_000_000
	return min(n, t.toMove)
}

// dueAt is the first time due reaches k.
func (t *moveTask) dueAt(k int64) time.Time {
	rate := int64(t.rate)
	micros := (k*1_000_000 + rate - 1) / rate // rounded up, so due(dueAt(k)) >= k
	return t.started.Add(time.Duration(micros) * time.Microsecond)
}

// runMoveTasks moves what each running task's rate allows by now. Callers
// hold s.mu.
func (s *Server) runMoveTasks(now time.Time) {
	if len(s.tasks.running) == 0 {
		return
	}
	moved := false
	for _, t := range s.tasks.running {
		moved = s.advanceTask(t, now) || moved
	}
	s.tasks.running = slices.DeleteFunc(s.tasks.running, func(t *moveTask) bool { return t.status != taskRunning })
	if moved {
		s.notify()
	}
}

// advanceTask moves t's due messages and settles its status. It reports
// whether it moved anything.
func (s *Server) advanceTask(t *moveTask, now time.Time) bool {
	src, ok := s.lookupArn(t.sourceArn)
	if !ok || src.id != t.sourceID {
		t.status, t.failure = taskFailed, "The source queue "+t.sourceArn+" was deleted."
		return false
	}
	src.tick(now)
	moved := false
	if due := t.due(now); t.moved < due {
		p := src.msgs.picker()
		for t.moved < due {
			m := p.next()
			if m == nil {
				break
			}
			destArn := t.destArn
			if destArn == "" {
				destArn = m.sourceArn
			}
			if destArn == "" {
				t.status, t.failure = taskFailed, "Message "+m.id+" has no DeadLetterQueueSourceArn to go back to; start the task with a DestinationArn."
				break
			}
			dst, ok := s.lookupArn(destArn)
			if !ok {
				t.status, t.failure = taskFailed, "Message "+m.id+" cannot be moved: its destination queue "+destArn+" does not exist."
				break
			}
			src.msgs.remove(m)
			s.moveTo(dst, m, now)
			t.moved++
			moved = true
		}
		p.done()
	}
	if t.status == taskRunning && (t.moved >= t.toMove || src.msgs.len() == 0) {
		t.status = taskCompleted
	}
	return moved
}

// moveTo stores a copy of m in dst as a new message.
func (s *Server) moveTo(dst *queue, m *message, now time.Time) {
	nm := newMessage()
	nm.body, nm.attrs, nm.systemAttrs, nm.groupID = m.body, m.attrs, m.systemAttrs, m.groupID
	nm.md5Body, nm.md5Attrs = m.md5Body, m.md5Attrs
	nm.sentAt, nm.enqueuedAt = now, now
	nm.visibleAt = now.Add(time.Duration(dst.attrs.delay) * time.Second)
	seq := s.nextSeq()
	nm.id = messageID(seq)
	if dst.fifo {
		nm.dedupID = nm.id
	}
	dst.store(nm, seq, now)
}

// nextMoveTime returns when a running task can move its next message, or
// the zero time if none can before its source changes (a task behind its
// rate has nothing movable; a message coming back into view is the next
// change, and calls that change the source wake long polls themselves).
// Callers hold s.mu and have run the tasks to now.
func (s *Server) nextMoveTime(now time.Time) time.Time {
	var next time.Time
	for _, t := range s.tasks.running {
		at := t.dueAt(t.moved + 1)
		if !at.After(now) {
			if src, ok := s.lookupArn(t.sourceArn); ok && src.id == t.sourceID {
				at = src.msgs.next()
			}
		}
		if at.After(now) && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	return next
}

// startMessageMoveTask starts moving a dead-letter queue's messages.
func (s *Server) startMessageMoveTask(ctx context.Context, in *sqs.StartMessageMoveTaskInput) (*sqs.StartMessageMoveTaskOutput, error) {
	f, err := s.begin(ctx, "StartMessageMoveTask", queueNameOfArn(in.SourceArn), in)
	if err != nil {
		return nil, err
	}
	if in.SourceArn == nil {
		return nil, errMissingParameter("SourceArn")
	}
	rate := defaultMoveRate
	if in.MaxNumberOfMessagesPerSecond != nil {
		rate = int(*in.MaxNumberOfMessagesPerSecond)
		if rate < 1 || rate > maxMoveRate {
			return nil, errInvalidParameter("Value %d for parameter MaxNumberOfMessagesPerSecond is invalid. Reason: must be 1 to %d.", rate, maxMoveRate)
		}
	}
	now := s.lock()
	defer s.mu.Unlock()
	src, ok := s.lookupArn(*in.SourceArn)
	if !ok {
		return nil, errResourceNotFound("The resource that you specified for the SourceArn parameter doesn't exist.")
	}
	if len(s.sourcesOf(src)) == 0 {
		return nil, errInvalidParameter("Source queue %s must be configured as a dead-letter queue of another queue.", src.arn)
	}
	var destArn string
	if in.DestinationArn != nil {
		destArn = *in.DestinationArn
		dst, ok := s.lookupArn(destArn)
		switch {
		case !ok:
			return nil, errResourceNotFound("The resource that you specified for the DestinationArn parameter doesn't exist.")
		case dst == src:
			return nil, errInvalidParameter("The source and destination queues must differ.")
		case dst.fifo != src.fifo:
			return nil, errInvalidParameter("The source and destination queues must be of the same type (FIFO or standard).")
		}
	}
	for _, t := range s.tasks.running {
		if t.sourceArn == src.arn {
			return nil, errUnsupportedOperation("There is already a task running. Only one active task is allowed for a source queue at a given time.")
		}
	}
	src.tick(now)
	id := s.nextSeq()
	t := &moveTask{
		handle:    base64.RawURLEncoding.EncodeToString([]byte("sqsfake|task|" + strconv.FormatUint(id, 10) + "|" + src.arn)),
		sourceArn: src.arn, sourceID: src.id, destArn: destArn, rate: rate, rateGiven: in.MaxNumberOfMessagesPerSecond != nil,
		started: now, toMove: int64(src.msgs.len()), status: taskRunning,
	}
	if t.toMove == 0 {
		t.status = taskCompleted
	} else {
		s.tasks.running = append(s.tasks.running, t)
	}
	if s.tasks.bySource == nil {
		s.tasks.bySource = map[string][]*moveTask{}
	}
	history := append(s.tasks.bySource[src.arn], t)
	if len(history) > moveHistory {
		history = history[len(history)-moveHistory:]
	}
	s.tasks.bySource[src.arn] = history
	s.notify() // long polls sleep no later than the next move
	return &sqs.StartMessageMoveTaskOutput{TaskHandle: aws.String(t.handle)}, end(f)
}

// listMessageMoveTasks returns a source's most recent tasks, newest first.
func (s *Server) listMessageMoveTasks(ctx context.Context, in *sqs.ListMessageMoveTasksInput) (*sqs.ListMessageMoveTasksOutput, error) {
	f, err := s.begin(ctx, "ListMessageMoveTasks", queueNameOfArn(in.SourceArn), in)
	if err != nil {
		return nil, err
	}
	if in.SourceArn == nil {
		return nil, errMissingParameter("SourceArn")
	}
	limit := 1
	if in.MaxResults != nil {
		limit = int(*in.MaxResults)
		if limit < 1 || limit > moveHistory {
			return nil, errInvalidParameter("Value %d for parameter MaxResults is invalid. Reason: must be 1 to %d.", limit, moveHistory)
		}
	}
	s.lock()
	defer s.mu.Unlock()
	if _, ok := s.lookupArn(*in.SourceArn); !ok {
		return nil, errResourceNotFound("The resource that you specified for the SourceArn parameter doesn't exist.")
	}
	history := s.tasks.bySource[*in.SourceArn]
	out := &sqs.ListMessageMoveTasksOutput{Results: []types.ListMessageMoveTasksResultEntry{}}
	for i := len(history) - 1; i >= 0 && len(out.Results) < limit; i-- {
		t := history[i]
		e := types.ListMessageMoveTasksResultEntry{
			ApproximateNumberOfMessagesMoved:  t.moved,
			ApproximateNumberOfMessagesToMove: aws.Int64(t.toMove),
			SourceArn:                         aws.String(t.sourceArn),
			StartedTimestamp:                  t.started.UnixMilli(),
			Status:                            aws.String(t.status),
		}
		if t.destArn != "" {
			e.DestinationArn = aws.String(t.destArn)
		}
		if t.rateGiven {
			e.MaxNumberOfMessagesPerSecond = aws.Int32(int32(t.rate))
		}
		if t.status == taskFailed {
			e.FailureReason = aws.String(t.failure)
		}
		if t.status == taskRunning {
			e.TaskHandle = aws.String(t.handle)
		}
		out.Results = append(out.Results, e)
	}
	return out, end(f)
}

// cancelMessageMoveTask stops a running task; messages it moved stay moved.
func (s *Server) cancelMessageMoveTask(ctx context.Context, in *sqs.CancelMessageMoveTaskInput) (*sqs.CancelMessageMoveTaskOutput, error) {
	f, err := s.begin(ctx, "CancelMessageMoveTask", "", in)
	if err != nil {
		return nil, err
	}
	if in.TaskHandle == nil {
		return nil, errMissingParameter("TaskHandle")
	}
	s.lock()
	defer s.mu.Unlock()
	var task *moveTask
	for _, history := range s.tasks.bySource {
		for _, t := range history {
			if t.handle == *in.TaskHandle {
				task = t
			}
		}
	}
	switch {
	case task == nil:
		return nil, errResourceNotFound("Task does not exist.")
	case task.status != taskRunning:
		return nil, errUnsupportedOperation("Only a task in status RUNNING can be cancelled; this one is %s.", task.status)
	}
	task.status = taskCancelled
	s.tasks.running = slices.DeleteFunc(s.tasks.running, func(t *moveTask) bool { return t == task })
	return &sqs.CancelMessageMoveTaskOutput{ApproximateNumberOfMessagesMoved: task.moved}, end(f)
}
