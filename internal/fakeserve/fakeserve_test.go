package fakeserve

import (
	"context"
	"flag"
	"io"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqskit/sqskit/sqsfake"
)

func TestParseFault(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want sqsfake.Fault
	}{
		{"SendMessageBatch:2", sqsfake.Fault{Op: "SendMessageBatch", Times: 2, Err: sqsfake.ErrInternal}},
		{"DeleteMessageBatch@orders:1:lost", sqsfake.Fault{Op: "DeleteMessageBatch", Queue: "orders", Times: 1, Err: sqsfake.ErrInternal, AfterApply: true}},
		{"ReceiveMessage:3:throttled", sqsfake.Fault{Op: "ReceiveMessage", Times: 3, Err: sqsfake.ErrThrottled}},
	} {
		got, err := ParseFault(tc.spec)
		if err != nil || got.Op != tc.want.Op || got.Queue != tc.want.Queue || got.Times != tc.want.Times || got.Err != tc.want.Err || got.AfterApply != tc.want.AfterApply {
			t.Errorf("ParseFault(%q): expect %+v, got %+v, %v", tc.spec, tc.want, got, err)
		}
	}
	for _, bad := range []string{"", "Send", ":1", "Send:0", "Send:x", "Send:1:boom", "Send:1:lost:x"} {
		if _, err := ParseFault(bad); err == nil {
			t.Errorf("ParseFault(%q): expect an error", bad)
		}
	}
}

// Serve creates the queues, injects the faults and throttles by the flags,
// and stops when its context ends.
func TestServeWithFaultsAndQuota(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	c := Flags(fs)
	if err := fs.Parse([]string{"-addr", "127.0.0.1:0", "-quiet", "-queue", "jobs.fifo", "-queue", "jobs",
		"-fail", "SendMessage@jobs:1", "-quota-fifo", "1"}); err != nil {
		t.Fatal(err)
	}
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- c.Serve(ctx, io.Discard, ready) }()
	var url string
	select {
	case url = <-ready:
	case err := <-done:
		t.Fatal(err)
	}
	client := sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(url), Retryer: aws.NopRetryer{},
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	send := func(queue string, group *string) error {
		_, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url + "/123456789012/" + queue), MessageBody: aws.String("x"),
			MessageGroupId: group, MessageDeduplicationId: group})
		return err
	}
	if err := send("jobs", nil); err == nil {
		t.Error("expect the first send to jobs to fail (-fail SendMessage@jobs:1)")
	}
	if err := send("jobs", nil); err != nil {
		t.Errorf("expect the second send to jobs to succeed, got %v", err)
	}
	g := aws.String("g")
	if err := send("jobs.fifo", g); err != nil {
		t.Errorf("expect the first FIFO send within the quota, got %v", err)
	}
	if err := send("jobs.fifo", aws.String("h")); err == nil {
		t.Error("expect the second FIFO send in the same second throttled (-quota-fifo 1)")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("expect a clean stop, got %v", err)
	}
}
