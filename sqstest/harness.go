package sqstest

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/schemas"
	"github.com/aws/smithy-go/transport/http/protocol/awsquery"

	"github.com/sqskit/sqskit/sqsfake"
)

// API is the set of SQS operations the suite calls; *sqs.Client (and so
// *sqsfake.Client, which is one) satisfies it.
type API = sqsfake.API

// Capability names a behaviour of real SQS that some backends lack. Cases
// that need a missing capability are skipped with the backend's reason.
type Capability string

// The capabilities the suite asks about.
const (
	// FakeTime: Advance is instant, so cases that need minutes or hours of
	// time (dedup window, retention, the 12-hour cap) run.
	FakeTime Capability = "fake time"
	// ExactErrorCodes: unmodeled errors carry the service's short codes
	// (InvalidParameterValue, not AWS.SimpleQueueService.InvalidParameterValue).
	ExactErrorCodes Capability = "exact error codes"
	// AttemptIDs: ReceiveRequestAttemptId returns the same messages on retry.
	AttemptIDs Capability = "ReceiveRequestAttemptId"
	// RedriveMetadata: DLQ messages carry DeadLetterQueueSourceArn, and a
	// FIFO message's deduplication id becomes its MessageId in the DLQ.
	RedriveMetadata Capability = "redrive metadata"
	// ManyPerGroup: one FIFO receive returns several messages of one group.
	ManyPerGroup Capability = "several messages of one group per receive"
	// DelayValidation: DelaySeconds outside 0-900 is refused.
	DelayValidation Capability = "DelaySeconds range check"
	// HandleValidation: malformed receipt handles are refused.
	HandleValidation Capability = "receipt handle validation"
	// SourceListing: ListDeadLetterSourceQueues works.
	SourceListing Capability = "ListDeadLetterSourceQueues"
	// PurgeCooldown: a second purge within 60 s is refused.
	PurgeCooldown Capability = "purge cooldown"
	// MessageValidation: message attribute limits, group and dedup id
	// charsets, and parameters not valid for the queue type are refused.
	MessageValidation Capability = "message validation"
	// QueueValidation: bad queue names, attribute combinations and redrive
	// policies are refused.
	QueueValidation Capability = "queue validation"
	// InFlightCheck: changing the visibility of a message that is not in
	// flight fails with MessageNotInflight.
	InFlightCheck Capability = "MessageNotInflight"
	// TraceHeader: the AWSTraceHeader system attribute round-trips.
	TraceHeader Capability = "AWSTraceHeader"
	// AttributeSelection: message attributes are returned only when asked for.
	AttributeSelection Capability = "attribute selection"
	// SupplementaryCharacters: bodies may hold characters above U+FFFF.
	SupplementaryCharacters Capability = "characters above U+FFFF"
	// DedupScope: DeduplicationScope=messageGroup deduplicates per group.
	DedupScope Capability = "DeduplicationScope"
	// Tags: TagQueue, UntagQueue, ListQueueTags and tags given at creation.
	Tags Capability = "queue tags"
	// MoveTasks: StartMessageMoveTask, ListMessageMoveTasks and
	// CancelMessageMoveTask.
	MoveTasks Capability = "message move tasks"
	// RedriveAllowPolicy: RedriveAllowPolicy is validated and enforced.
	RedriveAllowPolicy Capability = "RedriveAllowPolicy"
	// DeleteCooldown: a deleted queue's name cannot be reused for 60 s.
	DeleteCooldown Capability = "QueueDeletedRecently"
	// RequestIDs: service errors carry the request id header.
	RequestIDs Capability = "request ids"
	// RetroactiveDelay: a FIFO queue's new DelaySeconds applies to messages
	// already waiting.
	RetroactiveDelay Capability = "retroactive FIFO delay"
	// ExplicitZeros: a member sent as 0 (VisibilityTimeout, WaitTimeSeconds,
	// DelaySeconds, MaxNumberOfMessages) means zero, not the queue's default.
	ExplicitZeros Capability = "explicit zeros"
	// JSONAttributes: queue attributes holding JSON are read as documents:
	// CreateQueue compares a RedrivePolicy by value, not spelling, and an
	// empty Policy removes the policy.
	JSONAttributes Capability = "JSON queue attributes read as documents"
	// Permissions: AddPermission and RemovePermission edit the queue's Policy.
	Permissions Capability = "AddPermission and RemovePermission"
	// UTF8Validation: a request whose text is not valid UTF-8 is refused.
	UTF8Validation Capability = "UTF-8 validation"
)

// Harness adapts a backend to the suite.
type Harness interface {
	// Client is the client under test.
	Client() API
	// QueueName returns a name unique to this run for a queue the suite
	// calls base (which may end in .fifo).
	QueueName(base string) string
	// Advance lets d pass: a fake moves its clock, a real server sleeps.
	Advance(t *testing.T, d time.Duration)
	// WaitForPollers returns once n receives are parked in a long poll (a
	// fake can tell; a real server is given a moment).
	WaitForPollers(t *testing.T, n int)
	// Unsupported returns why the backend lacks c, or "" if it has it.
	Unsupported(c Capability) string
}

