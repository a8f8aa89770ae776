package sqsfake

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"
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

// HTTPOptions bound what an HTTPServer gives its clients, so a client that
// sends slowly, sends nothing, or opens many requests cannot hold the
// server's memory or goroutines for long. A request body is limited to
// 8 MiB by the handler itself (Server.Handler): a larger declared length is
// refused with HTTP 413 before anything is read, and a body's buffer grows
// with the bytes that arrive, not with the length a client declares.
// Zero or a negative value means the default.
type HTTPOptions struct {
	// MaxConcurrentRequests is how many requests are served at once, long
	// polls included. A request beyond it is answered at once with HTTP 503
	// ServiceUnavailable, which SDKs retry with backoff. Default 1024.
	MaxConcurrentRequests int
	// ReadHeaderTimeout is how long a client has to send a request's
	// headers. Default 10 s.
	ReadHeaderTimeout time.Duration
	// ReadTimeout is how long a client has to send a whole request, body
	// included. A long poll's wait is not part of it. Default 60 s.
	ReadTimeout time.Duration
	// IdleTimeout is how long a keep-alive connection waits for its next
	// request before it is closed. Default 120 s.
	IdleTimeout time.Duration
	// Listener, when set, is where the server accepts connections (a
	// chosen address, a listener from systemd); the server closes it on
	// Close. Default: a new one on 127.0.0.1 and a free port.
	Listener net.Listener
}

func resolveHTTPOptions(optFns []func(*HTTPOptions)) HTTPOptions {
	var o HTTPOptions
	for _, fn := range optFns {
		if fn != nil {
			fn(&o)
		}
	}
	if o.MaxConcurrentRequests <= 0 {
		o.MaxConcurrentRequests = 1024
	}
	if o.ReadHeaderTimeout <= 0 {
		o.ReadHeaderTimeout = 10 * time.Second
	}
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = 60 * time.Second
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 120 * time.Second
	}
	return o
}

// NewHTTPServer starts serving srv on HTTPOptions.Listener, or on
// 127.0.0.1 and a free port. Close it when done.
func NewHTTPServer(srv *Server, optFns ...func(*HTTPOptions)) (*HTTPServer, error) {
	o := resolveHTTPOptions(optFns)
	l := o.Listener
	if l == nil {
		var err error
		if l, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return nil, err
		}
	}
	return serve(l, srv, o), nil
}

// serve serves srv on l until Close.
func serve(l net.Listener, srv *Server, o HTTPOptions) *HTTPServer {
	h := &HTTPServer{URL: "http://" + l.Addr().String(), Server: srv, served: make(chan error, 1), drain: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), drainKey{}, (<-chan struct{})(h.drain)))
	h.cancel = cancel
	handler := srv.Handler()
	slots := make(chan struct{}, o.MaxConcurrentRequests)
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
			select {
			case slots <- struct{}{}:
				defer func() { <-slots }()
			default:
				srv.writeResponse(w, srv.errorResponse(errBusy, srv.requestID(), r.Header.Get("X-Amz-Target") == ""))
				return
			}
			handler.ServeHTTP(w, r)
		}),
		// Long polls end when the server closes, not 20 s later.
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ReadHeaderTimeout: o.ReadHeaderTimeout,
		ReadTimeout:       o.ReadTimeout,
		IdleTimeout:       o.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
	}
	go func() { h.served <- h.http.Serve(l) }()
	return h
}

// errBusy answers a request beyond HTTPOptions.MaxConcurrentRequests.
var errBusy error = &smithy.GenericAPIError{Code: "ServiceUnavailable", Message: "The server has too many requests in progress; retry later.", Fault: smithy.FaultServer}

// StartHTTP starts an HTTPServer for srv that closes when tb ends; it fails
// tb if it cannot listen.
func StartHTTP(tb testing.TB, srv *Server, optFns ...func(*HTTPOptions)) *HTTPServer {
	tb.Helper()
	h, err := NewHTTPServer(srv, optFns...)
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
//
// One change to the SDK's behaviour: request bodies reach the HTTP client
// (including one that optFns set) without their WriteTo method. That works
// around a race in the SDK that closes the connection under an answer being
// read, so that a 200 fails with "use of closed network connection" and a
// retried receive finds the messages it took in flight.
func (h *HTTPServer) SDKClient(optFns ...func(*sqs.Options)) *sqs.Client {
	opts := sqs.Options{
		Region:       h.Server.opts.Region,
		BaseEndpoint: aws.String(h.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("sqsfake", "sqsfake", ""),
	}
	fns := append(slices.Clip(optFns), func(o *sqs.Options) {
		if o.HTTPClient != nil {
			o.HTTPClient = plainBodyClient{o.HTTPClient}
		}
	})
	return sqs.New(opts, fns...)
}

// plainBodyClient hands each request to next with a body that is only an
// io.ReadCloser, working around a race between aws-sdk-go-v2 and net/http
// that loses answers (smithy-go v1.28.8, Go 1.26):
//
//   - smithy-go wraps a request body in a "safe" closer whose WriteTo, once
//     closed, returns (0, io.EOF): an error, where Read returns a plain EOF;
//   - smithy-go's ClientHandler closes that body as soon as HTTPClient.Do
//     returns, that is once the response headers have arrived;
//   - net/http's writer, after sending Content-Length bytes, copies the rest
//     of the body to io.Discard to check there is none, through WriteTo. If
//     the answer came first, that copy fails, the request's write counts as
//     failed, and the writer closes the connection while the response body
//     is being read: "use of closed network connection" on a 200. An answer
//     larger than the client's 4 KiB read buffer (ten messages over the
//     query protocol) is lost; a smaller one already sits in that buffer,
//     and only the keep-alive connection is lost.
//
// Without WriteTo, net/http checks for excess with Read, whose EOF is the
// end it expects.
type plainBodyClient struct{ next sqs.HTTPClient }

func (c plainBodyClient) Do(req *http.Request) (*http.Response, error) {
	if _, ok := req.Body.(io.WriterTo); ok {
		req = req.WithContext(req.Context()) // a copy: the SDK closes its own
		req.Body = struct{ io.ReadCloser }{req.Body}
	}
	return c.next.Do(req)
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
