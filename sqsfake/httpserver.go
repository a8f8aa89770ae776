package sqsfake

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// HTTPServer serves a Server's wire protocol on a loopback port, in the
// spirit of net/http/httptest: a test starts one, points any SQS client at
// URL, and closes it at the end.
type HTTPServer struct {
	// URL is the base URL, http://127.0.0.1:<port>, without a trailing
	// slash. Pass it as the SDK's BaseEndpoint or the AWS CLI's
	// --endpoint-url.
	URL string
	// Server is the Server it serves.
	Server *Server

	http   *http.Server
	cancel context.CancelFunc
	drain  chan struct{} // closed by Shutdown: long polls answer now
	served chan error
	once   sync.Once
	once2  sync.Once

	mu      sync.Mutex
	closing bool
	active  sync.WaitGroup // requests being served; Add only while !closing
}

// NewHTTPServer starts serving srv on 127.0.0.1 and a free port. Close it
// when done.
func NewHTTPServer(srv *Server) (*HTTPServer, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	return Serve(l, srv), nil
}

// Serve serves srv on l until Close; it is NewHTTPServer for a listener of
// the caller's choosing (cmd/sqsfake passes one on -addr).
func Serve(l net.Listener, srv *Server) *HTTPServer {
	h := &HTTPServer{URL: "http://" + l.Addr().String(), Server: srv, served: make(chan error, 1), drain: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), drainKey{}, (<-chan struct{})(h.drain)))
	h.cancel = cancel
	handler := srv.Handler()
	h.http = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.mu.Lock()
			if h.closing {
				h.mu.Unlock()
				panic(http.ErrAbortHandler)
			}
			h.active.Add(1)
			h.mu.Unlock()
			defer h.active.Done()
			handler.ServeHTTP(w, r)
		}),
		// Long polls end when the server closes, not 20 s later.
		BaseContext: func(net.Listener) context.Context { return ctx },
	}
	go func() { h.served <- h.http.Serve(l) }()
	return h
}

// StartHTTP starts an HTTPServer for srv that closes when tb ends; it fails
// tb if it cannot listen.
func StartHTTP(tb testing.TB, srv *Server) *HTTPServer {
	tb.Helper()
	h, err := NewHTTPServer(srv)
	if err != nil {
		tb.Fatalf("sqsfake: listen: %v", err)
	}
	tb.Cleanup(func() { _ = h.Close() })
	return h
}

// SDKClient returns a real *sqs.Client for this server, configured as code
// that builds its own client would be: region, static credentials (signed,
// not checked), BaseEndpoint = URL, and the SDK's defaults otherwise,
// including its retryer and HTTP client. optFns adjust it.
func (h *HTTPServer) SDKClient(optFns ...func(*sqs.Options)) *sqs.Client {
	opts := sqs.Options{
		Region:       h.Server.opts.Region,
		BaseEndpoint: aws.String(h.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("sqsfake", "sqsfake", ""),
	}
	return sqs.New(opts, optFns...)
}

// Close stops listening, ends long polls in progress, closes every
// connection, and returns once no request is being served.
func (h *HTTPServer) Close() error {
	var err error
	h.once.Do(func() {
		h.mu.Lock()
		h.closing = true
		h.mu.Unlock()
		h.cancel()
		err = h.http.Close()
		if serr := <-h.served; !errors.Is(serr, http.ErrServerClosed) && err == nil {
			err = serr
		}
		h.active.Wait()
	})
	return err
}

// Shutdown stops listening, answers long polls in progress at once (with
// the messages they have, usually none), waits for requests in progress to
// finish or ctx to end, then closes. Use Close in tests; Shutdown is for a
// graceful stop, as cmd/sqsfake does on SIGINT and SIGTERM.
func (h *HTTPServer) Shutdown(ctx context.Context) error {
	h.once2.Do(func() { close(h.drain) })
	err := h.http.Shutdown(ctx)
	if err != nil {
		h.cancel() // out of time: end long polls now
	}
	cerr := h.Close()
	if err == nil {
		err = cerr
	}
	return err
}
