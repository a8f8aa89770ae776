package sqsfake_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/schemas"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/transport/http/protocol/awsquery"

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

// The SDK closes a request's body as soon as the response headers arrive,
// and net/http's writer may not be done with that body yet: after the
// Content-Length bytes it reads once more, to find any excess. smithy-go's
// request body answers that read, once closed, with WriteTo's (0, io.EOF),
// an error to net/http, which then closes the connection under the
// response body being read. SDKClient's answers survive that interleaving,
// forced here: the body's write is held until the SDK starts reading the
// response, by then past its close of the request body; the answer is
// larger than the client's 4 KiB read buffer, so most of it is still to be
// read from the connection.
func TestSDKClientAnswerSurvivesTheSDKClosingTheRequestBodyEarly(t *testing.T) {
	for _, tc := range []struct {
		name     string
		protocol func(*sqs.Options)
	}{
		{"json", func(*sqs.Options) {}},
		{"query", func(o *sqs.Options) { o.Protocol = awsquery.New(schemas.AmazonSQS) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hs := sqsfake.StartHTTP(t, sqsfake.New())
			h := newHeldBodyWrite(t)
			client := hs.SDKClient(tc.protocol, func(o *sqs.Options) {
				o.Retryer = aws.NopRetryer{} // a retry would hide the lost answer behind an empty one
				o.HTTPClient = h
			})
			ctx := context.Background()
			q, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("q")})
			if err != nil {
				t.Fatal(err)
			}
			body := strings.Repeat("b", 8<<10)
			if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String(body)}); err != nil {
				t.Fatal(err)
			}
			h.armed.Store(true)
			out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl})
			if !h.held() {
				t.Fatal("expect the receive's body written apart from its headers, and held; nothing was held, so the interleaving was not forced")
			}
			if err != nil {
				t.Fatalf("expect the answer read, got %v", err)
			}
			if len(out.Messages) != 1 || aws.ToString(out.Messages[0].Body) != body {
				t.Fatalf("expect the message, got %d messages", len(out.Messages))
			}
		})
	}
}

// heldBodyWrite is an HTTP client that, once armed, holds the next request
// body's write to the connection (after the bytes are on the wire, so the
// server answers) until the caller first reads the response body. If the
// held write then fails, the read waits for the connection's close that
// follows.
type heldBodyWrite struct {
	next     *awshttp.BuildableClient
	armed    atomic.Bool
	caught   chan struct{} // closed when a body's write is held
	released chan struct{} // closed to let the held write return
	release  func()
	wrote    chan error    // the held request's write result
	closed   chan struct{} // closed when the held write's connection closes
	close    func()
}

func newHeldBodyWrite(t *testing.T) *heldBodyWrite {
	h := &heldBodyWrite{caught: make(chan struct{}), released: make(chan struct{}), wrote: make(chan error, 1), closed: make(chan struct{})}
	var released, closed sync.Once
	h.release = func() { released.Do(func() { close(h.released) }) }
	h.close = func() { closed.Do(func() { close(h.closed) }) }
	t.Cleanup(h.release) // never leave a writer held
	h.next = awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
		dial := tr.DialContext
		tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &heldConn{Conn: c, h: h}, nil
		}
	})
	return h
}

func (h *heldBodyWrite) held() bool {
	select {
	case <-h.caught:
		return true
	default:
		return false
	}
}

func (h *heldBodyWrite) Do(req *http.Request) (*http.Response, error) {
	if !h.armed.Load() {
		return h.next.Do(req)
	}
	trace := &httptrace.ClientTrace{WroteRequest: func(i httptrace.WroteRequestInfo) {
		select {
		case h.wrote <- i.Err:
		default: // a second write of the request (net/http retrying it) is not the held one
		}
	}}
	resp, err := h.next.Do(req.WithContext(httptrace.WithClientTrace(req.Context(), trace)))
	if !h.held() {
		h.armed.Store(false)
		return resp, err
	}
	if err != nil {
		h.release()
		return resp, err
	}
	resp.Body = &releasingBody{ReadCloser: resp.Body, h: h}
	return resp, nil
}

// releasingBody lets the held write go on at its first read or close, and
// reads once that write is over: done, or failed and its connection closed.
type releasingBody struct {
	io.ReadCloser
	h    *heldBodyWrite
	once sync.Once
}

func (b *releasingBody) settle() {
	b.once.Do(func() {
		b.h.release()
		if err := <-b.h.wrote; err != nil {
			<-b.h.closed
		}
	})
}

func (b *releasingBody) Read(p []byte) (int, error) { b.settle(); return b.ReadCloser.Read(p) }
func (b *releasingBody) Close() error               { b.settle(); return b.ReadCloser.Close() }

// heldConn is a client connection of heldBodyWrite.
type heldConn struct {
	net.Conn
	h    *heldBodyWrite
	held atomic.Bool // this connection's write was the one held
}

func (c *heldConn) Write(p []byte) (int, error) {
	// The headers go out first in their own write, as the SDK's body is
	// not one net/http knows to be in memory; the next write is the body.
	if bytes.HasPrefix(p, []byte("POST ")) || !c.h.armed.CompareAndSwap(true, false) {
		return c.Conn.Write(p)
	}
	c.held.Store(true)
	close(c.h.caught) // before the bytes leave, so before any answer
	n, err := c.Conn.Write(p)
	<-c.h.released
	return n, err
}

func (c *heldConn) Close() error {
	if c.held.Load() {
		defer c.h.close()
	}
	return c.Conn.Close()
}
