package sqsfake

import (
	"testing"
	"time"
)

// dueAt is exact: at dueAt(k) the task may move k messages, a microsecond
// earlier only k-1, so a long poll sleeping until dueAt never wakes early
// and spins.
func TestMoveTaskDueAt(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, rate := range []int{1, 3, 7, 499, 500} {
		task := &moveTask{rate: rate, started: start, toMove: 1 << 40}
		for k := int64(1); k <= 1000; k++ {
			at := task.dueAt(k)
			if got := task.due(at); got < k {
				t.Fatalf("rate %d: due(dueAt(%d)) = %d", rate, k, got)
			}
			if got := task.due(at.Add(-time.Microsecond)); got >= k {
				t.Fatalf("rate %d: due a microsecond before dueAt(%d) = %d", rate, k, got)
			}
		}
	}
}
