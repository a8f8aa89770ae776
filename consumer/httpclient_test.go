package consumer

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/sqsfake"
)

func TestHTTPClientKeepsIdleConnections(t *testing.T) {
	for _, c := range []struct{ give, perHost, total int }{
		{give: 0, perHost: 64, total: 100},
		{give: -1, perHost: 64, total: 100},
		{give: 10, perHost: 10, total: 100},
		{give: 48, perHost: 48, total: 100},
		{give: 500, perHost: 500, total: 500},
	} {
		t.Run(fmt.Sprint(c.give), func(t *testing.T) {
			tr := HTTPClient(c.give).GetTransport()
			if tr.MaxIdleConnsPerHost != c.perHost {
				t.Errorf("expect MaxIdleConnsPerHost %d, got %d", c.perHost, tr.MaxIdleConnsPerHost)
			}
			if tr.MaxIdleConns != c.total {
				t.Errorf("expect MaxIdleConns %d, got %d", c.total, tr.MaxIdleConns)
			}
			d := awshttp.NewBuildableClient().GetTransport()
			if tr.MaxConnsPerHost != d.MaxConnsPerHost {
				t.Errorf("expect the SDK's cap on open connections, %d, got %d", d.MaxConnsPerHost, tr.MaxConnsPerHost)
			}
			if tr.TLSHandshakeTimeout != d.TLSHandshakeTimeout || tr.IdleConnTimeout != d.IdleConnTimeout || tr.Proxy == nil {
				t.Errorf("expect the SDK's other defaults kept")
			}
		})
	}
}

// countingListener counts the connections a server accepts.
type countingListener struct {
	net.Listener
	accepted atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

// connectionsOpened runs a default consumer for d over HTTP against sqsfake,
// every call taking 5 ms so that tens are in flight, and returns the
// connections the server accepted and the messages handled.
func connectionsOpened(t *testing.T, httpClient sqs.HTTPClient, d time.Duration) (conns, handled int64) {
	t.Helper()
	srv := sqsfake.New()
	ctx := context.Background()
	mem := srv.Client()
	out, err := mem.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders")})
	if err != nil {
		t.Fatal(err)
	}
	url := aws.ToString(out.QueueUrl)
	for i := range 2000 { // 20,000 messages: more than d can drain
		entries := make([]types.SendMessageBatchRequestEntry, 10)
		for j := range entries {
			entries[j] = types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(j)), MessageBody: aws.String(fmt.Sprint(i*10 + j))}
		}
		if _, err := mem.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries}); err != nil {
			t.Fatal(err)
		}
	}
	srv.Inject(sqsfake.Fault{Latency: 5 * time.Millisecond})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	counting := &countingListener{Listener: ln}
	h := sqsfake.StartHTTP(t, srv, func(o *sqsfake.HTTPOptions) { o.Listener = counting })
	client := h.SDKClient(func(o *sqs.Options) { o.HTTPClient = httpClient })
	c, err := New(client, url, func(context.Context, *handler.Message) error { return nil }, func(o *Options) {
		o.VisibilityTimeout = time.Minute
		o.ReceiveConcurrency = 24 // start at the ceiling: d measures the steady state
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	if err := c.Run(runCtx); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	return counting.accepted.Load(), c.Stats().Deleted
}

// Under the default consumer's 48 calls in flight, the SDK's default client
// keeps 10 idle connections per host and opens new ones all along;
// HTTPClient(0) keeps them and opens about as many as calls in flight
// (a few more: the SDK drops a keep-alive connection now and then, see
// sqsfake.HTTPServer.SDKClient).
func TestHTTPClientReusesConnectionsUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("a 2 × 1.5 s load run")
	}
	const d = 1500 * time.Millisecond
	defaultConns, defaultHandled := connectionsOpened(t, awshttp.NewBuildableClient(), d)
	tunedConns, tunedHandled := connectionsOpened(t, HTTPClient(0), d)
	t.Logf("connections opened in %v: SDK default client %d (%d messages handled), HTTPClient(0) %d (%d handled)",
		d, defaultConns, defaultHandled, tunedConns, tunedHandled)
	if tunedHandled == 0 || defaultHandled == 0 {
		t.Fatal("expect messages handled in both runs")
	}
	if tunedConns > 96 {
		t.Errorf("expect HTTPClient(0) to open about as many connections as calls in flight (48, and a few the SDK loses), got %d", tunedConns)
	}
	if tunedConns*2 > defaultConns {
		t.Errorf("expect HTTPClient(0) to open under half the connections of the default client, got %d and %d", tunedConns, defaultConns)
	}
}
