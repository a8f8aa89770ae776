package sqstest

import (
	"slices"
	"testing"
)

// A skip must name a case and give a reason: a renamed case cannot leave a
// stale skip behind, and nothing is skipped silently.
func TestSkipMustNameACaseAndGiveAReason(t *testing.T) {
	all := []testCase{{name: "queue/a"}, {name: "queue/b"}}
	for _, tc := range []struct {
		what string
		skip map[string]string
		want []string
	}{
		{"none", nil, nil},
		{"a case with a reason", map[string]string{"queue/a": "lacks it"}, nil},
		{"no such case", map[string]string{"queue/gone": "lacks it"}, []string{`sqstest: Harness.Skip names "queue/gone", which is no case of this suite (sqstest.Names lists them)`}},
		{"no reason", map[string]string{"queue/b": ""}, []string{`sqstest: Harness.Skip["queue/b"] gives no reason`}},
	} {
		t.Run(tc.what, func(t *testing.T) {
			if got := skipProblems(tc.skip, all); !slices.Equal(tc.want, got) {
				t.Errorf("expect %q, got %q", tc.want, got)
			}
		})
	}
}
