package consumer

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/sqsfake"
)

// probe serves one request to h and returns its status and body.
func probe(t *testing.T, h http.Handler, method, path string) (int, string) {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(method, path, nil))
	body, err := io.ReadAll(w.Result().Body)
	if err != nil {
		t.Fatal(err)
	}
	return w.Code, string(body)
}

// /readyz answers 503 until every consumer is ready, naming each queue
// with its state and, when not ready, why; /livez answers 200 meanwhile,
// and after a consumer stopped because its ctx ended.
func TestHealthServesLivenessAndReadiness(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fast, slow := newQueue(t, "orders", nil), newQueue(t, "jobs", nil)
		slow.srv.Inject(sqsfake.Fault{Op: "GetQueueAttributes", Latency: time.Second})
		noop := func(context.Context, *handler.Message) error { return nil }
		c1, c2 := newConsumer(t, fast, noop), newConsumer(t, slow, noop)
		h := Health(c1, nil, c2)
		if code, body := probe(t, h, http.MethodGet, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "orders not started not ready: not started\n") {
			t.Fatalf("expect 503 before Run, got %d %q", code, body)
		}
		stop1, stop2 := started(t, c1), started(t, c2)
		time.Sleep(100 * time.Millisecond)
		code, body := probe(t, h, http.MethodGet, "/readyz")
		if want := "orders receiving ready\njobs starting not ready: starting: reading the queue's attributes\n"; code != http.StatusServiceUnavailable || body != want {
			t.Fatalf("expect 503 %q, got %d %q", want, code, body)
		}
		if code, body := probe(t, h, http.MethodGet, "/livez"); code != http.StatusOK || body != "orders receiving live\njobs starting live\n" {
			t.Fatalf("expect both live, got %d %q", code, body)
		}
		time.Sleep(time.Second)
		if code, body := probe(t, h, http.MethodGet, "/readyz"); code != http.StatusOK || body != "orders receiving ready\njobs receiving ready\n" {
			t.Fatalf("expect 200 once both read their queue, got %d %q", code, body)
		}
		if code, body := probe(t, h, http.MethodHead, "/readyz"); code != http.StatusOK || body != "" {
			t.Errorf("expect HEAD 200 without a body, got %d %q", code, body)
		}
		if err := stop2(); err != nil {
			t.Fatal(err)
		}
		if code, body := probe(t, h, http.MethodGet, "/livez"); code != http.StatusOK || !strings.Contains(body, "jobs stopped live") {
			t.Errorf("expect a consumer stopped by its ctx still live, got %d %q", code, body)
		}
		if code, _ := probe(t, h, http.MethodGet, "/readyz"); code != http.StatusServiceUnavailable {
			t.Errorf("expect a stopped consumer not ready, got %d", code)
		}

		if err := stop1(); err != nil {
			t.Fatal(err)
		}
	})
}

// A consumer whose Run failed fails liveness; running it again clears it.
func TestHealthLivenessFailsAfterRunError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newQueue(t, "orders", nil)
		c := newConsumer(t, f, func(context.Context, *handler.Message) error { return nil })
		if _, err := f.client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: &f.url}); err != nil {
			t.Fatal(err)
		}
		if err := c.Run(context.Background()); err == nil {
			t.Fatal("expect Run to fail on a deleted queue")
		}
		mux := http.NewServeMux()
		mux.Handle("/health/", http.StripPrefix("/health", Health(c)))
		code, body := probe(t, mux, http.MethodGet, "/health/livez")
		if code != http.StatusServiceUnavailable || !strings.HasPrefix(body, "orders stopped not live: ") || strings.Count(body, "\n") != 1 {
			t.Fatalf("expect 503 naming the queue on one line, got %d %q", code, body)
		}
	})
}

// Health with no consumer (or only nil ones) answers 200; unknown paths
// 404 and other methods 405.
func TestHealthEdges(t *testing.T) {
	h := Health(nil)
	for _, path := range []string{"/livez", "/readyz"} {
		if code, body := probe(t, h, http.MethodGet, path); code != http.StatusOK || body != "no consumers\n" {
			t.Errorf("%s: expect 200 no consumers, got %d %q", path, code, body)
		}
	}
	if code, _ := probe(t, h, http.MethodGet, "/healthz"); code != http.StatusNotFound {
		t.Errorf("expect 404, got %d", code)
	}
	if code, _ := probe(t, h, http.MethodPost, "/readyz"); code != http.StatusMethodNotAllowed {
		t.Errorf("expect 405, got %d", code)
	}
}