// FakeHarness runs the suite on sqsfake with a manual clock, in process or
// over HTTP.
type FakeHarness struct {
	Server *sqsfake.Server
	Clock  *sqsfake.ManualClock
	// HTTP is the server the client talks to over HTTP; nil in process.
	HTTP   *sqsfake.HTTPServer
	client API
	seq    atomic.Int64
}

// NewFakeHarness returns a harness on a new sqsfake server whose manual clock
// starts at a fixed time, driven in process through Server.Client.
func NewFakeHarness() *FakeHarness {
	h := newFake()
	h.client = h.Server.Client()
	return h
}

// NewFakeHTTPHarness returns a harness on a new sqsfake server served over
// HTTP on a loopback port for the length of tb, driven by a real SDK client
// with the SDK's defaults (its retryer, HTTP client and signing).
func NewFakeHTTPHarness(tb testing.TB) *FakeHarness {
	h := newFake()
	h.HTTP = sqsfake.StartHTTP(tb, h.Server)
	h.client = h.HTTP.SDKClient()
	return h
}

// NewFakeQueryHarness is NewFakeHTTPHarness with the SDK client speaking
// SQS's query protocol (form-encoded requests, XML answers, through
// smithy-go's awsquery), as older SDKs and distribution-packaged AWS CLIs
// do.
func NewFakeQueryHarness(tb testing.TB) *FakeHarness {
	h := newFake()
	h.HTTP = sqsfake.StartHTTP(tb, h.Server)
	h.client = h.HTTP.SDKClient(func(o *sqs.Options) { o.Protocol = awsquery.New(schemas.AmazonSQS) })
	return h
}

func newFake() *FakeHarness {
	clock := sqsfake.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	return &FakeHarness{Server: sqsfake.New(func(o *sqsfake.Options) { o.Clock = clock }), Clock: clock}
}

// Client returns the client under test.
func (h *FakeHarness) Client() API { return h.client }

// QueueName returns base with a unique number.
func (h *FakeHarness) QueueName(base string) string { return uniqueName("", base, h.seq.Add(1)) }

// Advance moves the manual clock.
func (h *FakeHarness) Advance(_ *testing.T, d time.Duration) { h.Clock.Advance(d) }

// WaitForPollers waits until n timers are parked on the clock.
func (h *FakeHarness) WaitForPollers(t *testing.T, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.Clock.WaitForTimers(ctx, n); err != nil {
		t.Fatalf("expect %d parked long polls: %v", n, err)
	}
}

// Unsupported: the fake has every capability.
func (h *FakeHarness) Unsupported(Capability) string { return "" }

// RemoteHarness runs the suite against an SQS endpoint over HTTP: an emulator
// or real SQS. Time passes for real, so cases that need long waits skip.
type RemoteHarness struct {
	API API
	// Prefix starts every queue name, so runs do not collide.
	Prefix string
	// Gaps maps each missing capability to the reason it is missing.
	Gaps map[Capability]string
	seq  atomic.Int64
}

// Parallel: cases use their own queues and real time, so they run in
// parallel to keep the wall-clock time of the suite down.
func (h *RemoteHarness) Parallel() bool { return true }

// Client returns the remote client.
func (h *RemoteHarness) Client() API { return h.API }

// QueueName returns a name unique to this harness.
func (h *RemoteHarness) QueueName(base string) string {
	return uniqueName(h.Prefix, base, h.seq.Add(1))
}

// Advance sleeps.
func (h *RemoteHarness) Advance(_ *testing.T, d time.Duration) { time.Sleep(d) }

// WaitForPollers gives a long poll time to reach the server.
func (h *RemoteHarness) WaitForPollers(*testing.T, int) { time.Sleep(300 * time.Millisecond) }

// Unsupported reports declared gaps; real time is always missing.
func (h *RemoteHarness) Unsupported(c Capability) string {
	if c == FakeTime {
		return "time passes for real on this backend; the case needs minutes or hours of it"
	}
	return h.Gaps[c]
}

func uniqueName(prefix, base string, n int64) string {
	fifo := strings.HasSuffix(base, ".fifo")
	base = strings.TrimSuffix(base, ".fifo")
	name := fmt.Sprintf("%s%s-%d", prefix, base, n)
	if len(name) > 75 {
		name = name[len(name)-75:]
	}
	if fifo {
		name += ".fifo"
	}
	return name
}

// createQueue makes a queue for one case and deletes it when the case ends.
func createQueue(t *testing.T, h Harness, base string, attrs map[string]string) string {
	t.Helper()
	name := h.QueueName(base)
	if strings.HasSuffix(name, ".fifo") {
		if attrs == nil {
			attrs = map[string]string{}
		}
		attrs["FifoQueue"] = "true"
	}
	out, err := h.Client().CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		t.Fatalf("create queue %s: %v", name, err)
	}
	t.Cleanup(func() {
		_, _ = h.Client().DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: out.QueueUrl})
	})
	return *out.QueueUrl
}
