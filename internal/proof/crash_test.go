package proof

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/consumer"
	"github.com/sqskit/sqskit/fifo"
	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/replay"
	"github.com/sqskit/sqskit/sqsfake"
)

// The crash soak: consumers and a replayer in processes of their own, on
// one FIFO queue that sqsfake serves over HTTP in the test process, each
// killed with SIGKILL at random moments and started again.
//
// Each child process writes what it does to a file of its own, one line per
// event, each line one write(2) on a file opened with O_APPEND: a message
// it received (R), a message its handler finished with success (K, written
// before the handler returns, so before the consumer can delete it), a
// message the delete of which SQS acknowledged (D). A write that returned
// is in the kernel and survives the writer's SIGKILL (fsync would guard a
// power cut, which this does not simulate). So after a kill, K without D
// is exactly what was handled and maybe not deleted: the only messages
// that may be handled again. The check: every duplicate handling is one of
// those, no more duplicates than that for any kill, nothing lost, and each
// group's first successes in order.

const crashRoleEnv = "SQSKIT_CRASH_ROLE"

// crashSetup is what a child needs, passed in its environment.
type crashSetup struct {
	Endpoint, Main, DLQ, Operator, Ledger string
	Seed                                  uint64
}

func (c crashSetup) env(role string) []string {
	return append(os.Environ(), crashRoleEnv+"="+role, "SQSKIT_CRASH_ENDPOINT="+c.Endpoint, "SQSKIT_CRASH_MAIN="+c.Main,
		"SQSKIT_CRASH_DLQ="+c.DLQ, "SQSKIT_CRASH_OPERATOR="+c.Operator, "SQSKIT_CRASH_LEDGER="+c.Ledger,
		"SQSKIT_CRASH_SEED="+strconv.FormatUint(c.Seed, 10))
}

func crashSetupFromEnv() crashSetup {
	seed, _ := strconv.ParseUint(os.Getenv("SQSKIT_CRASH_SEED"), 10, 64)
	return crashSetup{Endpoint: os.Getenv("SQSKIT_CRASH_ENDPOINT"), Main: os.Getenv("SQSKIT_CRASH_MAIN"), DLQ: os.Getenv("SQSKIT_CRASH_DLQ"),
		Operator: os.Getenv("SQSKIT_CRASH_OPERATOR"), Ledger: os.Getenv("SQSKIT_CRASH_LEDGER"), Seed: seed}
}

const (
	crashMessages    = 400
	crashGroups      = 20
	crashMaxInFlight = 20
	crashVisibility  = 2 // seconds
)

// crashFate is message i's: poison (2 %), slow past the visibility timeout
// (1 %), or failing now and then (10 % of deliveries).
func crashFate(seed uint64, i, receiveCount, attempt int) (fail bool, d time.Duration) {
	if crashPoison(seed, i) {
		return true, 0
	}
	w := &soakWorld{seed: seed}
	d = time.Duration(w.chance("crash", i, receiveCount, "time") * float64(30*time.Millisecond))
	if w.chance("crash", i, "slow") < 0.01 {
		d = 3 * time.Second
	}
	return w.chance("crash", i, receiveCount, attempt) < 0.10, d
}

func crashPoison(seed uint64, i int) bool {
	return (&soakWorld{seed: seed}).chance("crash", i, "poison") < 0.02
}

