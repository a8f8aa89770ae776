package main

import (
	"strings"
	"testing"

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
