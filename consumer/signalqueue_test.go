package consumer

import (
	"testing"
	"time"
)

// A lossless signal queue (package replay's: its Report is counted on the
// hooks) keeps every signal, in order, however far the hooks lag, and
// hands over what is queued after quit; the bounded one drops what does
// not fit.
func TestLosslessSignalQueueKeepsEverySignalInOrder(t *testing.T) {
	const n = 3 * maxSignalQueue
	q := newSignalQueue(minSignalQueue, true)
	for i := range n {
		if !q.put(signal{took: time.Duration(i)}) {
			t.Fatalf("signal %d dropped", i)
		}
	}
	quit := make(chan struct{})
	for i := range n / 2 {
		s, ok := q.get(quit)
		if !ok || s.took != time.Duration(i) {
			t.Fatalf("signal %d: got %v, %v", i, s.took, ok)
		}
	}
	close(quit)
	for i := n / 2; i < n; i++ {
		if s, ok := q.get(quit); !ok || s.took != time.Duration(i) {
			t.Fatalf("after quit, signal %d: got %v, %v", i, s.took, ok)
		}
	}
	if _, ok := q.get(quit); ok {
		t.Fatal("a signal after the last")
	}

	bounded := newSignalQueue(minSignalQueue, false)
	kept := 0
	for range n {
		if bounded.put(signal{}) {
			kept++
		}
	}
	if kept != minSignalQueue {
		t.Fatalf("the bounded queue kept %d signals, want %d", kept, minSignalQueue)
	}
}
