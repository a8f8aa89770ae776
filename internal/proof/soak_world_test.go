package proof

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/sqsfake"
)

// soakTiming is the scenario's clock: sqsfake runs it in a synctest
// bubble with SQS's own defaults, the emulator in real time, shortened.
type soakTiming struct {
	visibility       int32         // the main queues' VisibilityTimeout, s
	slow             time.Duration // a slow handler: past the visibility timeout
	handlerMax       time.Duration // an ordinary handler: up to this
	redelivery       backoff.Strategy
	replayBackoff    backoff.Strategy
	restartMin       time.Duration // consumers and the replayer's Run restart
	restartMax       time.Duration // at random between these
	drainEvery       time.Duration // Drain passes, at random up to this
	produceGap       time.Duration // between a producer's batches
	faultsAfter      time.Duration // faults go on this long after production ends
	deadline         time.Duration // everything must be settled by then
	shutdown         time.Duration // consumers' ShutdownTimeout
	waitTime         time.Duration // long polls
	replayVisibility time.Duration
	lambdaTimeout    time.Duration // an invocation's deadline
	runGrace         time.Duration // a Run must return this long after its ctx ended
}

// fakeTiming is SQS's own scale, for the synctest bubble: hours pass in
// seconds.
var fakeTiming = soakTiming{
	visibility: 30, slow: 45 * time.Second, handlerMax: 2 * time.Second,
	replayBackoff: backoff.EqualJitter{Base: 20 * time.Second, Cap: 5 * time.Minute},
	restartMin:    10 * time.Second, restartMax: 3 * time.Minute, drainEvery: 5 * time.Minute,
	produceGap: 100 * time.Millisecond, faultsAfter: 10 * time.Minute, deadline: 12 * time.Hour,
	shutdown: 10 * time.Second, waitTime: 20 * time.Second, replayVisibility: time.Minute,
	lambdaTimeout: 5 * time.Minute, runGrace: 2 * time.Minute,
}

// realTiming is for the emulator, in real time: the same scenario in
// seconds instead of minutes.
var realTiming = soakTiming{
	visibility: 3, slow: 4 * time.Second, handlerMax: 20 * time.Millisecond,
	redelivery:    backoff.EqualJitter{Base: 200 * time.Millisecond, Cap: time.Second},
	replayBackoff: backoff.EqualJitter{Base: time.Second, Cap: 2 * time.Second},
	restartMin:    2 * time.Second, restartMax: 8 * time.Second, drainEvery: 4 * time.Second,
	produceGap: 20 * time.Millisecond, deadline: 3 * time.Minute,
	shutdown: 2 * time.Second, waitTime: time.Second, replayVisibility: 5 * time.Second,
	lambdaTimeout: 30 * time.Second, runGrace: 30 * time.Second,
}

// soakWorld is the backend, its queues and the faults on it.
type soakWorld struct {
	t        *testing.T
	seed     uint64
	api      *sqs.Client
	srv      *sqsfake.Server // nil on the emulator
	emulator bool
	timing   soakTiming
	operator string
	queues   []*soakQueue
	faults   map[string]*sqsfake.FaultHandle

	faultMu  sync.Mutex
	faultRng *rand.Rand
	faultsOn atomic.Bool

	calls      func() int64 // HTTP requests, on the emulator
	restarts   atomic.Int64
	lambdaRuns atomic.Int64
	drains     atomic.Int64
	drainMu    sync.Mutex
	drained    map[string]int // Report counts summed over Drain passes
	peakHeap   atomic.Uint64
}

// soakQueue is a main queue, its dead-letter queue and everything that
// works on them.
type soakQueue struct {
	w        *soakWorld
	name     string // "standard" or "FIFO"
	fifo     bool
	index    int
	main     string
	dlq      string
	mainArn  string
	n        int // messages to send
	groups   int
	led      *ledger
	forged   []forgedMessage
	forgedMu sync.Mutex
}

// create makes a queue and returns its URL, on either backend (a unique
// name on the emulator, which outlives the test).
func (w *soakWorld) create(name string, isFIFO bool, attrs map[string]string) string {
	w.t.Helper()
	if w.emulator {
		name += "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	}
	if isFIFO {
		name += ".fifo"
		attrs["FifoQueue"] = "true"
	}
	out, err := w.api.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		w.t.Fatalf("create %s: %v", name, err)
	}
	return *out.QueueUrl
}

func (w *soakWorld) arn(url string) string {
	w.t.Helper()
	out, err := w.api.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{"QueueArn"}})
	if err != nil {
		w.t.Fatal(err)
	}
	return out.Attributes["QueueArn"]
}

