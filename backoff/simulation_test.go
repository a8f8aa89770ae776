package backoff

import (
	"container/heap"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"
)

// This file reproduces the experiment of Marc Brooker's "Exponential Backoff
// And Jitter" (AWS Architecture Blog, 2015): N clients each read a shared row
// and then write it conditionally on the version they read; exactly one write
// per version succeeds. Every network message takes |Normal(10 ms, 2 ms)|. A
// client whose write fails sleeps its strategy's delay (attempt counted from
// 1, base 5 ms, cap 2 s) and starts over. Work is the number of writes;
// time is when the last client succeeds.

const (
	simBase = 5 * time.Millisecond
	simCap  = 2 * time.Second
)

// simStrategies are driven through the BackOff interface, as a user of
// cenkalti's Retry would.
func simStrategies(r Random) []struct {
	name string
	new  func() BackOff
} {
	from1 := func(s Strategy) func() BackOff {
		return func() BackOff { return NewIterator(fromAttempt1{s}) }
	}
	return []struct {
		name string
		new  func() BackOff
	}{
		{"none", from1(Constant{})},
		{"exponential", from1(Exponential{Base: simBase, Cap: simCap})},
		{"full", from1(FullJitter{Base: simBase, Cap: simCap, Rand: r})},
		{"equal", from1(EqualJitter{Base: simBase, Cap: simCap, Rand: r})},
		{"decorrelated", from1(DecorrelatedJitter{Base: simBase, Cap: simCap, Rand: r})},
		{"decorrelated-literal", from1(DecorrelatedJitter{Base: simBase, Cap: simCap, Rand: r, Literal: true})},
		{"decorrelated-v2", from1(DecorrelatedJitterV2{MedianFirst: simBase, Cap: simCap, Rand: r})},
		{"randomized", from1(Randomized{Initial: simBase, Multiplier: 2, Factor: 0.5, Cap: simCap, Rand: r})},
	}
}

// fromAttempt1 counts the first retry as attempt 1, as the experiment does.
type fromAttempt1 struct{ s Strategy }

func (f fromAttempt1) Delay(attempt int, prev time.Duration) time.Duration {
	return f.s.Delay(attempt+1, prev)
}

type simEvent struct {
	at      time.Duration
	client  int
	write   bool // false: a read reaches the row; true: a write does
	version int
}

type simQueue []simEvent

func (q simQueue) Len() int           { return len(q) }
func (q simQueue) Less(i, j int) bool { return q[i].at < q[j].at }
func (q simQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *simQueue) Push(x any)        { *q = append(*q, x.(simEvent)) }
func (q *simQueue) Pop() any          { old := *q; e := old[len(old)-1]; *q = old[:len(old)-1]; return e }
func (q *simQueue) add(e simEvent)    { heap.Push(q, e) }
func (q *simQueue) next() simEvent    { return heap.Pop(q).(simEvent) }
func latency(r *rand.Rand) time.Duration {
	return time.Duration(math.Abs(r.NormFloat64()*2+10) * float64(time.Millisecond))
}

// simulate runs one contest of n clients and returns (writes, completion).
func simulate(n int, newBackOff func() BackOff, r *rand.Rand) (int, time.Duration) {
	backoffs := make([]BackOff, n)
	q := make(simQueue, 0, 2*n)
	for i := range backoffs {
		backoffs[i] = newBackOff()
		q.add(simEvent{at: latency(r), client: i})
	}
	version, writes, done := 0, 0, 0
	var last time.Duration
	for done < n {
		e := q.next()
		if !e.write {
			// The read's reply and the write request travel before the write lands.
			q.add(simEvent{at: e.at + latency(r) + latency(r), client: e.client, write: true, version: version})
			continue
		}
		writes++
		reply := e.at + latency(r)
		if e.version == version {
			version++
			done++
			last = max(last, reply)
			continue
		}
		d := backoffs[e.client].NextBackOff()
		if d == Stop {
			d = 0
		}
		q.add(simEvent{at: reply + d + latency(r), client: e.client})
	}
	return writes, last
}

type simResult struct {
	work float64       // mean writes
	time time.Duration // mean completion
}

