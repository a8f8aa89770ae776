package fifo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqskit/sqskit/internal/sqserr"
	"github.com/sqskit/sqskit/internal/sqsrule"
)

// ReceiveAPI is the part of the SQS client a Receiver calls.
type ReceiveAPI interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
}

var _ ReceiveAPI = (*sqs.Client)(nil)

// Receiver issues ReceiveMessage for one logical receive loop so that a
// receive that failed in transit can be retried safely on a FIFO queue: each
// logical receive gets a fresh ReceiveRequestAttemptId, a retry after a
// transient failure reuses it (within its 5-minute life), so SQS returns the
// messages the lost response held instead of leaving them invisible until
// their visibility timeout; a successful response drops it. Standard queues
// never get an attempt id.
//
// A Receiver is safe for concurrent use, but concurrent receives share one
// attempt id; give each poller its own Receiver.
type Receiver struct {
	client   ReceiveAPI
	queueURL string
	fifo     bool
	newID    func() string

	mu      sync.Mutex
	pending string    // attempt id to reuse; "" when the last receive succeeded
	since   time.Time // when pending was first used
}

// ReceiverOptions configure a Receiver. Zero values mean the defaults.
// Time is the time package's: tests drive the attempt id's 5-minute life
// with testing/synctest.
type ReceiverOptions struct {
	// NewAttemptID makes attempt ids: 1 to 128 characters of SQS's id
	// charset. Default 32 random hex characters.
	NewAttemptID func() string
}

// NewReceiver returns a Receiver for queueURL.
func NewReceiver(client ReceiveAPI, queueURL string, optFns ...func(*ReceiverOptions)) (*Receiver, error) {
	var o ReceiverOptions
	for _, fn := range optFns {
		if fn != nil { // an option left unset by a condition
			fn(&o)
		}
	}
	if isNilClient(client) || queueURL == "" {
		return nil, fmt.Errorf("%w: NewReceiver needs a client and a queue URL", ErrConfig)
	}
	if o.NewAttemptID == nil {
		o.NewAttemptID = func() string {
			var b [16]byte
			_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
			return hex.EncodeToString(b[:])
		}
	}
	return &Receiver{client: client, queueURL: queueURL, fifo: sqsrule.IsFIFO(queueURL), newID: o.NewAttemptID}, nil
}

// Receive calls ReceiveMessage with in (QueueUrl is filled in when empty;
// a nil in is an empty input, as for *sqs.Client). On a FIFO queue it sets
// ReceiveRequestAttemptId as described above, overriding any in in; on a
// standard queue it clears it.
//
// While an attempt id is pending (AttemptID is not ""), SQS answers the
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

// AttemptID returns the id a retry would reuse, or "" when the next receive
// starts fresh.
func (r *Receiver) AttemptID() string {
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
