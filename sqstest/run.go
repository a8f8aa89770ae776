package sqstest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/sqskit/sqskit/sqsfake"
)

// testCase is one named behaviour of SQS: Run runs test as the subtest name,
// Check with a recorder as t.
type testCase struct {
	name string
	test func(t caseT, e *env)
	need need
}

// caseT is what a case uses of its *testing.T, so that the one code of each
// case runs under Run (the subtest's *testing.T) and under Check (a
// recorder). Fatal and Fatalf end the case's goroutine, as testing's do.
type caseT interface {
	Helper()
	Cleanup(func())
	Errorf(format string, args ...any)
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
}

var _ caseT = (*testing.T)(nil)

// need is what a case asks of a backend beyond being SQS.
type need uint8

const (
	anyBackend need = iota
	// needsClock: the case lets minutes or hours pass, so it runs only with
	// a Harness.Clock.
	needsClock
)

// Run runs every case against the harness's backend, each as a subtest
// named for the behaviour it checks ("fifo/group-lock", …): go test -run
// 'TestX/fifo/' runs one family. A case in Harness.Skip, or one that needs
// a Clock the harness lacks, is skipped with the reason.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.Client == nil {
		t.Fatal("sqstest: Harness.Client is nil")
	}
	all := suite()
	for _, problem := range skipProblems(h.Skip, all) {
		t.Error(problem)
	}
	e := &env{h: h, api: h.Client, seq: new(atomic.Int64)}
	for _, c := range all {
		t.Run(c.name, func(t *testing.T) {
			if h.Clock == nil {
				t.Parallel()
			}
			if reason, skip := c.skipReason(h); skip {
				t.Skip(reason)
			}
			c.test(t, e)
		})
	}
}

// skipReason says why the case skips on h, if it does: what Run prints and
// Check reports.
func (c testCase) skipReason(h Harness) (string, bool) {
	if reason, ok := h.Skip[c.name]; ok {
		return fmt.Sprintf("SKIP %s: backend lacks this behaviour: %s", c.name, reason), true
	}
	if c.need == needsClock && h.Clock == nil {
		return fmt.Sprintf("SKIP %s: backend lacks a clock the test moves: time passes for real on this backend; the case needs minutes or hours of it", c.name), true
	}
	return "", false
}

// skipProblems says what is wrong with a Harness.Skip: names that are no
// case (a case renamed or removed) and empty reasons.
func skipProblems(skip map[string]string, all []testCase) []string {
	known := make(map[string]bool, len(all))
	for _, c := range all {
		known[c.name] = true
	}
	var out []string
	for name, reason := range skip {
		if !known[name] {
			out = append(out, fmt.Sprintf("sqstest: Harness.Skip names %q, which is no case of this suite (sqstest.Names lists them)", name))
		} else if reason == "" {
			out = append(out, fmt.Sprintf("sqstest: Harness.Skip[%q] gives no reason", name))
		}
	}
	slices.Sort(out)
	return out
}

// Names lists the cases Run runs, in order: the keys Harness.Skip takes.
func Names() []string {
	var out []string
	for _, c := range suite() {
		out = append(out, c.name)
	}
	return out
}

// env gives a case short helpers over the harness.
type env struct {
	h   Harness
	api sqsfake.API
	seq *atomic.Int64 // numbers the run's queue names
	// base is the context of the case's calls: nil (Background) under Run;
	// under Check, Check's context while the case runs, and one that
	// Check's cancellation leaves alone, bounded, while its cleanups run.
	base context.Context
}

func (e *env) ctx() context.Context {
	if e.base == nil {
		return context.Background()
	}
	return e.base
}

func (e *env) queue(t caseT, attrs map[string]string) string {
	t.Helper()
	return e.createQueue(t, "std", attrs)
}

func (e *env) fifo(t caseT, attrs map[string]string) string {
	t.Helper()
	return e.createQueue(t, "q.fifo", attrs)
}

func (e *env) send(t caseT, url, body string, fns ...func(*sqs.SendMessageInput)) *sqs.SendMessageOutput {
	t.Helper()
	in := &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)}
	for _, fn := range fns {
		fn(in)
	}
	out, err := e.api.SendMessage(e.ctx(), in)
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	return out
}

func group(g string) func(*sqs.SendMessageInput) {
	return func(in *sqs.SendMessageInput) { in.MessageGroupId = aws.String(g) }
}

