package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/spf13/cobra"

	"github.com/sqskit/sqskit/internal/queueref"
	"github.com/sqskit/sqskit/internal/sqserr"
)

// redrivePoll is how often start --wait reads the task's progress.
const redrivePoll = time.Second

func newRedriveCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "redrive",
		Short: "Start, list and cancel SQS's own message move tasks (StartMessageMoveTask)",
		Long: `redrive drives SQS's native redrive: a message move task moves every message
of a dead-letter queue back to its source queues (or to --to), at up to 500
messages a second, with new MessageIds and no filter, delay or counter. To move
selected messages with the replayer's guarantees, use sqskit replay.

Some emulators (fauxqs) have no move tasks: redrive says so and exits 1.`,
		Example: `  sqskit redrive start orders-dlq --wait --yes
  sqskit redrive list orders-dlq
  sqskit redrive cancel eyJ0YXNrSWQiOi… --yes`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError("redrive: unknown subcommand %q (start, list or cancel)", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newRedriveStartCmd(a), newRedriveListCmd(a), newRedriveCancelCmd(a))
	return cmd
}

func exactlyOne(what string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != 1 {
			return usageError("want one %s, got %d arguments", what, len(args))
		}
		return nil
	}
}

// queueArn is the ARN of a queue given by name or URL; a queue that does
// not exist is a usage error.
func queueArn(ctx context.Context, a *app, c *sqs.Client, queue string) (url, arn string, err error) {
	if url, err = a.queueURL(ctx, queue); err != nil {
		return "", "", err
	}
	attrs, err := queueAttributes(ctx, c, url, queue)
	if err != nil {
		return "", "", err
	}
	return url, attrs[string(types.QueueAttributeNameQueueArn)], nil
}

// noMoveTasks says whether err means the endpoint has no move tasks.
func noMoveTasks(err error) bool {
	switch strings.TrimPrefix(sqserr.Code(err), "AWS.SimpleQueueService.") {
	case "InvalidAction", "UnknownOperationException", "UnknownOperation", "NotImplemented":
		return true
	}
	return false
}

func moveTaskError(op string, err error) error {
	if noMoveTasks(err) {
		return fmt.Errorf("redrive %s: this endpoint has no message move tasks (%s answered %s); fauxqs and some other emulators do not implement them: use sqskit replay, which needs none", op, opName(op), sqserr.Code(err))
	}
	return fmt.Errorf("redrive %s: %w", op, err)
}

func opName(op string) string {
	return map[string]string{"start": "StartMessageMoveTask", "list": "ListMessageMoveTasks", "cancel": "CancelMessageMoveTask"}[op]
}

// moveTask is a move task, for tables and JSON.
type moveTask struct {
	TaskHandle  string    `json:"taskHandle,omitempty"`
	Status      string    `json:"status"`
	Source      string    `json:"sourceArn"`
	Destination string    `json:"destinationArn,omitempty"`
	Moved       int64     `json:"moved"`
	ToMove      *int64    `json:"toMove,omitempty"`
	Rate        *int32    `json:"maxMessagesPerSecond,omitempty"`
	Started     time.Time `json:"started"`
	Failure     string    `json:"failureReason,omitempty"`
}

func taskOf(e types.ListMessageMoveTasksResultEntry) moveTask {
	return moveTask{TaskHandle: aws.ToString(e.TaskHandle), Status: aws.ToString(e.Status), Source: aws.ToString(e.SourceArn),
		Destination: aws.ToString(e.DestinationArn), Moved: e.ApproximateNumberOfMessagesMoved, ToMove: e.ApproximateNumberOfMessagesToMove,
		Rate: e.MaxNumberOfMessagesPerSecond, Started: time.UnixMilli(e.StartedTimestamp).UTC(), Failure: aws.ToString(e.FailureReason)}
}

