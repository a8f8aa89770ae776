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
	quit := make(chan struct{})
	put, got := 0, 0
	take := func(k int) {
		t.Helper()
		for range k {
			s, ok := q.get(quit)
			if !ok || s.took != time.Duration(got) {
				t.Fatalf("signal %d: got %v, %v", got, s.took, ok)
			}
			got++
		}
	}
	for put < n { // the hooks lag: a little more is put than taken each round
		for range 1000 {
			if !q.put(signal{took: time.Duration(put)}) {
				t.Fatalf("signal %d dropped", put)
			}
			put++
		}
		take(700)
	}
	close(quit)
	take(put - got) // what is queued after quit is reported still
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
