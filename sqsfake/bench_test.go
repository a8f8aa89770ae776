package sqsfake_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/internal/fauxqs"
	"github.com/sqskit/sqskit/internal/sqsrule"
	"github.com/sqskit/sqskit/sqsfake"
)

// BenchmarkRoundTrip sends, receives and deletes messages in batches of ten
// on sqsfake in process, on sqsfake over HTTP with the real SDK client, and
// on the fauxqs emulator with the same client, in the same run, at 0 ms and
// 10 ms added per call. It reports messages per second and allocations per
// message (one op is one message).
func BenchmarkRoundTrip(b *testing.B) {
	for _, latency := range fauxqs.Latencies() {
		for _, name := range fauxqs.BackendNames() {
			b.Run(name+"/"+fauxqs.LatencyName(latency), func(b *testing.B) {
				benchRoundTrip(b, fauxqs.OpenBackend(b, name, latency).API)
			})
		}
	}
}

// BenchmarkRoundTripFloor runs the same workload with the same SDK client
// against an HTTP handler that answers from canned responses, with no queue
// behind it: the cost of the client and of loopback HTTP alone. A backend's
// own cost per message is its time per message minus this floor, and its
// msgs/s can never beat the floor's.
func BenchmarkRoundTripFloor(b *testing.B) {
	srv := &http.Server{Handler: cannedSQS(), ReadHeaderTimeout: time.Minute}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = srv.Serve(l) }()
	b.Cleanup(func() { _ = srv.Close() })
	client := fauxqs.NewClient("http://" + l.Addr().String())
	benchRoundTrip(b, client)
}

// cannedSQS answers the round trip's three calls as SQS would for its fixed
// batch of ten bodies (checksums included, which the SDK verifies), and
// CreateQueue with a fixed URL.
func cannedSQS() http.Handler {
	const body = `{"order":42,"items":["a","b"]}`
	md5 := sqsrule.MD5OfBody(body)
	var sent, received, deleted []string
	for i := range 10 {
		id := strconv.Itoa(i)
		sent = append(sent, `{"Id":"`+id+`","MessageId":"m`+id+`","MD5OfMessageBody":"`+md5+`"}`)
		received = append(received, `{"MessageId":"m`+id+`","ReceiptHandle":"h`+id+`","Body":`+strconv.Quote(body)+`,"MD5OfBody":"`+md5+`"}`)
		deleted = append(deleted, `{"Id":"`+id+`"}`)
	}
	answers := map[string]string{
		"AmazonSQS.CreateQueue":        `{"QueueUrl":"http://127.0.0.1/123456789012/floor"}`,
		"AmazonSQS.SendMessageBatch":   `{"Successful":[` + strings.Join(sent, ",") + `],"Failed":[]}`,
		"AmazonSQS.ReceiveMessage":     `{"Messages":[` + strings.Join(received, ",") + `]}`,
		"AmazonSQS.DeleteMessageBatch": `{"Successful":[` + strings.Join(deleted, ",") + `],"Failed":[]}`,
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		answer := answers[r.Header.Get("X-Amz-Target")]
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Header().Set("X-Amzn-Requestid", "floor")
		w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
		_, _ = io.WriteString(w, answer)
	})
}

// BenchmarkRoundTripHandler runs the same workload's requests, with the
// bodies and headers the SDK client sends, straight into Server.Handler: no
// client, no socket. It is sqsfake's own cost per message over the wire
// protocol (decoding, the operation, encoding), what sqsfake adds to the
// floor.
func BenchmarkRoundTripHandler(b *testing.B) {
	h := sqsfake.New().Handler()
	const queueURL = "http://127.0.0.1/123456789012/bench"
	call := func(op, body string) []byte {
		r := &http.Request{
			Method: http.MethodPost, URL: &url.URL{Path: "/"}, Host: "127.0.0.1",
			Header:        http.Header{"Content-Type": {"application/x-amz-json-1.0"}, "X-Amz-Target": {"AmazonSQS." + op}},
			Body:          io.NopCloser(strings.NewReader(body)),
			ContentLength: int64(len(body)),
		}
		w := &benchResponse{header: http.Header{}}
		h.ServeHTTP(w, r)
		if w.status != http.StatusOK {
			b.Fatalf("%s: status %d: %s", op, w.status, w.body.String())
		}
		return w.body.Bytes()
	}
	call("CreateQueue", `{"QueueName":"bench"}`)
	var send strings.Builder
	send.WriteString(`{"Entries":[`)
	for i := range 10 {
		if i > 0 {
			send.WriteByte(',')
		}
		send.WriteString(`{"Id":"` + strconv.Itoa(i) + `","MessageBody":"{\"order\":42,\"items\":[\"a\",\"b\"]}"}`)
	}
	send.WriteString(`],"QueueUrl":"` + queueURL + `"}`)
	sendBody := send.String()
	receiveBody := `{"MaxNumberOfMessages":10,"QueueUrl":"` + queueURL + `"}`
	var del []byte
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += 10 {
		call("SendMessageBatch", sendBody)
		out := call("ReceiveMessage", receiveBody)
		del = append(del[:0], `{"Entries":[`...)
		for i := 0; ; i++ {
			_, rest, ok := bytes.Cut(out, []byte(`"ReceiptHandle":"`))
			if !ok {
				break
			}
			handle, after, _ := bytes.Cut(rest, []byte(`"`))
			if i > 0 {
				del = append(del, ',')
			}
			del = append(del, `{"Id":"`+strconv.Itoa(i)+`","ReceiptHandle":"`...)
			del = append(del, handle...)
			del = append(del, `"}`...)
			out = after
		}
		del = append(del, `],"QueueUrl":"`+queueURL+`"}`...)
		call("DeleteMessageBatch", string(del))
	}
}

// benchResponse is the least an http.ResponseWriter can be.
type benchResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *benchResponse) Header() http.Header         { return w.header }
func (w *benchResponse) WriteHeader(status int)      { w.status = status }
func (w *benchResponse) Write(p []byte) (int, error) { return w.body.Write(p) }

func benchRoundTrip(b *testing.B, api sqsfake.API) {
	ctx := context.Background()
	q, err := api.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("bench-" + strconv.FormatInt(time.Now().UnixNano(), 36))})
	if err != nil {
		b.Fatal(err)
	}
	entries := make([]types.SendMessageBatchRequestEntry, 10)
	for i := range entries {
		entries[i] = types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(`{"order":42,"items":["a","b"]}`)}
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for done := 0; done < b.N; {
		if _, err := api.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: q.QueueUrl, Entries: entries}); err != nil {
			b.Fatal(err)
		}
		for got := 0; got < 10; {
			out, err := api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10})
			if err != nil {
				b.Fatal(err)
			}
			if len(out.Messages) == 0 {
				continue
			}
			del := make([]types.DeleteMessageBatchRequestEntry, len(out.Messages))
			for i, m := range out.Messages {
				del[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle}
			}
			if _, err := api.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: q.QueueUrl, Entries: del}); err != nil {
				b.Fatal(err)
			}
			got += len(out.Messages)
		}
		done += 10
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
}
