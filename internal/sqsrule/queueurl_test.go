package sqsrule

import (
	"strings"
	"testing"
)

func TestSameQueueComparesQueuesNotSpellings(t *testing.T) {
	const q = "https://sqs.eu-west-1.amazonaws.com/210987654321/orders"
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{q, q, true},
		{q, q + "/", true},
		{q, "http://sqs.eu-west-1.amazonaws.com/210987654321/orders", true},
		{q, "https://SQS.EU-WEST-1.amazonaws.com/210987654321/orders", true},
		{q, "https://eu-west-1.queue.amazonaws.com/210987654321/orders", true},
		{q, "https://sqs-fips.eu-west-1.amazonaws.com/210987654321/orders", true},
		{q, "https://sqs.eu-west-1.api.aws/210987654321/orders", true},
		{"https://queue.amazonaws.com/210987654321/orders", "https://sqs.us-east-1.amazonaws.com/210987654321/orders", true},
		{"https://sqs.cn-north-1.amazonaws.com.cn/210987654321/orders", "https://cn-north-1.queue.amazonaws.com.cn/210987654321/orders", true},
		{"http://127.0.0.1:9324/000000000000/orders", "http://127.0.0.1:9324/000000000000/orders/", true},

		{q, "https://sqs.eu-west-1.amazonaws.com/210987654321/Orders", false}, // names are case-sensitive
		{q, "https://sqs.eu-west-1.amazonaws.com/210987654321/orders-dlq", false},
		{q, "https://sqs.eu-west-2.amazonaws.com/210987654321/orders", false},
		{q, "https://sqs.eu-west-1.amazonaws.com/123456789012/orders", false},
		{q, "https://sqs.eu-west-1.amazonaws.com/orders", false},
		{"http://127.0.0.1:9324/000000000000/orders", "http://127.0.0.1:9325/000000000000/orders", false},
		{"orders", "orders/", false},                                    // not URLs: only the same text matches
		{"//sqs.eu-west-1.amazonaws.com/210987654321/orders", q, false}, // no scheme: not a queue URL
		{"", q, false},
	} {
		if got := SameQueue(c.a, c.b); got != c.same {
			t.Errorf("SameQueue(%q, %q) = %v, want %v", c.a, c.b, got, c.same)
		}
		if got := SameQueue(c.b, c.a); got != c.same {
			t.Errorf("SameQueue(%q, %q) = %v, want %v (not symmetric)", c.b, c.a, got, c.same)
		}
	}
}

// SameQueue is an equivalence on anything it is given, never panics, and
// does not depend on how a queue URL's trailing slash or host case are
// written.
func FuzzSameQueue(f *testing.F) {
	f.Add("https://sqs.eu-west-1.amazonaws.com/210987654321/orders", "https://eu-west-1.queue.amazonaws.com/210987654321/orders/")
	f.Add("http://127.0.0.1:9324/000000000000/q", "http://127.0.0.1:9324/000000000000/q.fifo")
	f.Add("https://queue.amazonaws.com/1/a", "%zz")
	f.Add("", "/")
	f.Fuzz(func(t *testing.T, a, b string) {
		if !SameQueue(a, a) || !SameQueue(b, b) {
			t.Fatalf("not reflexive: %q, %q", a, b)
		}
		if SameQueue(a, b) != SameQueue(b, a) {
			t.Fatalf("not symmetric: %q, %q", a, b)
		}
		if _, ok := parseQueueURL(a); ok {
			if !SameQueue(a, a+"/") || !SameQueue(a, strings.ToUpper(a[:strings.Index(a, "://")+3])+a[strings.Index(a, "://")+3:]) {
				t.Fatalf("a queue URL differs from itself respelled: %q", a)
			}
		}
	})
}
