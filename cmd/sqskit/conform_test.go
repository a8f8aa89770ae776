package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sqskit/sqskit/internal/fauxqs"
	"github.com/sqskit/sqskit/sqsfake"
	"github.com/sqskit/sqskit/sqstest"
)

// conform against fauxqs with its known gaps gives the verdicts sqstest's
// own fauxqs run gives (TestConformanceFauxqs): compared case by case with
// a direct sqstest.Check on the same harness.
func TestConformFauxqsMatchesSqstest(t *testing.T) {
	emu := startFauxqs(t)

	got := runBinary(t, emu.Endpoint, "conform", "--known-gaps", "fauxqs", "--prefix", "cli-", "-o", "json")
	if got.code != exitOK {
		t.Fatalf("expect exit 0 (no case fails with the known gaps), got %d:\n%s\n%s", got.code, got.stderr, got.stdout)
	}
	var rep conformReport
	parseJSON(t, got.stdout, &rep)

	want, err := sqstest.Check(t.Context(), sqstest.Harness{Client: emu.Client(), Prefix: "direct-", Skip: fauxqs.Skips(), PrefixedErrorCodes: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != len(want) || len(want) != len(sqstest.Names()) {
		t.Fatalf("expect %d results, got %d from conform and %d from Check", len(sqstest.Names()), len(rep.Results), len(want))
	}
	for i, w := range want {
		g := rep.Results[i]
		if g.Case != w.Case || g.Verdict != w.Verdict || (w.Verdict == sqstest.Skipped && g.Reason != w.Reason) {
			t.Errorf("case %s: expect %s (%s), got %s %s (%s)", w.Case, w.Verdict, w.Reason, g.Case, g.Verdict, g.Reason)
		}
	}
	if rep.Failed != 0 || rep.Passed+rep.Skipped != len(want) {
		t.Errorf("expect every case passed or skipped, got %d passed, %d skipped, %d failed", rep.Passed, rep.Skipped, rep.Failed)
	}
}

// A failing case exits 4, with the table naming it; the JSON form has its
// reason. sqsfake in process with a fault that breaks every purge.
func TestConformExitsFourOnFailure(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole suite")
	}
	srv := sqsfake.New()
	srv.Inject(sqsfake.Fault{Op: "PurgeQueue"})
	got := invoke(t, srv, "", "conform")
	if got.code != exitNonConformant {
		t.Fatalf("expect exit %d, got %d: %s", exitNonConformant, got.code, got.stderr)
	}
	if !strings.Contains(got.stdout, "fail") || !strings.Contains(got.stdout, "failed against ") {
		t.Errorf("expect failing cases in the table, got:\n%s", got.stdout)
	}
	got = invoke(t, srv, "", "conform", "-o", "json")
	var rep conformReport
	parseJSON(t, got.stdout, &rep)
	if rep.Failed == 0 || rep.Passed == 0 {
		t.Errorf("expect some cases failed and others passed, got %d passed, %d failed", rep.Passed, rep.Failed)
	}
	if got := invoke(t, srv, "", "conform", "--known-gaps", "localstack"); got.code != exitUsage {
		t.Errorf("expect exit %d for an unknown --known-gaps, got %d", exitUsage, got.code)
	}
}

// An endpoint that is down, answers something that is not SQS, or accepts
// the connection and never answers: conform says so and exits 1, within a
// bound, instead of reporting 170 "failed" cases (exit 4, as if the endpoint
// were a non-conformant SQS) or waiting forever.
func TestConformUnreachableEndpointFailsFast(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_ENDPOINT_URL_SQS", "")
	defer func(d time.Duration) { conformPreflightTimeout = d }(conformPreflightTimeout)
	conformPreflightTimeout = 2 * time.Second

	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL
	down.Close()
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html>hello</html>")
	}))
	defer garbage.Close()
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer hang.Close()
	defer close(release)

	for name, endpoint := range map[string]string{"down": downURL, "garbage": garbage.URL, "hang": hang.URL} {
		t.Run(name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			a := &app{term: terminal{in: strings.NewReader(""), out: &out, err: &errOut}}
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			start := time.Now()
			code := runApp(ctx, []string{"conform", "--endpoint-url", endpoint, "--region", "us-east-1"}, a)
			if code != exitFailed || !strings.Contains(errOut.String(), endpoint) || out.Len() != 0 {
				t.Errorf("expect exit 1 naming %s and no table, got %d\nstdout:\n%s\nstderr:\n%s", endpoint, code, out.String(), errOut.String())
			}
			if ctx.Err() != nil {
				t.Errorf("conform was still running after %v", time.Since(start))
			}
		})
	}
}