func taskTable(w io.Writer, tasks []moveTask) {
	row(w, "STATUS", "MOVED", "TO MOVE", "RATE", "DESTINATION", "STARTED", "HANDLE")
	for _, t := range tasks {
		toMove, rate := "-", "max"
		if t.ToMove != nil {
			toMove = fmt.Sprint(*t.ToMove)
		}
		if t.Rate != nil {
			rate = fmt.Sprintf("%d/s", *t.Rate)
		}
		dest := "(sources)"
		if t.Destination != "" {
			dest = arnName(t.Destination)
		}
		status := t.Status
		if t.Failure != "" {
			status += ": " + t.Failure
		}
		row(w, status, t.Moved, toMove, rate, dest, t.Started.Format(time.RFC3339), dash(t.TaskHandle))
	}
}

func arnName(arn string) string {
	if i := strings.LastIndex(arn, ":"); i >= 0 {
		return arn[i+1:]
	}
	return arn
}

func newRedriveStartCmd(a *app) *cobra.Command {
	var to string
	var rate int
	var wait bool
	cmd := &cobra.Command{
		Use:   "start SOURCE",
		Short: "Start moving every message of a dead-letter queue to its source queues (or --to)",
		Example: `  sqskit redrive start orders-dlq --yes
  sqskit redrive start orders-dlq --to orders-retry --rate 50 --wait --yes`,
		Args: exactlyOne("dead-letter queue"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			rateSet := cmd.Flags().Changed("rate")
			if rateSet && (rate < 1 || rate > 500) {
				return usageError("--rate %d: SQS moves 1 to 500 messages a second", rate)
			}
			c, err := a.sqs(ctx)
			if err != nil {
				return err
			}
			srcURL, srcArn, err := queueArn(ctx, a, c, args[0])
			if err != nil {
				return err
			}
			in := &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(srcArn)}
			dest := "the queues that dead-letter to it"
			if to != "" {
				toURL, toArn, err := queueArn(ctx, a, c, to)
				if err != nil {
					return err
				}
				if queueref.Same(toURL, srcURL) {
					return usageError("--to %q is the source queue", to)
				}
				in.DestinationArn, dest = aws.String(toArn), queueref.Name(toURL)
			}
			if rateSet {
				in.MaxNumberOfMessagesPerSecond = aws.Int32(int32(rate))
			}
			if out, err := c.ListDeadLetterSourceQueues(ctx, &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: aws.String(srcURL)}); err == nil && len(out.QueueUrls) == 0 {
				return usageError("%s is not the dead-letter queue of any queue: SQS moves messages only out of a dead-letter queue", queueref.Name(srcURL))
			}
			if err := a.confirm(ctx, fmt.Sprintf("Move every message of %s to %s?", queueref.Name(srcURL), dest), "yes"); err != nil {
				return err
			}
			out, err := c.StartMessageMoveTask(ctx, in)
			if err != nil {
				return moveTaskError("start", err)
			}
			handle := aws.ToString(out.TaskHandle)
			if !wait {
				return a.emit(map[string]string{"taskHandle": handle, "sourceArn": srcArn}, func(w io.Writer) {
					fmt.Fprintf(w, "Started moving the messages of %s to %s.\nTask handle: %s\n(sqskit redrive list %s follows it; sqskit redrive cancel HANDLE stops it.)\n",
						queueref.Name(srcURL), dest, handle, queueref.Name(srcURL))
				})
			}
			task, err := followMove(ctx, a, c, srcArn, handle)
			if err != nil {
				return err
			}
			if err := a.emit(task, func(w io.Writer) { taskTable(w, []moveTask{task}) }); err != nil {
				return err
			}
			if task.Status != "COMPLETED" {
				return &exitError{code: exitFailed, err: fmt.Errorf("redrive: the task ended %s%s", task.Status, failureSuffix(task.Failure))}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "move to this queue instead of the messages' source queues")
	cmd.Flags().IntVar(&rate, "rate", 0, "messages a second, 1 to 500 (default: SQS's, up to 500)")
	cmd.Flags().BoolVar(&wait, "wait", false, "follow the task's progress until it ends")
	return cmd
}

