package main

import (
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/spf13/cobra"

	"github.com/sqskit/sqskit/internal/queueref"
)

// purgeResult is `sqskit purge -o json`.
type purgeResult struct {
	Queue  string `json:"queue"`
	URL    string `json:"url"`
	Purged bool   `json:"purged"`
}

func newPurgeCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "purge QUEUE",
		Short: "Delete every message in a queue, after typing its name",
		Long: `purge deletes every message in the queue (PurgeQueue): visible, in flight and
delayed, for good. At a terminal it asks you to type the queue's name; without
one it changes nothing unless --yes is given, and exits 3.

SQS takes up to 60 s to finish a purge, and refuses a second one within
60 s (PurgeQueueInProgress).`,
		Example: `  sqskit purge orders-dlq            # asks you to type orders-dlq
  sqskit purge orders-dlq --yes      # in scripts`,
		Args: exactArgs("QUEUE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			url, err := a.queueURL(ctx, args[0])
			if err != nil {
				return err
			}
			name := queueref.Name(url)
			c, err := a.sqs(ctx)
			if err != nil {
				return err
			}
			// Read the queue first: a URL of no queue is a bad argument, and
			// the person confirming sees what they are about to delete.
			attrs, err := queueAttributes(ctx, c, url, name)
			if err != nil {
				return err
			}
			q := describeQueue(url, attrs)
			what := fmt.Sprintf("purge deletes every message in %s (about %d visible, %d in flight, %d delayed), for good", name, q.Visible, q.InFlight, q.Delayed)
			if err := a.confirm(ctx, what, name); err != nil {
				return err
			}
			if _, err := c.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(url)}); err != nil {
				return fmt.Errorf("purge %s: %w", name, err)
			}
			res := purgeResult{Queue: name, URL: url, Purged: true}
			return a.emit(res, func(w io.Writer) { row(w, "purged", name) })
		},
	}
}
