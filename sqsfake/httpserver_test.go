package sqsfake_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"

	"github.com/sqskit/sqskit/sqsfake"
)

// dial opens a raw connection to hs that the test closes at its end; reads
// give up after 5 s so a server that never closes fails the test, not hangs
// it.
func dial(t *testing.T, hs *sqsfake.HTTPServer) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(hs.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	return c
}

// wantClosed fails unless the server closes c (after perhaps one answer).
func wantClosed(t *testing.T, c net.Conn, what string) {
	t.Helper()
	_, err := io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("%s: expect the server to close the connection, still open after 5 s", what)
	}
}

func TestHTTPRefusesOversizeRequestUnread(t *testing.T) {
	hs := sqsfake.StartHTTP(t, sqsfake.New())
	c := dial(t, hs)
	// Headers only: the body is never sent, so an answer proves it was not awaited.
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nX-Amz-Target: AmazonSQS.ListQueues\r\nContent-Type: application/x-amz-json-1.0\r\nContent-Length: %d\r\n\r\n", 100<<20)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("expect an answer before the body, got %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("expect %d, got %d", http.StatusRequestEntityTooLarge, resp.StatusCode)
	}
}

func TestHTTPHeaderTimeout(t *testing.T) {
	hs := sqsfake.StartHTTP(t, sqsfake.New(), func(o *sqsfake.HTTPOptions) { o.ReadHeaderTimeout = 50 * time.Millisecond })
	c := dial(t, hs)
	fmt.Fprint(c, "POST / HTTP/1.1\r\nHost: x\r\n") // and never the end of the headers
	wantClosed(t, c, "headers never finished")
}

func TestHTTPReadTimeout(t *testing.T) {
	hs := sqsfake.StartHTTP(t, sqsfake.New(), func(o *sqsfake.HTTPOptions) { o.ReadTimeout = 100 * time.Millisecond })
	c := dial(t, hs)
	fmt.Fprint(c, "POST / HTTP/1.1\r\nHost: x\r\nX-Amz-Target: AmazonSQS.ListQueues\r\nContent-Length: 100\r\n\r\n{") // 1 byte of 100
	wantClosed(t, c, "body never finished")
}

func TestHTTPIdleTimeout(t *testing.T) {
	hs := sqsfake.StartHTTP(t, sqsfake.New(), func(o *sqsfake.HTTPOptions) { o.IdleTimeout = 50 * time.Millisecond })
	c := dial(t, hs)
	fmt.Fprint(c, "POST / HTTP/1.1\r\nHost: x\r\nX-Amz-Target: AmazonSQS.ListQueues\r\nContent-Type: application/x-amz-json-1.0\r\nContent-Length: 2\r\n\r\n{}")
	r := bufio.NewReader(c)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("expect 200, got %d", resp.StatusCode)
	}
	wantClosed(t, c, "keep-alive connection left idle")
}

// A request beyond MaxConcurrentRequests is answered at once with 503,
// while the requests in progress (long polls here) carry on.
func TestHTTPConcurrencyCap(t *testing.T) {
	clock := sqsfake.NewManualClock(start)
	hs := sqsfake.StartHTTP(t, sqsfake.New(func(o *sqsfake.Options) { o.Clock = clock }), func(o *sqsfake.HTTPOptions) { o.MaxConcurrentRequests = 2 })
	client := hs.SDKClient(func(o *sqs.Options) { o.Retryer = aws.NopRetryer{} })
	ctx := context.Background()
	out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("q")})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: out.QueueUrl, WaitTimeSeconds: 20})
		}()
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := clock.WaitForTimers(wctx, 2); err != nil {
		t.Fatalf("expect two parked long polls: %v", err)
	}
	_, err = client.ListQueues(ctx, &sqs.ListQueuesInput{})
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "ServiceUnavailable" {
		t.Fatalf("expect ServiceUnavailable beyond 2 requests in progress, got %v", err)
	}
	clock.Advance(20 * time.Second) // the long polls end; their slots free up
	wg.Wait()
	if _, err := client.ListQueues(ctx, &sqs.ListQueuesInput{}); err != nil {
		t.Fatalf("expect a request served once slots are free, got %v", err)
	}
}

// HTTPOptions.Listener serves on a listener the caller chose (cmd/sqsfake's
// -addr), and Close closes it.
func TestHTTPServesOnTheGivenListener(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs, err := sqsfake.NewHTTPServer(sqsfake.New(), func(o *sqsfake.HTTPOptions) { o.Listener = l }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := "http://" + l.Addr().String(); hs.URL != want {
		t.Fatalf("expect the server at %s, got %s", want, hs.URL)
	}
	if _, err := hs.SDKClient().ListQueues(context.Background(), &sqs.ListQueuesInput{}); err != nil {
		t.Fatalf("expect the listener served: %v", err)
	}
	if err := hs.Close(); err != nil {
		t.Fatal(err)
	}
	if c, err := net.Dial("tcp", l.Addr().String()); err == nil {
		c.Close()
		t.Fatal("expect the listener closed with the server")
	}
}
