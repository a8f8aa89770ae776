package sqstest

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Verdict is a case's outcome outside go test.
type Verdict string

// The verdicts of [Check]: what go test prints as PASS, SKIP and FAIL.
const (
	Passed  Verdict = "pass"
	Skipped Verdict = "skip"
	Failed  Verdict = "fail"
)

// Result is one case's verdict from [Check].
type Result struct {
	Case    string        `json:"case"` // as Names lists it
	Verdict Verdict       `json:"verdict"`
	Reason  string        `json:"reason,omitempty"` // the skip reason, or the failure's messages
	Elapsed time.Duration `json:"elapsed_ns"`
}

// checkParallel is how many cases Check runs at once without a Clock.
const checkParallel = 8

// cleanupTimeout bounds the calls of a case's cleanups under Check (deleting
// its queues), which run even when Check's context has ended.
const cleanupTimeout = 30 * time.Second

// cancelGrace is how long Check waits, once its context ends, for the cases
// then running to end: a backend that ignores the context of its calls
// cannot hold Check longer.
const cancelGrace = 10 * time.Second

// Check runs every case against h outside go test and returns one Result per
// case in the suite's order. report, if not nil, is called once as each case
// ends (for progress), from one goroutine at a time.
//
// The cases are the ones [Run] runs, with the same rules: in parallel (8 at
// a time) without a Clock, one by one with one; the skips of Harness.Skip
// and of the cases that need a Clock, with the reasons Run prints. A failing
// case's Reason holds its messages, each after the file and line that
// reported it; a case that panics fails with the panic and its stack.
//
// Check returns an error, and no results, for a harness that cannot run:
// a nil Client, or a Skip naming no case or giving no reason. When ctx
// ends, Check starts no more cases, waits up to 10 s for those running
// (their calls take ctx; their cleanups, which delete their queues, get
// 30 s without it), and returns the Results of the cases that ended, with
// ctx's error; a case that fails after ctx ended was cut short, and has no
// Result. Without an end to ctx, a backend call that never returns holds
// its case, and Check, as it would hold go test until its -timeout.
func Check(ctx context.Context, h Harness, report func(Result)) ([]Result, error) {
	if h.Client == nil {
		return nil, errors.New("sqstest: Harness.Client is nil")
	}
	all := suite()
	if problems := skipProblems(h.Skip, all); len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "\n"))
	}
	e := &env{h: h, api: h.Client, seq: new(atomic.Int64)}
	workers := checkParallel
	if h.Clock != nil {
		workers = 1 // the cases share the clock
	}

	var (
		mu       sync.Mutex // guards results and returned; serializes report
		results  = make([]*Result, len(all))
		returned bool
		wg       sync.WaitGroup
	)
	slots := make(chan struct{}, workers)
start:
	for i, c := range all {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			break start
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			r := checkCase(ctx, c, e)
			if r.Verdict == Failed && ctx.Err() != nil {
				return // cut short by ctx: no verdict
			}
			mu.Lock()
			defer mu.Unlock()
			if returned {
				return
			}
			results[i] = &r
			if report != nil {
				report(r)
			}
		}()
	}

	ended := make(chan struct{})
	go func() {
		wg.Wait()
		close(ended)
	}()
	select {
	case <-ended:
	case <-ctx.Done():
		grace := time.NewTimer(cancelGrace)
		select {
		case <-ended:
		case <-grace.C:
		}
		grace.Stop()
	}

	mu.Lock()
	defer mu.Unlock()
	returned = true
	out := make([]Result, 0, len(all))
	for _, r := range results {
		if r != nil {
			out = append(out, *r)
		}
	}
	return out, ctx.Err()
}

// checkCase runs one case with a recorder as its t, on a goroutine of its
// own (Fatal ends it), then its cleanups, last registered first.
func checkCase(ctx context.Context, c testCase, shared *env) Result {
	start := time.Now()
	if reason, skip := c.skipReason(shared.h); skip {
		return Result{Case: c.name, Verdict: Skipped, Reason: reason, Elapsed: time.Since(start)}
	}
	e := *shared
	e.base = ctx
	r := &recorder{}
	r.run(func() { c.test(r, &e) })

	cleanupCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	e.base = cleanupCtx // the case's goroutine has ended: its cleanups read it
	for {
		f := r.popCleanup()
		if f == nil {
			break
		}
		r.run(f)
	}
	return r.result(c.name, time.Since(start))
}

// recorder is a case's t under Check: it keeps the messages of the case's
// failures, its cleanups, and the functions that declared themselves
// helpers (so a message names the line of the case, as testing's do).
type recorder struct {
	mu       sync.Mutex
	failed   bool
	msgs     []string
	cleanups []func()
	helpers  map[string]bool
}

var _ caseT = (*recorder)(nil)

// run calls f on a goroutine of its own and waits for it to end, whether it
// returns, calls Fatal (runtime.Goexit) or panics; a panic fails the case.
func (r *recorder) run(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if p := recover(); p != nil {
				r.fail(fmt.Sprintf("panic: %v\n%s", p, debug.Stack()))
			}
		}()
		f()
	}()
	<-done
}

func (r *recorder) Helper() {
	pc, _, _, ok := runtime.Caller(1)
	if !ok {
		return
	}
	name := runtime.FuncForPC(pc).Name()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.helpers == nil {
		r.helpers = map[string]bool{}
	}
	r.helpers[name] = true
}

func (r *recorder) Cleanup(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, f)
}

func (r *recorder) popCleanup() func() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.cleanups) == 0 {
		return nil
	}
	f := r.cleanups[len(r.cleanups)-1]
	r.cleanups = r.cleanups[:len(r.cleanups)-1]
	return f
}

func (r *recorder) Errorf(format string, args ...any) {
	r.fail(r.where() + fmt.Sprintf(format, args...))
}

func (r *recorder) Fatal(args ...any) {
	r.fail(r.where() + strings.TrimSuffix(fmt.Sprintln(args...), "\n"))
	runtime.Goexit()
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.fail(r.where() + fmt.Sprintf(format, args...))
	runtime.Goexit()
}

// Logf drops the message: a Result carries failures only.
func (r *recorder) Logf(string, ...any) {}

func (r *recorder) fail(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = true
	r.msgs = append(r.msgs, msg)
}

// where returns "file.go:line: " for the caller of Errorf, Fatal or Fatalf,
// past the helpers, as testing prefixes a message.
func (r *recorder) where() string {
	var pcs [32]uintptr
	n := runtime.Callers(3, pcs[:]) // past Callers, where and Errorf/Fatal/Fatalf
	frames := runtime.CallersFrames(pcs[:n])
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		f, more := frames.Next()
		if !r.helpers[f.Function] || !more {
			if f.File == "" {
				return ""
			}
			return fmt.Sprintf("%s:%d: ", filepath.Base(f.File), f.Line)
		}
	}
}

func (r *recorder) result(name string, elapsed time.Duration) Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failed {
		return Result{Case: name, Verdict: Failed, Reason: strings.Join(r.msgs, "\n"), Elapsed: elapsed}
	}
	return Result{Case: name, Verdict: Passed, Elapsed: elapsed}
}
