package sqstest

import (
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// A case name is family/behaviour in lower case (what .ci/run's listing of
// skipped cases matches), and names one case only.
func TestCaseNamesAreUniqueFamilySlashBehaviour(t *testing.T) {
	valid := regexp.MustCompile(`^[a-z-]+/[a-z0-9-]+$`)
	seen := map[string]bool{}
	for _, c := range suite() {
		if !valid.MatchString(c.name) {
			t.Errorf("expect a name like family/behaviour-in-words, got %q", c.name)
		}
		if seen[c.name] {
			t.Errorf("expect one case named %q, got several", c.name)
		}
		seen[c.name] = true
	}
}

// Each case runs a function of its own, named for it (fifo/group-lock runs
// caseFIFOGroupLock), so a failing case points to its Go symbol.
func TestCaseFunctionsAreNamedForTheirCases(t *testing.T) {
	for _, c := range suite() {
		full := runtime.FuncForPC(reflect.ValueOf(c.test).Pointer()).Name()
		fn := full[strings.LastIndex(full, ".")+1:]
		want := "case" + strings.NewReplacer("/", "", "-", "").Replace(c.name)
		if !strings.EqualFold(fn, want) {
			t.Errorf("%s: expect its function named %s (any case), got %s", c.name, want, fn)
		}
	}
}
