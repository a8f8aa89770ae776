package fifo_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqskit/sqskit/fifo"
)

// scriptedSQS answers the SDK's HTTP requests: the first failures requests
// are stored and then answered with a 500 (a lost acknowledgement), the rest
// succeed. It counts the copies stored per body.
type scriptedSQS struct {
	mu       sync.Mutex
	failures int
	requests int
	copies   map[string]int
}

func (s *scriptedSQS) Do(r *http.Request) (*http.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests++
	var in struct {
		MessageBody string
		Entries     []struct{ Id, MessageBody string }
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		return nil, err
	}
	md5hex := func(b string) string { sum := md5.Sum([]byte(b)); return hex.EncodeToString(sum[:]) }
	var out any
	if len(in.Entries) == 0 {
		s.copies[in.MessageBody]++
		out = map[string]string{"MessageId": fmt.Sprint("m", s.requests), "MD5OfMessageBody": md5hex(in.MessageBody)}
	} else {
		var ok []map[string]string
		for _, e := range in.Entries {
			s.copies[e.MessageBody]++
			ok = append(ok, map[string]string{"Id": e.Id, "MessageId": fmt.Sprint("m", s.requests, e.Id), "MD5OfMessageBody": md5hex(e.MessageBody)})
		}
		out = map[string]any{"Successful": ok, "Failed": []any{}}
	}
	status, body := http.StatusOK, []byte(nil)
	if s.failures > 0 {
		s.failures--
		status, body = http.StatusInternalServerError, []byte(`{"__type":"com.amazonaws.sqs#InternalError","message":"stored, then failed"}`)
	} else {
		body, _ = json.Marshal(out)
	}
	return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
		Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Request: r}, nil
}

// With the SDK's standard retryer (3 requests per call), sqskit stacks its
// SendMaxAttempts calls on top, and Unconfirmed counts the requests that
// may have left a copy, the SDK's own retries included: the copies on the
// queue match it.
func TestUnconfirmedCountsTheSDKsRetries(t *testing.T) {
	cases := []struct {
		name     string
		failures int
		batch    bool
		requests int
		err      bool
	}{
		{"SDK retry succeeds", 1, false, 2, false},
		{"SDK gives up, sqskit retries", 4, false, 5, false},
		{"every request fails", 100, false, 9, true},
		{"batch SDK retry succeeds", 2, true, 3, false},
		{"batch, every request fails", 100, true, 9, true},
	}
	for _, c := range cases {
		synctest.Test(t, func(t *testing.T) {
			backend := &scriptedSQS{failures: c.failures, copies: map[string]int{}}
			client := sqs.New(sqs.Options{Region: "us-east-1", HTTPClient: backend,
				Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
			s, err := fifo.NewSender(client, "https://sqs.us-east-1.amazonaws.com/000000000000/std")
			if err != nil {
				t.Fatal(err)
			}
			var res fifo.Result
			if c.batch {
				res = s.SendBatch(context.Background(), []fifo.Message{{Body: "m"}})[0]
			} else {
				res, _ = s.Send(context.Background(), fifo.Message{Body: "m"})
			}
			if (res.Err != nil) != c.err || backend.requests != c.requests {
				t.Fatalf("%s: expect %d requests, error %v; got %d, %v", c.name, c.requests, c.err, backend.requests, res.Err)
			}
			want := backend.copies["m"] - 1 // the copy a success reports
			if c.err {
				want = backend.copies["m"]
			}
			if res.Unconfirmed != want {
				t.Errorf("%s: expect Unconfirmed %d (copies %d), got %d", c.name, want, backend.copies["m"], res.Unconfirmed)
			}
		})
	}
}