func failureSuffix(f string) string {
	if f == "" {
		return ""
	}
	return ": " + f
}

// followMove polls the source's newest task until it is no longer running,
// drawing its progress.
func followMove(ctx context.Context, a *app, c *sqs.Client, srcArn, handle string) (moveTask, error) {
	var bar *progress
	var shown int64
	defer func() {
		if bar != nil {
			bar.finish()
		}
	}()
	for {
		out, err := c.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(srcArn), MaxResults: aws.Int32(1)})
		if err != nil {
			return moveTask{}, moveTaskError("start --wait", err)
		}
		if len(out.Results) == 0 {
			return moveTask{}, fmt.Errorf("redrive: the task %s is not listed", handle)
		}
		task := taskOf(out.Results[0])
		if bar == nil {
			total := 0
			if task.ToMove != nil {
				total = int(*task.ToMove)
			}
			bar = a.progress("redrive", total)
		}
		bar.add(int(task.Moved - shown))
		shown = task.Moved
		if task.Status != "RUNNING" && task.Status != "CANCELLING" {
			return task, nil
		}
		timer := time.NewTimer(redrivePoll)
		select {
		case <-ctx.Done():
			timer.Stop()
			return task, fmt.Errorf("redrive: stopped following (the task goes on; sqskit redrive list follows it): %w", ctx.Err())
		case <-timer.C:
		}
	}
}

func newRedriveListCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:     "list SOURCE",
		Short:   "List a dead-letter queue's recent move tasks, newest first",
		Example: `  sqskit redrive list orders-dlq`,
		Args:    exactlyOne("dead-letter queue"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, err := a.sqs(ctx)
			if err != nil {
				return err
			}
			_, arn, err := queueArn(ctx, a, c, args[0])
			if err != nil {
				return err
			}
			out, err := c.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(arn), MaxResults: aws.Int32(10)})
			if err != nil {
				return moveTaskError("list", err)
			}
			tasks := make([]moveTask, 0, len(out.Results))
			for _, e := range out.Results {
				tasks = append(tasks, taskOf(e))
			}
			return a.emit(tasks, func(w io.Writer) {
				if len(tasks) == 0 {
					fmt.Fprintf(w, "No move tasks for %s.\n", arnName(arn))
					return
				}
				taskTable(w, tasks)
			})
		},
	}
}

func newRedriveCancelCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:     "cancel TASK_HANDLE",
		Short:   "Cancel a running move task (the messages moved so far stay moved)",
		Example: `  sqskit redrive cancel eyJ0YXNrSWQiOi… --yes`,
		Args:    exactlyOne("task handle"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			handle := strings.TrimSpace(args[0])
			if handle == "" {
				return usageError("redrive cancel: the task handle is empty (sqskit redrive list SOURCE shows it)")
			}
			c, err := a.sqs(ctx)
			if err != nil {
				return err
			}
			if err := a.confirm(ctx, "Cancel the move task "+handle+"?", "yes"); err != nil {
				return err
			}
			out, err := c.CancelMessageMoveTask(ctx, &sqs.CancelMessageMoveTaskInput{TaskHandle: aws.String(handle)})
			if err != nil {
				var missing *types.ResourceNotFoundException
				var over *types.UnsupportedOperation
				switch {
				case errors.As(err, &missing):
					return usageError("redrive cancel: no task has the handle %q (sqskit redrive list SOURCE shows them): nothing changed", handle)
				case errors.As(err, &over):
					return usageError("redrive cancel: the task is not running (finished or cancelled already): nothing changed")
				}
				return moveTaskError("cancel", err)
			}
			moved := out.ApproximateNumberOfMessagesMoved
			return a.emit(map[string]any{"taskHandle": handle, "moved": moved}, func(w io.Writer) {
				fmt.Fprintf(w, "Cancelled; %d messages had been moved (they stay moved).\n", moved)
			})
		},
	}
}