// newSoakWorld creates the queues: for each kind a main queue redriving to
// its dead-letter queue (maxReceiveCount 4 on standard; 6 on FIFO, the
// consumer doc's bound for 3 attempts and 2 consumers), and one operator
// queue.
func newSoakWorld(t *testing.T, seed uint64, api *sqs.Client, srv *sqsfake.Server, timing soakTiming, messages int) *soakWorld {
	w := &soakWorld{t: t, seed: seed, api: api, srv: srv, emulator: srv == nil, timing: timing, drained: map[string]int{},
		faultRng: rand.New(rand.NewPCG(seed, 0xfa17))}
	w.operator = w.create("operator", false, map[string]string{})
	for i, kind := range []string{"standard", "FIFO"} {
		q := &soakQueue{w: w, name: kind, fifo: kind == "FIFO", index: i, n: messages / 2, groups: 1}
		receives := 4
		if q.fifo {
			receives, q.groups = 6, 40
		}
		q.dlq = w.create("dlq", q.fifo, map[string]string{})
		q.main = w.create("main", q.fifo, map[string]string{
			"VisibilityTimeout": strconv.Itoa(int(timing.visibility)),
			"RedrivePolicy":     fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":%d}`, w.arn(q.dlq), receives),
		})
		q.mainArn = w.arn(q.main)
		q.led = newLedger(q.n, q.fifo)
		w.queues = append(w.queues, q)
	}
	if srv != nil {
		srv.ResetCalls()
	}
	return w
}

// errNetwork is a failure in transit that is no API error: the in-process
// client's transport returns it, as a reset connection would.
var errNetwork = errors.New("soak: connection reset by peer")

// injectFaults puts faults on every operation of every queue, each drawn
// at random per call while faultsOn: throttling, server errors, network
// errors, lost acknowledgements (the call took effect), latency, and
// failed batch entries.
func (w *soakWorld) injectFaults() {
	w.faultsOn.Store(true)
	roll := func(p float64) func(string, any) bool {
		return func(string, any) bool {
			if !w.faultsOn.Load() {
				return false
			}
			w.faultMu.Lock()
			defer w.faultMu.Unlock()
			return w.faultRng.Float64() < p
		}
	}
	batchRoll := func(p float64) func(string, any) bool {
		r := roll(p)
		return func(op string, in any) bool { return strings.HasSuffix(op, "Batch") && r(op, in) }
	}
	entryRoll := func(p float64) func(int, string) bool {
		r := roll(p)
		return func(int, string) bool { return r("", nil) }
	}
	w.faults = map[string]*sqsfake.FaultHandle{
		"throttled":              w.srv.Inject(sqsfake.Fault{Err: sqsfake.ErrThrottled, Match: roll(0.02)}),
		"server error":           w.srv.Inject(sqsfake.Fault{Err: sqsfake.ErrInternal, Match: roll(0.02)}),
		"network error":          w.srv.Inject(sqsfake.Fault{Err: errNetwork, Match: roll(0.01)}),
		"lost acknowledgement":   w.srv.Inject(sqsfake.Fault{Err: sqsfake.ErrInternal, AfterApply: true, Match: roll(0.01)}),
		"dropped after applying": w.srv.Inject(sqsfake.Fault{DropConnection: true, AfterApply: true, Match: roll(0.005)}),
		"latency 200ms":          w.srv.Inject(sqsfake.Fault{Latency: 200 * time.Millisecond, Match: roll(0.05)}),
		"latency 5s":             w.srv.Inject(sqsfake.Fault{Latency: 5 * time.Second, Match: roll(0.005)}),
		"failed batch entries": w.srv.Inject(sqsfake.Fault{Entries: &sqsfake.EntryFault{Code: "InternalError", Match: entryRoll(0.1)},
			Match: batchRoll(0.05)}),
	}
}

// clearFaults stops every fault, for the run to settle.
func (w *soakWorld) clearFaults() { w.faultsOn.Store(false) }

