package sqsfake

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Options configure a Server. The zero value of every field means its default.
type Options struct {
	// Clock is the time source. Default RealClock; tests pass a *ManualClock.
	Clock Clock
	// Region appears in queue ARNs. Default "us-east-1".
	Region string
	// AccountID appears in queue URLs and ARNs. Default "123456789012".
	AccountID string
	// Endpoint is the scheme and host of queue URLs. Default
	// "https://sqs.<Region>.amazonaws.com".
	Endpoint string
	// InFlightLimit is how many messages a queue holds in flight before
	// receives fail with OverLimit. Default 120,000, the service quota.
	InFlightLimit int
}

// Server is an in-memory SQS: a set of queues with the behaviour of the real
// service. Use Client to talk to it. A Server is safe for concurrent use and
// starts no goroutines.
type Server struct {
	opts Options

	mu        sync.Mutex
	queues    map[string]*queue    // by name
	deletedAt map[string]time.Time // queue name → deletion time
	idSeq     uint64
	wake      chan struct{} // closed and replaced when messages may have become receivable

	hookMu sync.Mutex
	faults []*FaultHandle
	calls  Calls
}

// New returns an empty Server.
func New(optFns ...func(*Options)) *Server {
	var o Options
	for _, fn := range optFns {
		fn(&o)
	}
	if o.Clock == nil {
		o.Clock = RealClock{}
	}
	if o.Region == "" {
		o.Region = "us-east-1"
	}
	if o.AccountID == "" {
		o.AccountID = "123456789012"
	}
	if o.Endpoint == "" {
		o.Endpoint = "https://sqs." + o.Region + ".amazonaws.com"
	}
	o.Endpoint = strings.TrimSuffix(o.Endpoint, "/")
	if o.InFlightLimit <= 0 {
		o.InFlightLimit = 120000
	}
	return &Server{
		opts:      o,
		queues:    map[string]*queue{},
		deletedAt: map[string]time.Time{},
		wake:      make(chan struct{}),
		calls:     newCalls(),
	}
}

// Client returns a client of this server. It has the methods of *sqs.Client
// with the same signatures, so it satisfies any interface *sqs.Client does
// for the operations sqsfake implements.
func (s *Server) Client() *Client { return &Client{s: s} }

// Clock returns the server's clock.
func (s *Server) Clock() Clock { return s.opts.Clock }

func (s *Server) now() time.Time { return s.opts.Clock.Now() }

func (s *Server) queueURL(name string) string {
	return s.opts.Endpoint + "/" + s.opts.AccountID + "/" + name
}

func (s *Server) queueArn(name string) string {
	return "arn:aws:sqs:" + s.opts.Region + ":" + s.opts.AccountID + ":" + name
}

// lookup finds a queue by URL. Any scheme and host are accepted, as the
// service accepts any endpoint form; the account and name must match. Callers
// hold s.mu.
func (s *Server) lookup(queueURL *string) (*queue, error) {
	if queueURL == nil || *queueURL == "" {
		return nil, errMissingParameter("QueueUrl")
	}
	u, err := url.Parse(*queueURL)
	if err != nil {
		return nil, errQueueDoesNotExist()
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	if len(parts) != 2 || parts[0] != s.opts.AccountID {
		return nil, errQueueDoesNotExist()
	}
	q, ok := s.queues[parts[1]]
	if !ok {
		return nil, errQueueDoesNotExist()
	}
	return q, nil
}

func (s *Server) lookupArn(arn string) (*queue, bool) {
	prefix := "arn:aws:sqs:" + s.opts.Region + ":" + s.opts.AccountID + ":"
	if !strings.HasPrefix(arn, prefix) {
		return nil, false
	}
	q, ok := s.queues[strings.TrimPrefix(arn, prefix)]
	return q, ok
}

// notify wakes long polls. Callers hold s.mu.
func (s *Server) notify() {
	close(s.wake)
	s.wake = make(chan struct{})
}

func (s *Server) newMessageID() string {
	s.idSeq++
	return fmt.Sprintf("%08x-0000-4000-8000-%012x", uint32(s.idSeq>>48), s.idSeq&0xffffffffffff)
}

// A receipt handle names the queue, the message and which receive it came
// from, so a handle from an earlier receive is recognised as stale.
func receiptHandle(q *queue, m *message) string {
	raw := "sqsfake|" + q.name + "|" + strconv.FormatUint(m.seq, 10) + "|" + strconv.Itoa(m.receiveCount)
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

func parseReceiptHandle(h string) (queueName string, seq uint64, ok bool) {
	raw, err := base64.RawURLEncoding.DecodeString(h)
	if err != nil {
		return "", 0, false
	}
	parts := strings.Split(string(raw), "|")
	if len(parts) != 4 || parts[0] != "sqsfake" {
		return "", 0, false
	}
	seq, err = strconv.ParseUint(parts[2], 10, 64)
	if err != nil {
		return "", 0, false
	}
	return parts[1], seq, true
}

// begin records a call and runs the faults that match it. It returns the
// fault to apply after the call (a lost acknowledgement or entry failures),
// or an error to return at once.
func (s *Server) begin(ctx context.Context, op string, queueURL *string) (*FaultHandle, error) {
	if err := ctx.Err(); err != nil {
		return nil, opError(op, err)
	}
	name := queueNameOf(queueURL)
	f := s.record(op, name)
	if f == nil {
		return nil, nil
	}
	if f.fault.Latency > 0 {
		timer, stop := s.opts.Clock.After(f.fault.Latency)
		select {
		case <-timer:
		case <-ctx.Done():
			stop()
			return nil, opError(op, ctx.Err())
		}
	}
	if f.fault.Entries != nil || f.fault.AfterApply {
		return f, nil
	}
	if f.fault.Err != nil || f.fault.Latency == 0 {
		return nil, opError(op, f.err())
	}
	return nil, nil
}

func queueNameOf(queueURL *string) string {
	if queueURL == nil {
		return ""
	}
	u := *queueURL
	return u[strings.LastIndex(u, "/")+1:]
}
