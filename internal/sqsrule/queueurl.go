package sqsrule

import (
	"net/url"
	"strings"
)

// SameQueue reports whether two queue URLs name the same queue: the same
// account and name on the same endpoint, whether http or https, a trailing
// slash, the case of the host, or the form of an AWS host
// (sqs.REGION.amazonaws.com, the legacy REGION.queue.amazonaws.com and
// queue.amazonaws.com, sqs-fips, dual-stack api.aws). Queue names and
// account ids compare exactly, as SQS treats them. Text that is not a
// queue URL matches only itself. Settings that route messages compare
// queues with it, so that one queue spelled two ways is still caught.
func SameQueue(a, b string) bool {
	if a == b {
		return true
	}
	qa, okA := parseQueueURL(a)
	qb, okB := parseQueueURL(b)
	return okA && okB && qa == qb
}

// queueID is what identifies a queue in its URL.
type queueID struct{ endpoint, account, name string }

func parseQueueURL(s string) (queueID, bool) {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.Scheme != "http" && u.Scheme != "https" {
		return queueID{}, false
	}
	segments := strings.Split(strings.Trim(u.Path, "/"), "/")
	if len(segments) != 2 || segments[0] == "" || segments[1] == "" {
		return queueID{}, false
	}
	return queueID{endpoint: endpoint(strings.ToLower(u.Host)), account: segments[0], name: segments[1]}, true
}

// endpoint names an AWS host by its region (unique across partitions), so
// that its several spellings agree; any other host (an emulator) is itself,
// port included.
func endpoint(host string) string {
	for _, suffix := range []string{".amazonaws.com", ".amazonaws.com.cn", ".api.aws"} {
		if !strings.HasSuffix(host, suffix) {
			continue
		}
		if host == "queue.amazonaws.com" {
			return "aws/us-east-1"
		}
		for label := range strings.SplitSeq(strings.TrimSuffix(host, suffix), ".") {
			if isRegion(label) {
				return "aws/" + label
			}
		}
	}
	return host
}

// isRegion reports whether a host label looks like a region: letters in
// dash-separated words ending with a number, as eu-west-1 or
// us-gov-east-1.
func isRegion(label string) bool {
	words := strings.Split(label, "-")
	if len(words) < 3 {
		return false
	}
	for i, w := range words {
		if w == "" {
			return false
		}
		for j := 0; j < len(w); j++ {
			if c := w[j]; i == len(words)-1 && !isDigit(c) || i < len(words)-1 && (c < 'a' || c > 'z') {
				return false
			}
		}
	}
	return true
}