// runSimulation averages runs contests per client count for every strategy.
func runSimulation(clients []int, runs int) (names []string, table map[string][]simResult) {
	table = map[string][]simResult{}
	for _, s := range simStrategies(nil) {
		names = append(names, s.name)
	}
	for ci, n := range clients {
		for si := range names {
			var work, total float64
			for run := range runs {
				seed := uint64(ci*1_000_003 + si*10_007 + run)
				r := rand.New(rand.NewPCG(seed, 7))
				strat := simStrategies(NewRandom(seed))[si]
				w, d := simulate(n, strat.new, r)
				work += float64(w)
				total += float64(d)
			}
			table[names[si]] = append(table[names[si]], simResult{work: work / float64(runs), time: time.Duration(total / float64(runs))})
		}
	}
	return names, table
}

func formatSimulation(clients []int, names []string, table map[string][]simResult) string {
	var b strings.Builder
	b.WriteString("clients")
	for _, n := range names {
		fmt.Fprintf(&b, ",%s_work,%s_ms", n, n)
	}
	b.WriteString("\n")
	for i, c := range clients {
		fmt.Fprintf(&b, "%d", c)
		for _, n := range names {
			r := table[n][i]
			fmt.Fprintf(&b, ",%.0f,%.0f", r.work, float64(r.time)/float64(time.Millisecond))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func TestSimulationReproducesBrooker(t *testing.T) {
	// The full table (BENCHMARKS.md) takes a minute under -race: it runs
	// with SQSKIT_LONG=1, as CI does; the default is a coarser grid on which
	// every conclusion below still holds.
	clients, runs := []int{10, 50, 100, 190}, 10
	if os.Getenv("SQSKIT_LONG") != "" {
		clients, runs = []int{10, 30, 50, 70, 90, 110, 130, 150, 170, 190}, 100
	}
	names, table := runSimulation(clients, runs)
	t.Logf("mean of %d runs per point:\n%s", runs, formatSimulation(clients, names, table))

	last := len(clients) - 1
	sum := func(name string) (work float64, total time.Duration) {
		for _, r := range table[name] {
			work += r.work
			total += r.time
		}
		return work, total
	}
	// No backoff does O(N²) work: over the upper half of N, work per client
	// grows about as fast as N itself; with full jitter it barely grows.
	mid := len(clients) / 2
	perClientGrowth := func(name string) float64 {
		r := table[name]
		return (r[last].work / float64(clients[last])) / (r[mid].work / float64(clients[mid]))
	}
	nRatio := float64(clients[last]) / float64(clients[mid])
	if g := perClientGrowth("none"); g < 0.7*nRatio {
		t.Errorf("no backoff: expect work per client to grow with N (×%.2f) from N=%d to %d, grew ×%.2f", nRatio, clients[mid], clients[last], g)
	}
	if g := perClientGrowth("full"); g > 0.7*nRatio {
		t.Errorf("full jitter: expect work per client to grow much slower than N (×%.2f), grew ×%.2f", nRatio, g)
	}
	// Un-jittered exponential is the slowest by far.
	for _, name := range []string{"none", "full", "equal", "decorrelated"} {
		if table["exponential"][last].time < 2*table[name][last].time {
			t.Errorf("expect exponential without jitter at least 2× slower than %s at N=%d: %v vs %v", name, clients[last], table["exponential"][last].time, table[name][last].time)
		}
	}
	fullWork, fullTime := sum("full")
	equalWork, equalTime := sum("equal")
	decWork, decTime := sum("decorrelated")
	// Full Jitter does the least work of the jittered strategies.
	if fullWork >= equalWork || fullWork >= decWork {
		t.Errorf("expect full jitter to do the least work: full %.0f, equal %.0f, decorrelated %.0f", fullWork, equalWork, decWork)
	}
	// Equal Jitter takes longer than Full for similar work.
	if equalTime <= fullTime || equalWork > 1.3*fullWork {
		t.Errorf("expect equal jitter slower than full for similar work: time %v vs %v, work %.0f vs %.0f", equalTime, fullTime, equalWork, fullWork)
	}
	// Decorrelated is a little faster than Full but does more work.
	if decTime >= fullTime || decWork <= fullWork {
		t.Errorf("expect decorrelated faster than full with more work: time %v vs %v, work %.0f vs %.0f", decTime, fullTime, decWork, fullWork)
	}
}