// reliably repeats a call of the test's own (not the library's) until it
// works: the test's bookkeeping goes through the same faults.
func reliably[T any](call func() (T, error)) T {
	for i := 0; ; i++ {
		v, err := call()
		if err == nil || i == 1000 {
			return v
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// depth is every message a queue holds, visible, in flight and delayed.
func (w *soakWorld) depth(url string) int {
	out := reliably(func() (*sqs.GetQueueAttributesOutput, error) {
		return w.api.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{"All"}})
	})
	if out == nil {
		return -1
	}
	n := 0
	for _, a := range []string{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"} {
		k, _ := strconv.Atoi(out.Attributes[a])
		n += k
	}
	return n
}

// chance mixes the seed with parts into a number in [0, 1), the same for
// the same parts. FNV alone barely changes its high bits for a change in
// the last byte (a receive count, an attempt), so its sum goes through
// SplitMix64's finaliser.
func (w *soakWorld) chance(parts ...any) float64 {
	h := fnv.New64a()
	fmt.Fprint(h, w.seed)
	for _, p := range parts {
		fmt.Fprint(h, "|", p)
	}
	z := h.Sum64()
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	z ^= z >> 31
	return float64(z>>11) / (1 << 53)
}

// The fate of message i: poison (always fails, about 1 %), permanent (its
// handler says it never can succeed: parked at once, about 1 %), slow
// (outlives the visibility timeout, about 0.5 %), and for each delivery a
// transient failure (about 10 %), all fixed by the seed.
func (q *soakQueue) poison(i int) bool { return q.w.chance(q.name, i, "poison") < 0.01 }
func (q *soakQueue) permanent(i int) bool {
	return !q.poison(i) && q.w.chance(q.name, i, "permanent") < 0.01
}
func (q *soakQueue) slow(i int) bool {
	return !q.poison(i) && !q.permanent(i) && q.w.chance(q.name, i, "slow") < 0.005
}
func (q *soakQueue) transient(i, receiveCount, attempt int) bool {
	return q.w.chance(q.name, i, receiveCount, attempt) < 0.10
}

// body names message i: "s-0000042", or "f-07-0000042" with its group.
func (q *soakQueue) body(i int) string {
	if q.fifo {
		return fmt.Sprintf("f-%02d-%07d", q.group(i), i)
	}
	b := fmt.Sprintf("s-%07d", i)
	if i%997 == 0 { // now and then a large one: batches split by size
		b += " " + strings.Repeat("x", 150<<10)
	}
	return b
}

func (q *soakQueue) group(i int) int { return i % q.groups }

// parseBody returns the message index a body names, or -1.
func (q *soakQueue) parseBody(body string) int {
	if len(body) < 9 {
		return -1
	}
	id := body
	if cut, _, ok := strings.Cut(body, " "); ok {
		id = cut
	}
	n, err := strconv.Atoi(id[len(id)-7:])
	if err != nil || n < 0 || n >= q.n {
		return -1
	}
	return n
}

// attributes of message i: a trace context on all; ten in all on every
// seventh, nine on the next, so replays move attributes aside to make room
// and Restore has to give them back.
func (q *soakQueue) attributes(i int) map[string]types.MessageAttributeValue {
	a := map[string]types.MessageAttributeValue{
		"traceparent": {DataType: aws.String("String"), StringValue: aws.String(fmt.Sprintf("00-%032x-%016x-01", i+1, i+7))},
	}
	extra := 1
	switch i % 7 {
	case 0:
		extra = 9
	case 1:
		extra = 8
	}
	for k := range extra {
		name := fmt.Sprintf("a%d", k)
		switch k % 3 {
		case 0:
			a[name] = types.MessageAttributeValue{DataType: aws.String("Number"), StringValue: aws.String(strconv.Itoa(i * k))}
		case 1:
			a[name] = types.MessageAttributeValue{DataType: aws.String("String.tag"), StringValue: aws.String(q.name)}
		default:
			a[name] = types.MessageAttributeValue{DataType: aws.String("Binary"), BinaryValue: []byte{byte(i), byte(k), 0xff}}
		}
	}
	return a
}

// awaitReturn waits for a Run to return after its ctx ended: longer than
// grace is a hang, which ends the test with every goroutine's stack.
func (w *soakWorld) awaitReturn(what string, done <-chan error, grace time.Duration) error {
	select {
	case err := <-done:
		return err
	case <-time.After(grace):
		buf := make([]byte, 4<<20)
		buf = buf[:runtime.Stack(buf, true)]
		panic(fmt.Sprintf("soak: %s did not return %v after its ctx ended; goroutines:\n%s", what, grace, buf))
	}
}

// sampleMemory records the peak heap in use, every minute of the
// scenario's clock, until stop.
func (w *soakWorld) sampleMemory(stop <-chan struct{}, every time.Duration) {
	for {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		for {
			peak := w.peakHeap.Load()
			if ms.HeapInuse <= peak || w.peakHeap.CompareAndSwap(peak, ms.HeapInuse) {
				break
			}
		}
		select {
		case <-stop:
			return
		case <-time.After(every):
		}
	}
}