func TestCrashSoak(t *testing.T) {
	switch os.Getenv(crashRoleEnv) {
	case "consumer":
		crashConsumer(t, crashSetupFromEnv())
		return
	case "replayer":
		crashReplayer(t, crashSetupFromEnv())
		return
	}
	if os.Getenv("SQSKIT_LONG") == "" {
		t.Skip("takes 20 to 50 s of real time, killing child processes; set SQSKIT_LONG=1 (CI does)")
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(soakSeedEnv); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	fmt.Printf("crash soak: seed %d, %d messages, 3 consumer processes and a replayer process killed at random\n", seed, crashMessages)
	began := time.Now()
	srv := sqsfake.New()
	hs := sqsfake.StartHTTP(t, srv)
	api := srv.Client()
	ctx := context.Background()
	create := func(name string, attrs map[string]string) string {
		out, err := api.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
		if err != nil {
			t.Fatal(err)
		}
		return *out.QueueUrl // any host names the queue: only the path counts
	}
	setup := crashSetup{Endpoint: hs.URL, Ledger: t.TempDir(), Seed: seed}
	setup.Operator = create("operator", nil)
	setup.DLQ = create("dlq.fifo", map[string]string{"FifoQueue": "true"})
	setup.Main = create("main.fifo", map[string]string{"FifoQueue": "true", "VisibilityTimeout": strconv.Itoa(crashVisibility),
		"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:123456789012:dlq.fifo","maxReceiveCount":6}`})

	pool := &crashPool{t: t, setup: setup, rng: rand.New(rand.NewPCG(seed, 0xc4a5))}
	for n := range 3 {
		pool.start("consumer", n)
	}
	pool.start("replayer", 3)

	// Produce over the first seconds, while the kills go on.
	sender, err := fifo.NewSender(api, setup.Main, func(o *fifo.SenderOptions) { o.Dedup = fifo.KeyDedup("crash") })
	if err != nil {
		t.Fatal(err)
	}
	killing := make(chan struct{})
	var killer sync.WaitGroup
	killer.Go(func() { pool.killAtRandom(killing) })
	for start := 0; start < crashMessages; start += 20 {
		var msgs []fifo.Message
		for i := start; i < min(start+20, crashMessages); i++ {
			msgs = append(msgs, fifo.Message{Body: crashBody(i), GroupID: fmt.Sprintf("g%d", i%crashGroups), DedupKey: crashBody(i)})
		}
		for _, r := range sender.SendBatch(ctx, msgs) {
			if r.Err != nil {
				t.Fatalf("send: %v", r.Err)
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(10 * time.Second) // kills go on a while after production
	close(killing)
	killer.Wait()

	// Settle: no more kills; wait until the main queue and the DLQ are empty.
	depth := func(url string) int {
		out, err := api.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{"All"}})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, a := range []string{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"} {
			k, _ := strconv.Atoi(out.Attributes[a])
			n += k
		}
		return n
	}
	deadline := time.Now().Add(90 * time.Second)
	for empty := 0; empty < 2; {
		time.Sleep(time.Second)
		if depth(setup.Main)+depth(setup.DLQ) == 0 {
			empty++
		} else {
			empty = 0
		}
		if time.Now().After(deadline) {
			pool.stopAll()
			t.Fatalf("crash soak: %d messages still queued 90 s after the kills stopped", depth(setup.Main)+depth(setup.DLQ))
		}
	}
	pool.stopAll()
	escalated := map[string]bool{}
	for {
		out, err := api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(setup.Operator), MaxNumberOfMessages: 10, VisibilityTimeout: 60})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			break
		}
		for _, m := range out.Messages {
			escalated[aws.ToString(m.Body)] = true
		}
	}
	checkCrashLedgers(t, pool, escalated, time.Since(began))
}

func crashBody(i int) string { return fmt.Sprintf("c-%d-%05d", i%crashGroups, i) }

// crashPool runs the child processes and kills them.
type crashPool struct {
	t     *testing.T
	setup crashSetup
	rng   *rand.Rand

	mu       sync.Mutex
	procs    map[int]*crashProc // by slot
	finished []*crashProc
	serial   int
}

type crashProc struct {
	role   string
	slot   int
	id     int // incarnation
	cmd    *exec.Cmd
	ledger string
	killed bool // by a random kill, not the end of the run
}

func (p *crashPool) start(role string, slot int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.serial++
	cp := &crashProc{role: role, slot: slot, id: p.serial, ledger: filepath.Join(p.setup.Ledger, fmt.Sprintf("%03d-%s.log", p.serial, role))}
	setup := p.setup
	setup.Ledger = cp.ledger
	cp.cmd = exec.Command(os.Args[0], "-test.run=^TestCrashSoak$", "-test.count=1")
	cp.cmd.Env = append(setup.env(role), "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	cp.cmd.Stdout, cp.cmd.Stderr = os.Stderr, os.Stderr
	if err := cp.cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	if p.procs == nil {
		p.procs = map[int]*crashProc{}
	}
	p.procs[slot] = cp
}

// kill sends SIGKILL to a slot's process and waits for it to be gone.
func (p *crashPool) kill(slot int, random bool) {
	p.mu.Lock()
	cp := p.procs[slot]
	delete(p.procs, slot)
	p.mu.Unlock()
	if cp == nil {
		return
	}
	_ = cp.cmd.Process.Kill()
	_ = cp.cmd.Wait()
	cp.killed = random
	p.mu.Lock()
	p.finished = append(p.finished, cp)
	p.mu.Unlock()
}

// killAtRandom kills one process every 0.3 to 1.5 s and starts it again.
func (p *crashPool) killAtRandom(stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-time.After(300*time.Millisecond + time.Duration(p.rng.Int64N(int64(1200*time.Millisecond)))):
		}
		slot := p.rng.IntN(4)
		role := "consumer"
		if slot == 3 {
			role = "replayer"
		}
		p.kill(slot, true)
		p.start(role, slot)
	}
}

func (p *crashPool) stopAll() {
	for slot := range 4 {
		p.kill(slot, false)
	}
}

// ---- the children

// crashLedger appends one line per event; each line is one write(2) on an
// O_APPEND file.
type crashLedger struct {
	mu sync.Mutex
	f  *os.File
}

func (l *crashLedger) write(format string, args ...any) {
	line := fmt.Sprintf(format+"\n", args...)
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.f.WriteString(line); err != nil {
		panic(err)
	}
}

func crashClient(setup crashSetup) *sqs.Client {
	return sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(setup.Endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("crash", "crash", "")})
}

// ledgerClient records receives and acknowledged deletes.
type ledgerClient struct {
	consumer.API
	l       *crashLedger
	mu      sync.Mutex
	handles map[string]string // receipt handle → MessageId
}

func (c *ledgerClient) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	out, err := c.API.ReceiveMessage(ctx, in, optFns...)
	if err == nil {
		c.mu.Lock()
		for _, m := range out.Messages {
			c.handles[*m.ReceiptHandle] = *m.MessageId
			c.l.write("R %s", *m.MessageId)
		}
		c.mu.Unlock()
	}
	return out, err
}

func (c *ledgerClient) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	out, err := c.API.DeleteMessageBatch(ctx, in, optFns...)
	if err == nil {
		byID := map[string]string{}
		for _, e := range in.Entries {
			byID[*e.Id] = *e.ReceiptHandle
		}
		c.mu.Lock()
		for _, s := range out.Successful {
			c.l.write("D %s", c.handles[byID[*s.Id]])
		}
		c.mu.Unlock()
	}
	return out, err
}

func openLedger(t *testing.T, path string) *crashLedger {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	return &crashLedger{f: f}
}

// crashConsumer runs until it is killed.
func crashConsumer(t *testing.T, setup crashSetup) {
	l := openLedger(t, setup.Ledger)
	api := &ledgerClient{API: crashClient(setup), l: l, handles: map[string]string{}}
	c, err := consumer.New(api, setup.Main, func(ctx context.Context, m *handler.Message) error {
		i, _ := strconv.Atoi(m.Body[strings.LastIndex(m.Body, "-")+1:])
		attempt := replayAttempt(m)
		fail, d := crashFate(setup.Seed, i, m.ReceiveCount(), attempt)
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return ctx.Err()
		}
		if fail {
			return errSoakFailure
		}
		l.write("K %s %s %d %d %s", m.ID, m.Attributes["SequenceNumber"], attempt, time.Now().UnixNano(), m.Body)
		return nil
	}, func(o *consumer.Options) {
		o.Concurrency, o.MaxInFlight = 4, crashMaxInFlight
		o.ReceiveConcurrency, o.MaxReceiveConcurrency = 2, 2
		o.WaitTime = time.Second
		o.RedeliveryBackoff = backoff.Constant{D: 200 * time.Millisecond}
		// Deletes wait for company, as under load: a kill then finds
		// messages handled and not yet deleted.
		o.DeleteLinger = 150 * time.Millisecond
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// crashReplayer runs until it is killed.
func crashReplayer(t *testing.T, setup crashSetup) {
	r, err := replay.New(crashClient(setup), setup.DLQ, setup.Operator, func(o *replay.Options) {
		o.Target = setup.Main
		o.Policy = replay.Policy{MaxAttempts: 2, Backoff: backoff.Constant{D: 500 * time.Millisecond}}
		o.WaitTime, o.VisibilityTimeout = time.Second, 5*time.Second
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// ---- the check

type crashSuccess struct {
	proc     *crashProc
	id, seq  string
	attempt  int
	at       int64
	body     string
	deleted  bool // the same process saw its delete acknowledged
	position int  // order in its file
}

func checkCrashLedgers(t *testing.T, pool *crashPool, escalated map[string]bool, took time.Duration) {
	var successes []crashSuccess
	received := map[*crashProc]map[string]bool{}
	deleted := map[*crashProc]map[string]bool{}
	kills := map[string]int{}
	for _, cp := range pool.finished {
		if cp.killed {
			kills[cp.role]++
		}
		if cp.role != "consumer" {
			continue
		}
		received[cp], deleted[cp] = map[string]bool{}, map[string]bool{}
		f, err := os.Open(cp.ledger)
		if err != nil {
			continue // killed before it opened its ledger
		}
		sc := bufio.NewScanner(f)
		for n := 0; sc.Scan(); n++ {
			fields := strings.Fields(sc.Text())
			switch {
			case len(fields) == 2 && fields[0] == "R":
				received[cp][fields[1]] = true
			case len(fields) == 2 && fields[0] == "D":
				deleted[cp][fields[1]] = true
			case len(fields) == 6 && fields[0] == "K":
				attempt, _ := strconv.Atoi(fields[3])
				at, _ := strconv.ParseInt(fields[4], 10, 64)
				successes = append(successes, crashSuccess{proc: cp, id: fields[1], seq: fields[2], attempt: attempt, at: at, body: fields[5], position: n})
			default:
				// A line cut by the kill is the last one; anything else is a bug.
				if sc.Scan() {
					t.Errorf("%s: malformed line %q", cp.ledger, sc.Text())
				}
			}
		}
		f.Close()
	}
	for k := range successes {
		successes[k].deleted = deleted[successes[k].proc][successes[k].id]
	}
	slices.SortStableFunc(successes, func(a, b crashSuccess) int { return int(a.at - b.at) })

	// Nothing lost.
	handled := map[string]bool{}
	for _, s := range successes {
		handled[s.body] = true
	}
	lost := 0
	for i := range crashMessages {
		if b := crashBody(i); !handled[b] && !escalated[b] {
			lost++
			t.Errorf("message %s lost: never handled, not escalated", b)
		}
	}
	// FIFO: first successes of originals in each group in sequence order.
	first := map[string]bool{}
	lastSeq := map[string]string{}
	outOfOrder := 0
	for _, s := range successes {
		if first[s.body] {
			continue
		}
		first[s.body] = true
		if s.attempt != 0 {
			continue
		}
		g := s.body[:strings.LastIndex(s.body, "-")]
		if last, ok := lastSeq[g]; ok && seqLess(s.seq, last) {
			outOfOrder++
			t.Errorf("group %s: %s (sequence %s) first succeeded after sequence %s", g, s.body, s.seq, last)
		}
		lastSeq[g] = s.seq
	}
	// Duplicates: a copy handled again must have been handled, and not seen
	// deleted, by a process that was killed; no kill more than it had so.
	seen := map[string]crashSuccess{}
	dupByProc := map[*crashProc]int{}
	duplicates, unexplained := 0, 0
	for _, s := range successes {
		prev, again := seen[s.id]
		if !again {
			seen[s.id] = s
			continue
		}
		duplicates++
		if prev.deleted || !prev.proc.killed {
			unexplained++
			t.Errorf("message %s (%s) handled again although its first handler's process %s (killed %v) saw it deleted (%v)",
				s.id, s.body, prev.proc.ledger, prev.proc.killed, prev.deleted)
		}
		dupByProc[prev.proc]++
		seen[s.id] = s
	}
	heldAtKills, handledNotDeleted, worst := 0, 0, ""
	for _, cp := range pool.finished {
		if cp.role != "consumer" || !cp.killed {
			continue
		}
		held, pending := 0, 0
		for id := range received[cp] {
			if !deleted[cp][id] {
				held++
			}
		}
		for _, s := range successes {
			if s.proc == cp && !s.deleted {
				pending++
			}
		}
		heldAtKills += held
		handledNotDeleted += pending
		if d := dupByProc[cp]; d > pending {
			t.Errorf("process %s: %d duplicates, more than the %d messages it had handled and not seen deleted", cp.ledger, d, pending)
		} else if d > 0 && worst == "" {
			worst = fmt.Sprintf("%d duplicates from a kill with %d handled-not-deleted and %d received-not-deleted", d, pending, held)
		}
	}
	poison := 0
	for i := range crashMessages {
		if crashPoison(pool.setup.Seed, i) {
			poison++
		}
	}
	fmt.Printf("crash soak result: %d messages in %v real time; SIGKILLs: %d consumer processes, %d replayer processes; lost %d; "+
		"FIFO first successes out of order %d; escalated %d (%d poison); duplicates %d, bounded by the %d messages handled and not yet deleted "+
		"at the kills (%d received and not deleted); unexplained duplicates %d\n",
		crashMessages, took.Round(time.Second), kills["consumer"], kills["replayer"], lost, outOfOrder, len(escalated), poison,
		duplicates, handledNotDeleted, heldAtKills, unexplained)
	if worst != "" {
		fmt.Println("  for example:", worst)
	}
}
