package consumer

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/sqskit/sqskit/internal/telemetry"
)

// Health returns an http.Handler for Kubernetes-style probes of cs:
//
//   - GET /livez answers 200 unless a consumer's Run returned an error (the
//     queue does not exist, access is denied, invalid options): that
//     process no longer does its job, and a restart is the remedy. A
//     consumer not started yet, running, or stopped because its ctx ended
//     is live: failing liveness during a graceful shutdown would only
//     get the pod killed before it finished. Calling Run again clears it.
//   - GET /readyz answers 200 when every consumer is ready (see
//     Status.Ready), 503 otherwise.
//
// The body is plain text, one line per consumer: its queue's name, its
// state and, when not ready, why ("orders receiving ready", "jobs
// starting not ready: reading the queue's attributes"). Other paths
// answer 404; HEAD is served like GET. Mount it on your own mux, as is or
// under a prefix:
//
//	mux.Handle("/", consumer.Health(c1, c2))
//	mux.Handle("/health/", http.StripPrefix("/health", consumer.Health(c1, c2)))
//
// Nil consumers are skipped; with none, both probes answer 200 ("no
// consumers").
func Health(cs ...*Consumer) http.Handler {
	list := make([]*Consumer, 0, len(cs))
	for _, c := range cs {
		if c != nil {
			list = append(list, c)
		}
	}
	return health(list)
}

type health []*Consumer

func (h health) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	var live bool
	switch req.URL.Path {
	case "/livez":
		live = true
	case "/readyz":
	default:
		http.NotFound(w, req)
		return
	}
	var b strings.Builder
	ok := true
	if len(h) == 0 {
		b.WriteString("no consumers\n")
	}
	for _, c := range h {
		s := c.Status()
		name := telemetry.QueueName(s.Queue)
		switch {
		case live && s.State == StateStopped && s.RunError != nil:
			ok = false
			fmt.Fprintf(&b, "%s %s not live: %s\n", name, s.State, oneLine(s.RunError.Error()))
		case live:
			fmt.Fprintf(&b, "%s %s live\n", name, s.State)
		case s.Ready:
			fmt.Fprintf(&b, "%s %s ready\n", name, s.State)
		default:
			ok = false
			fmt.Fprintf(&b, "%s %s not ready: %s\n", name, s.State, oneLine(s.NotReady))
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if !ok {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	if req.Method == http.MethodGet {
		_, _ = w.Write([]byte(b.String()))
	}
}

// oneLine keeps a reason on its line: an error may hold newlines.
func oneLine(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r", " "), "\n", " ")
}