func dedup(d string) func(*sqs.SendMessageInput) {
	return func(in *sqs.SendMessageInput) { in.MessageDeduplicationId = aws.String(d) }
}

func (e *env) sendFIFO(t caseT, url, g, body string) *sqs.SendMessageOutput {
	t.Helper()
	return e.send(t, url, body, group(g), dedup(body))
}

// receive does one receive without waiting unless in says otherwise.
func (e *env) receive(t caseT, url string, fns ...func(*sqs.ReceiveMessageInput)) []types.Message {
	t.Helper()
	in := &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, MessageSystemAttributeNames: []types.MessageSystemAttributeName{"All"}, MessageAttributeNames: []string{"All"}}
	for _, fn := range fns {
		fn(in)
	}
	out, err := e.api.ReceiveMessage(e.ctx(), in)
	if err != nil {
		t.Fatalf("receive: %v", err)
	}
	return out.Messages
}

func visibility(s int32) func(*sqs.ReceiveMessageInput) {
	return func(in *sqs.ReceiveMessageInput) { in.VisibilityTimeout = s }
}

func maxMessages(n int32) func(*sqs.ReceiveMessageInput) {
	return func(in *sqs.ReceiveMessageInput) { in.MaxNumberOfMessages = n }
}

func wait(s int32) func(*sqs.ReceiveMessageInput) {
	return func(in *sqs.ReceiveMessageInput) { in.WaitTimeSeconds = s }
}

func (e *env) delete(t caseT, url string, m types.Message) {
	t.Helper()
	if _, err := e.api.DeleteMessage(e.ctx(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
		t.Fatalf("delete: %v", err)
	}
}

func (e *env) changeVisibility(url string, m types.Message, s int32) error {
	_, err := e.api.ChangeMessageVisibility(e.ctx(), &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: s})
	return err
}

// attrs reads queue attributes.
func (e *env) attrs(t caseT, url string, names ...types.QueueAttributeName) map[string]string {
	t.Helper()
	if len(names) == 0 {
		names = []types.QueueAttributeName{"All"}
	}
	out, err := e.api.GetQueueAttributes(e.ctx(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: names})
	if err != nil {
		t.Fatalf("get queue attributes: %v", err)
	}
	return out.Attributes
}

// counts returns the visible, in-flight and delayed counters.
func (e *env) counts(t caseT, url string) (visible, inFlight, delayed int) {
	t.Helper()
	a := e.attrs(t, url)
	n := func(k string) int { v, _ := strconv.Atoi(a[k]); return v }
	return n("ApproximateNumberOfMessages"), n("ApproximateNumberOfMessagesNotVisible"), n("ApproximateNumberOfMessagesDelayed")
}

func bodies(msgs []types.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = aws.ToString(m.Body)
	}
	return out
}

// wantCode fails unless err is an API error with code. A backend with
// PrefixedErrorCodes may add the AWS.SimpleQueueService. prefix.
func (e *env) wantCode(t caseT, err error, code string) {
	t.Helper()
	if err == nil {
		t.Fatalf("expect error %s, got none", code)
	}
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("expect API error %s, got %T: %v", code, err, err)
	}
	got := apiErr.ErrorCode()
	if got == code {
		return
	}
	if trimmed := strings.TrimPrefix(got, "AWS.SimpleQueueService."); trimmed == code && e.h.PrefixedErrorCodes {
		t.Logf("accepting %s for %s: the harness declares PrefixedErrorCodes", got, code)
		return
	}
	t.Fatalf("expect error code %s, got %s (%v)", code, got, err)
}

// wantType fails unless err wraps a *T.
func wantType[T any, PT interface {
	*T
	error
}](t caseT, err error) {
	t.Helper()
	var target PT
	if !errors.As(err, &target) {
		t.Fatalf("expect %T, got %T: %v", target, err, err)
	}
}

func equal[T comparable](t caseT, what string, want, got T) {
	t.Helper()
	if want != got {
		t.Fatalf("%s: expect %v, got %v", what, want, got)
	}
}

func equalSlices[T comparable](t caseT, what string, want, got []T) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("%s: expect %v, got %v", what, want, got)
	}
	for i := range want {
		if want[i] != got[i] {
			t.Fatalf("%s: expect %v, got %v", what, want, got)
		}
	}
}

// seconds is a real-time-friendly short duration with margin.
func seconds(n float64) time.Duration { return time.Duration(n * float64(time.Second)) }
