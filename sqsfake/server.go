package sqsfake

import (
	"context"
	"encoding/base64"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure a Server. The zero value of every field means its default.
type Options struct {
	// Clock is the time source. Default the wall clock; tests pass a
	// *ManualClock.
	Clock Clock
	// Region appears in queue ARNs. Default "us-east-1".
	Region string
	// AccountID appears in queue URLs and ARNs. Default "123456789012".
	AccountID string
	// Endpoint is the scheme and host of the queue URLs the Server returns.
	// Default: the scheme and host each request was sent to, so queue URLs
	// point back at the server that returned them
	// (http://127.0.0.1:9324/123456789012/orders over HTTP,
	// https://sqs.<Region>.amazonaws.com/123456789012/orders in process).
	// Requests may name a queue by any host: only the path is read.
	Endpoint string
	// InFlightLimit is how many messages a queue holds in flight before
	// receives fail with OverLimit. Default 120,000, the service quota.
	InFlightLimit int
	// Quota, if set, limits each queue's calls per action and second as
	// SQS's throughput quotas do (see Quota for the model and its
	// defaults); calls beyond it fail with ThrottlingException. Default
	// nil: no quota.
	Quota *Quota
	// Logger, if set, gets one line per request at Info level: operation,
	// queue, HTTP status and duration. Bodies and attribute values are never
	// logged. Default nil: silent.
	Logger *slog.Logger
}

// Server is an in-memory SQS: a set of queues with the behaviour of the real
// service. Talk to it with Client (in process), over HTTP with Handler or
// NewHTTPServer, or from another process through cmd/sqsfake. A Server is
// safe for concurrent use and starts no goroutines.
type Server struct {
	opts Options

	mu        sync.Mutex
	queues    map[string]*queue    // by name
	deletedAt map[string]time.Time // queue name → deletion time
	idSeq     uint64               // message ids and sequences, queue incarnations
	wake      chan struct{}        // closed and replaced when messages may have become receivable
	waited    bool                 // a long poll took wake since it was made
	parked    map[uint64]func()    // the clock timers of long polls waiting on wake, by poll
	pollSeq   uint64
	tasks     moveTasks

	requestSeq atomic.Uint64
	writers    sync.Pool // *jsonWriter released by the HTTP handler

	hookMu sync.Mutex
	faults []*FaultHandle
	calls  Calls
}

// New returns an empty Server.
func New(optFns ...func(*Options)) *Server {
	var o Options
	for _, fn := range optFns {
		if fn != nil { // an option left unset by a condition
			fn(&o)
		}
	}
	if o.Clock == nil {
		o.Clock = realClock{}
	}
	if o.Region == "" {
		o.Region = "us-east-1"
	}
	if o.AccountID == "" {
		o.AccountID = "123456789012"
	}
	o.Endpoint = strings.TrimSuffix(o.Endpoint, "/")
	if o.InFlightLimit <= 0 {
		o.InFlightLimit = 120000
	}
	if o.Quota != nil {
		q := o.Quota.resolved() // a copy: the caller's value stays theirs
		o.Quota = &q
	}
	return &Server{
		opts:      o,
		queues:    map[string]*queue{},
		deletedAt: map[string]time.Time{},
		wake:      make(chan struct{}),
		calls:     newCalls(),
	}
}

// Clock returns the server's clock.
func (s *Server) Clock() Clock { return s.opts.Clock }

func (s *Server) now() time.Time { return s.opts.Clock.Now() }

// lock takes s.mu and brings the server to now: running message move tasks
// move what their rate allows by now. It returns now.
func (s *Server) lock() time.Time {
	s.mu.Lock()
	now := s.now()
	s.runMoveTasks(now)
	return now
}

// request is what one call tells the wire layer besides its result.
type request struct {
	endpoint string          // scheme and host the request was sent to
	queue    string          // the queue it named, for the request log
	drain    <-chan struct{} // closed when the HTTP server shuts down; nil in process
	corrupt  bool            // a fault corrupts the answer's message checksums
	zeros    explicitZeros   // members the request sent as an explicit 0
}

type requestKey struct{}

// drainKey carries an HTTPServer's drain channel in its requests' contexts.
type drainKey struct{}

func requestOf(ctx context.Context) *request {
	if r, ok := ctx.Value(requestKey{}).(*request); ok {
		return r
	}
	return &request{}
}

// queueURL returns a queue's URL as seen by the request in ctx.
func (s *Server) queueURL(ctx context.Context, name string) string {
	base := s.opts.Endpoint
	if base == "" {
		base = requestOf(ctx).endpoint
	}
	if base == "" {
		base = "https://sqs." + s.opts.Region + ".amazonaws.com"
	}
	return base + "/" + s.opts.AccountID + "/" + name
}

func (s *Server) queueArn(name string) string {
	return "arn:aws:sqs:" + s.opts.Region + ":" + s.opts.AccountID + ":" + name
}

// isQueueArn reports whether arn has the form of an SQS queue ARN.
func isQueueArn(arn string) bool {
	parts := strings.Split(arn, ":")
	return len(parts) == 6 && parts[0] == "arn" && parts[2] == "sqs" && parts[5] != ""
}

// lookup finds a queue by URL. Any scheme and host are accepted, as the
// service accepts any endpoint form; the account and name must match. A bare
// queue name is accepted too, as SQS resolves it in the caller's account.
// Callers hold s.mu.
func (s *Server) lookup(queueURL *string) (*queue, error) {
	if queueURL == nil || *queueURL == "" {
		return nil, errMissingParameter("QueueUrl")
	}
	if !strings.Contains(*queueURL, "/") {
		q, ok := s.queues[*queueURL]
		if !ok {
			return nil, errQueueDoesNotExist()
		}
		return q, nil
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
	name, ok := strings.CutPrefix(arn, prefix)
	if !ok {
		return nil, false
	}
	q, ok := s.queues[name]
	return q, ok
}

// notify wakes long polls. Callers hold s.mu.
//
// It releases their clock timers before it returns: a poll it woke no
// longer counts as parked (ManualClock.Timers) although its goroutine has
// yet to run, so a test that advances the clock once every poll is parked
// never advances it past the work the wake starts.
func (s *Server) notify() {
	if !s.waited {
		return // nobody holds wake: no channel to replace for every message sent
	}
	for id, stop := range s.parked {
		stop()
		delete(s.parked, id)
	}
	close(s.wake)
	s.wake = make(chan struct{})
	s.waited = false
}

// park registers a long poll that sleeps until the clock reaches until or
// notify wakes it. It returns the channels to wait on and the function
// that ends the wait, which the poll calls however it wakes. Callers hold
// s.mu.
func (s *Server) park(now, until time.Time) (wake <-chan struct{}, timer <-chan time.Time, done func()) {
	s.waited = true
	timer, stop := s.opts.Clock.After(until.Sub(now))
	if s.parked == nil {
		s.parked = map[uint64]func(){}
	}
	s.pollSeq++
	id := s.pollSeq
	s.parked[id] = stop
	return s.wake, timer, func() {
		stop()
		s.mu.Lock()
		delete(s.parked, id)
		s.mu.Unlock()
	}
}

// nextSeq returns a number never returned before by this Server. Callers
// hold s.mu.
func (s *Server) nextSeq() uint64 {
	s.idSeq++
	return s.idSeq
}

func messageID(seq uint64) string { return uuidOf(seq, "0000") }

// uuidOf formats n as a UUID: the top 16 bits as 8 hex digits, then
// -mid-4000-8000-, then the low 48 bits as 12 hex digits. By hand, not with
// fmt: it runs for every message and every request.
func uuidOf(n uint64, mid string) string {
	const hex = "0123456789abcdef"
	var b [36]byte
	hi, lo := n>>48, n&0xffffffffffff
	for i := 7; i >= 0; i-- {
		b[i], hi = hex[hi&0xf], hi>>4
	}
	copy(b[8:24], "-"+mid+"-4000-8000-")
	for i := 35; i >= 24; i-- {
		b[i], lo = hex[lo&0xf], lo>>4
	}
	return string(b[:])
}

// A receipt handle names the queue incarnation, the message and which
// receive it came from, so a handle from an earlier receive is recognised as
// stale and a handle never names a message of a later queue with the same
// name.
func receiptHandle(q *queue, m *message) string {
	raw := "sqsfake|" + strconv.FormatUint(q.id, 10) + "|" + strconv.FormatUint(m.seq, 10) + "|" + strconv.Itoa(m.receiveCount)
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

func parseReceiptHandle(h string) (queueID, seq uint64, ok bool) {
	raw, err := base64.RawURLEncoding.DecodeString(h)
	if err != nil {
		return 0, 0, false
	}
	// sqsfake|<queue>|<message>|<receive>, cut rather than split: one
	// allocation less for every message deleted.
	rest, ok := strings.CutPrefix(string(raw), "sqsfake|")
	queue, rest, ok1 := strings.Cut(rest, "|")
	message, receive, ok2 := strings.Cut(rest, "|")
	if !ok || !ok1 || !ok2 || strings.Contains(receive, "|") {
		return 0, 0, false
	}
	queueID, err1 := strconv.ParseUint(queue, 10, 64)
	seq, err2 := strconv.ParseUint(message, 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return queueID, seq, true
}

// begin records a call and runs the faults that match it. It returns the
// fault to apply after the call (a lost acknowledgement, entry failures, a
// corrupted checksum), or an error to answer with at once.
func (s *Server) begin(ctx context.Context, op, queueName string, in any) (*FaultHandle, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	req := requestOf(ctx)
	req.queue = queueName
	f := s.record(op, queueName, in)
	if err := s.throttle(op, queueName, in); err != nil {
		return nil, err
	}
	if f == nil {
		return nil, nil
	}
	req.corrupt = f.fault.CorruptChecksum
	if f.fault.Latency > 0 {
		timer, stop := s.opts.Clock.After(f.fault.Latency)
		select {
		case <-timer:
		case <-ctx.Done():
			stop()
			return nil, ctx.Err()
		}
	}
	if f.fault.Entries != nil || f.fault.AfterApply || f.fault.CorruptChecksum {
		return f, nil
	}
	if f.failsCall() {
		return nil, f.failure()
	}
	return nil, nil
}

// end returns the error a call that took effect ends with: the fault's if
// it loses the acknowledgement.
func end(f *FaultHandle) error {
	if f != nil && f.fault.AfterApply {
		return f.failure()
	}
	return nil
}

func queueNameOf(queueURL *string) string {
	if queueURL == nil {
		return ""
	}
	u := *queueURL
	return u[strings.LastIndex(u, "/")+1:]
}

func queueNameOfArn(arn *string) string {
	if arn == nil {
		return ""
	}
	return (*arn)[strings.LastIndex(*arn, ":")+1:]
}
