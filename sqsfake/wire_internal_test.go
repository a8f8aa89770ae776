package sqsfake

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// halfSent is a body whose client sent a few bytes of what it declared,
// then went away.
type halfSent struct{ sent bool }

func (b *halfSent) Read(p []byte) (int, error) {
	if b.sent {
		return 0, io.ErrUnexpectedEOF
	}
	b.sent = true
	return copy(p, `{"QueueUrl":`), nil
}

// A declared Content-Length reserves no memory: 32 requests that each
// declare the 8 MiB limit and send a dozen bytes allocate far less than one
// such reservation (256 MiB when each reserved its declared length).
func TestReadBodyReservesOnlyWhatArrives(t *testing.T) {
	const n = 32
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		r := httptest.NewRequest(http.MethodPost, "/", &halfSent{})
		r.ContentLength = maxRequestBytes
		if _, err := readBody(httptest.NewRecorder(), r); err == nil {
			t.Fatal("expect an error for a body cut short")
		}
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 16<<20 {
		t.Fatalf("expect under 16 MiB allocated for %d half-sent requests, got %d MiB", n, got>>20)
	}
}

func TestReadBodyRefusesOversize(t *testing.T) {
	for _, tc := range []struct {
		name     string
		declared int64
		body     string
	}{
		{"declared", maxRequestBytes + 1, ""},
		{"undeclared", -1, strings.Repeat("x", maxRequestBytes+1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(tc.body))
			r.ContentLength = tc.declared
			if _, err := readBody(httptest.NewRecorder(), r); !errors.Is(err, errRequestTooLarge) {
				t.Fatalf("expect errRequestTooLarge, got %v", err)
			}
		})
	}
}

func TestReadBodyReadsWholeBody(t *testing.T) {
	for _, size := range []int{0, 1, 511, 512, 513, initialBodyBuffer - 1, initialBodyBuffer, initialBodyBuffer + 1, 200 << 10} {
		body := strings.Repeat("x", size)
		for _, declared := range []int64{int64(size), -1} {
			r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
			r.ContentLength = declared
			got, err := readBody(httptest.NewRecorder(), r)
			if err != nil || string(got) != body {
				t.Errorf("size %d, declared %d: expect the body, got %d bytes, %v", size, declared, len(got), err)
			}
		}
	}
}

// A body of a declared length is read into one buffer of that length (and
// the MaxBytesReader), not copied to a bigger one before the end is found.
func TestReadBodyAllocatesOnceForDeclaredLength(t *testing.T) {
	body := strings.Repeat("x", 1000)
	sr := strings.NewReader(body)
	r := httptest.NewRequest(http.MethodPost, "/", nil)
	r.Body, r.ContentLength = io.NopCloser(sr), int64(len(body))
	w := httptest.NewRecorder()
	allocs := testing.AllocsPerRun(100, func() {
		sr.Reset(body)
		if _, err := readBody(w, r); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 2 {
		t.Errorf("expect at most 2 allocations, got %v", allocs)
	}
}

func TestMarkInvalidText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"a":"plain"}`, `{"a":"plain"}`},
		{`{"a":"\u00e9\ud83d\ude00"}`, `{"a":"\u00e9\ud83d\ude00"}`}, // a pair is one character
		{`{"a":"x\ud800y"}`, `{"a":"x\uffffy"}`},                     // a high half alone
		{`{"a":"x\udc00"}`, `{"a":"x\uffff"}`},                       // a low half alone
		{`{"a":"\ud800\ud800\udc00"}`, `{"a":"\uffff\ud800\udc00"}`},
		{`{"a":"\\ud800"}`, `{"a":"\\ud800"}`}, // an escaped backslash, then text
		{"{\"a\":\"x\xffy\"}", `{"a":"x\uffffy"}`},
		{`{"a":"\u12"}`, `{"a":"\u12"}`}, // not an escape: the decoder refuses it
	} {
		if got := string(markInvalidText([]byte(tc.in))); got != tc.want {
			t.Errorf("%s: expect %s, got %s", tc.in, tc.want, got)
		}
	}
}

func TestUUIDOf(t *testing.T) {
	for _, n := range []uint64{0, 1, 0xabcdef, 1<<48 - 1, 1 << 48, 0xfedcba9876543210, 1<<64 - 1} {
		want := fmt.Sprintf("%08x-5a5a-4000-8000-%012x", uint32(n>>48), n&0xffffffffffff)
		if got := uuidOf(n, "5a5a"); got != want {
			t.Errorf("expect %s, got %s", want, got)
		}
	}
}

// The bodies aws-sdk-go-v2 writes for the message operations take the fast
// path; bodies it does not accept go to encoding/json (FuzzDecodeFast
// checks that both read what the fast path accepts alike).
func TestDecodeFast(t *testing.T) {
	const url = `"QueueUrl":"http://127.0.0.1:9324/123456789012/orders"`
	for _, tc := range []struct {
		in   any
		body string
		fast bool
	}{
		{&sqs.SendMessageInput{}, `{"DelaySeconds":5,"MessageBody":"{\"order\":42}",` + url + `}`, true},
		{&sqs.SendMessageBatchInput{}, `{"Entries":[{"Id":"0","MessageBody":"{\"order\":42,\"items\":[\"a\",\"b\"]}"},{"Id":"1","MessageBody":"b"}],` + url + `}`, true},
		{&sqs.ReceiveMessageInput{}, `{"MaxNumberOfMessages":10,` + url + `}`, true},
		{&sqs.DeleteMessageInput{}, `{` + url + `,"ReceiptHandle":"c3FzZmFrZXwxfDJ8MQ"}`, true},
		{&sqs.DeleteMessageBatchInput{}, `{"Entries":[{"Id":"0","ReceiptHandle":"c3FzZmFrZXwxfDJ8MQ"}],` + url + `}`, true},
		{&sqs.ChangeMessageVisibilityInput{}, `{` + url + `,"ReceiptHandle":"h","VisibilityTimeout":0}`, true},
		{&sqs.ChangeMessageVisibilityBatchInput{}, `{"Entries":[{"Id":"0","ReceiptHandle":"h","VisibilityTimeout":60}],` + url + `}`, true},
		{&sqs.SendMessageInput{}, `{"MessageAttributes":{"a":{"DataType":"String","StringValue":"x"}},"MessageBody":"b",` + url + `}`, false},
		{&sqs.SendMessageInput{}, `{"messagebody":"b"}`, false},
		{&sqs.SendMessageInput{}, `{"MessageBody":"a","MessageBody":"b"}`, false},
		{&sqs.SendMessageInput{}, `{"MessageBody":null}`, false},
		{&sqs.SendMessageInput{}, `{"DelaySeconds":1.0}`, false},
		{&sqs.SendMessageInput{}, `{"MessageBody":"\ud800"}`, false},
		{&sqs.CreateQueueInput{}, `{"QueueName":"q"}`, false},
	} {
		if _, fast := decodeFast([]byte(tc.body), tc.in); fast != tc.fast {
			t.Errorf("%T %s: expect fast %v, got %v", tc.in, tc.body, tc.fast, fast)
		}
	}
}
