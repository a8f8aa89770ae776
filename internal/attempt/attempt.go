// Package attempt receives from a FIFO queue with a ReceiveRequestAttemptId
// that a retry after a failure in transit reuses, so the messages of a lost
// answer come back at once instead of after their visibility timeout. The
// consumer's receive loops use it.
package attempt

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqskit/sqskit/internal/dispatch"
	"github.com/sqskit/sqskit/internal/sqserr"
	"github.com/sqskit/sqskit/internal/sqsrule"
)

// ErrConfig is returned by New for a nil client or an empty queue URL.
var ErrConfig = errors.New("attempt: New needs a client and a queue URL")

// ReceiveAPI is the part of the SQS client a Receiver calls.
type ReceiveAPI interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
}

// Receiver issues ReceiveMessage for one logical receive loop: each logical
// receive gets a fresh ReceiveRequestAttemptId, a retry after a transient
// failure reuses it (within its 5-minute life), and a successful or
// permanent answer drops it. Standard queues never get an attempt id.
//
// Concurrent receives would share one attempt id: give each loop its own
// Receiver.
type Receiver struct {
	client   ReceiveAPI
	queueURL string
	fifo     bool
	newID    func() string

	mu      sync.Mutex
	pending string    // attempt id to reuse; "" when the last receive succeeded
	since   time.Time // when pending was first used
}

// New returns a Receiver for queueURL.
func New(client ReceiveAPI, queueURL string) (*Receiver, error) {
	if client == nil || queueURL == "" {
		return nil, ErrConfig
	}
	if dispatch.IsNil(client) { // its first call would panic
		return nil, ErrConfig
	}
	return &Receiver{client: client, queueURL: queueURL, fifo: sqsrule.IsFIFO(queueURL), newID: randomID}, nil
}

func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[:])
}

// Receive calls ReceiveMessage with in (QueueUrl is filled in when empty;
// a nil in is an empty input, as for *sqs.Client). On a FIFO queue it sets
// ReceiveRequestAttemptId, overriding any in in; on a standard queue it
// clears it.
//
// While an attempt id is pending (Pending is not ""), SQS answers the
// retry with the first attempt's messages, whatever MaxNumberOfMessages now
// says: a caller that sizes its room per receive must keep the room it had
// for the first attempt and ask for the same number again.
func (r *Receiver) Receive(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	var req sqs.ReceiveMessageInput
	if in != nil {
		req = *in
	}
	if req.QueueUrl == nil {
		req.QueueUrl = aws.String(r.queueURL)
	}
	req.ReceiveRequestAttemptId = nil
	var id string
	if r.fifo {
		id = r.attemptID()
		req.ReceiveRequestAttemptId = aws.String(id)
	}
	out, err := r.client.ReceiveMessage(ctx, &req, optFns...)
	if r.fifo {
		r.settle(id, err)
	}
	return out, err
}

// Pending returns the attempt id a retry would reuse, or "" when the next
// receive starts fresh.
func (r *Receiver) Pending() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pending
}

func (r *Receiver) attemptID() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	// Keep a margin inside the 5 minutes: an id SQS has forgotten would make
	// the retry a fresh receive, stranding the lost messages until timeout.
	if r.pending == "" || now.Sub(r.since) >= sqsrule.AttemptIDWindow-30*time.Second {
		r.pending, r.since = r.newID(), now
	}
	return r.pending
}

func (r *Receiver) settle(id string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pending != id {
		return
	}
	if err == nil || !sqserr.Transient(err) {
		r.pending = ""
	}
}
