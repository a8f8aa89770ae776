package main

import (
	"bytes"
	"context"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/spf13/cobra"

	"github.com/sqskit/sqskit/internal/fakeserve"
	"github.com/sqskit/sqskit/internal/parking"
	"github.com/sqskit/sqskit/replay"
	"github.com/sqskit/sqskit/sqsfake"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

const (
	account   = "123456789012"
	inProcess = "https://sqs.us-east-1.amazonaws.com/" + account + "/"
)

// fixture is a server with the queues of an application with a DLQ and an
// operator queue, on a manual clock so that outputs are the same each run.
func fixture(t *testing.T) *sqsfake.Server {
	t.Helper()
	clock := sqsfake.NewManualClock(t0)
	srv := sqsfake.New(func(o *sqsfake.Options) { o.Clock = clock })
	err := fakeserve.CreateQueues(t.Context(), srv, "us-east-1", account, []string{
		"orders,dlq=orders-dlq,maxReceiveCount=5",
		"orders-dlq",
		"orders-ops",
		"events.fifo",
		"events-ht.fifo,DeduplicationScope=messageGroup,FifoThroughputLimit=perMessageGroupId",
	})
	if err != nil {
		t.Fatal(err)
	}
	c := srv.Client()
	send := func(queue, body string, attrs map[string]types.MessageAttributeValue, delay int32) {
		t.Helper()
		in := &sqs.SendMessageInput{QueueUrl: aws.String(inProcess + queue), MessageBody: aws.String(body), MessageAttributes: attrs, DelaySeconds: delay}
		if attrs != nil {
			in.MessageSystemAttributes = map[string]types.MessageSystemAttributeValue{"AWSTraceHeader": {DataType: aws.String("String"), StringValue: aws.String("Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1")}}
		}
		if strings.HasSuffix(queue, ".fifo") {
			in.MessageGroupId, in.MessageDeduplicationId = aws.String("g1"), aws.String(body)
		}
		if _, err := c.SendMessage(t.Context(), in); err != nil {
			t.Fatal(err)
		}
	}
	send("orders", "one", nil, 0)
	send("orders", "two", nil, 0)
	send("orders", "later", nil, 60)
	send("events.fifo", "e1", nil, 0)
	// One in flight on orders.
	if _, err := c.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(inProcess + "orders"), MaxNumberOfMessages: 1}); err != nil {
		t.Fatal(err)
	}
	// The operator queue: an escalation as the replayer writes it, and a
	// plain message.
	md := replay.Metadata{
		OriginalID: "0000aaaa-0000-0000-0000-000000000001", FirstFailure: t0.Add(-time.Hour),
		SourceArn: "arn:aws:sqs:us-east-1:" + account + ":orders", From: inProcess + "orders-dlq",
		Reason: replay.AttemptsExhausted, Detail: "replayed 3 times",
	}
	attrs, err := parking.Pack(map[string]types.MessageAttributeValue{
		"tenant": {DataType: aws.String("String"), StringValue: aws.String("acme")},
	}, replay.DefaultCounterAttribute, 3, md)
	if err != nil {
		t.Fatal(err)
	}
	send("orders-ops", `{"order":42}`, attrs, 0)
	send("orders-ops", "hello", nil, 0)
	return srv
}

func TestQueues(t *testing.T) {
	srv := fixture(t)
	got := invoke(t, srv, "", "queues")
	mustSucceed(t, got)
	golden(t, "queues", got.stdout)

	got = invoke(t, srv, "", "queues", "--prefix", "orders", "-o", "json")
	mustSucceed(t, got)
	golden(t, "queues-json", got.stdout)
	var list queueList
	parseJSON(t, got.stdout, &list)
	if len(list.Queues) != 3 {
		t.Fatalf("expect 3 queues with prefix orders, got %+v", list.Queues)
	}
	o, dlq := list.Queues[0], list.Queues[1]
	if o.Name != "orders" || o.Visible != 1 || o.InFlight != 1 || o.Delayed != 1 || o.DLQ != "orders-dlq" || o.MaxReceiveCount != 5 || o.OldestAgeSeconds != nil {
		t.Errorf("expect orders with 1 visible, 1 in flight, 1 delayed, DLQ orders-dlq (5), no age; got %+v", o)
	}
	if dlq.Name != "orders-dlq" || !slices.Equal(dlq.Sources, []string{"orders"}) || dlq.SourcesFrom != "api" {
		t.Errorf("expect orders-dlq fed by orders (from the API), got %+v", dlq)
	}
	if calls := srv.Calls(); calls.Op["ReceiveMessage"] != 1 {
		t.Errorf("expect queues to receive nothing, got %v", calls.Op)
	}
}

// Peek explains each message (counter, metadata, attributes) and gives
// them all back at once; the receive count went up, as it says.
func TestPeek(t *testing.T) {
	srv := fixture(t)
	got := invoke(t, srv, "", "peek", "orders-ops")
	mustSucceed(t, got)
	golden(t, "peek", got.stdout)
	if !strings.Contains(got.stderr, "ApproximateReceiveCount") {
		t.Errorf("expect the note that a peek raises ApproximateReceiveCount, got %q", got.stderr)
	}

	got = invoke(t, srv, "", "peek", "orders-ops", "-o", "json")
	mustSucceed(t, got)
	golden(t, "peek-json", got.stdout)
	var res peekResult
	parseJSON(t, got.stdout, &res)
	if res.Received != 2 || res.Released != 2 || len(res.Messages) != 2 {
		t.Fatalf("expect 2 received, released and shown, got %+v", res)
	}
	m := res.Messages[0]
	if m.Counter == nil || *m.Counter != 3 || m.TraceHeader == "" || m.Replay == nil || m.Replay.Reason != string(replay.AttemptsExhausted) || m.Attributes["tenant"] != "String=acme" || m.ReceiveCount != 2 {
		t.Errorf("expect counter 3, reason attempts-exhausted, attribute tenant, second receive; got %+v (replay %+v)", m, m.Replay)
	}
	if _, ok := m.Attributes[replay.MetadataAttribute]; ok {
		t.Errorf("expect the replayer's own attributes decoded, not listed: %v", m.Attributes)
	}
	attrs, err := srv.Client().GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(inProcess + "orders-ops"), AttributeNames: []types.QueueAttributeName{"All"}})
	if err != nil {
		t.Fatal(err)
	}
	if attrs.Attributes["ApproximateNumberOfMessages"] != "2" || attrs.Attributes["ApproximateNumberOfMessagesNotVisible"] != "0" {
		t.Errorf("expect both messages visible again at once, got %v", attrs.Attributes)
	}
}

// On FIFO queues peek shows the group and releases the group's lock.
func TestPeekFIFO(t *testing.T) {
	srv := fixture(t)
	for range 2 {
		got := invoke(t, srv, "", "peek", "events.fifo", "-o", "json")
		mustSucceed(t, got)
		var res peekResult
		parseJSON(t, got.stdout, &res)
		if len(res.Messages) != 1 || res.Messages[0].GroupID != "g1" || res.Messages[0].DedupID != "e1" || res.Released != 1 {
			t.Fatalf("expect e1 of group g1, released, got %+v", res)
		}
	}
}

// On a queue with a redrive policy a peek may dead-letter: it asks, and
// without an answer it receives nothing.
func TestPeekAsksOnRedrivePolicy(t *testing.T) {
	srv := fixture(t)
	before := srv.Calls().Op["ReceiveMessage"]
	got := invoke(t, srv, "", "peek", "orders")
	if got.code != exitNotConfirmed || !strings.Contains(got.stderr, "redrive policy") {
		t.Fatalf("expect exit %d and the reason, got %d: %s", exitNotConfirmed, got.code, got.stderr)
	}
	got = invoke(t, srv, "no\n", "peek", "orders")
	if got.code != exitNotConfirmed {
		t.Fatalf("expect exit %d when the answer is no, got %d", exitNotConfirmed, got.code)
	}
	if n := srv.Calls().Op["ReceiveMessage"]; n != before {
		t.Fatalf("expect no receive before a confirmation, got %d", n-before)
	}
	got = invoke(t, srv, "yes\n", "peek", "orders")
	mustSucceed(t, got)
	if !strings.Contains(got.stderr, `Type "yes" to confirm`) || !strings.Contains(got.stdout, "1 received, 1 released") {
		t.Errorf("expect a question and one message peeked, got:\n%s\n%s", got.stderr, got.stdout)
	}
	mustSucceed(t, invoke(t, srv, "", "--yes", "peek", "orders"))
}

func TestShow(t *testing.T) {
	srv := fixture(t)
	peek := invoke(t, srv, "", "peek", "orders-ops", "-o", "json")
	mustSucceed(t, peek)
	var res peekResult
	parseJSON(t, peek.stdout, &res)
	id := res.Messages[0].ID

	got := invoke(t, srv, "", "show", "orders-ops", id)
	mustSucceed(t, got)
	golden(t, "show", got.stdout)

	got = invoke(t, srv, "", "show", "orders-ops", id, "-o", "json")
	mustSucceed(t, got)
	var m message
	parseJSON(t, got.stdout, &m)
	if m.ID != id || m.Replay == nil || m.Replay.OriginalID != "0000aaaa-0000-0000-0000-000000000001" || m.Replay.ParkedFrom != inProcess+"orders-dlq" {
		t.Errorf("expect the escalated message with its provenance, got %+v", m)
	}

	got = invoke(t, srv, "", "show", "orders-ops", "no-such-id")
	if got.code != exitFailed || !strings.Contains(got.stderr, "not among the 2 messages") {
		t.Errorf("expect exit 1 and what was searched, got %d: %s", got.code, got.stderr)
	}
	attrs, err := srv.Client().GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(inProcess + "orders-ops"), AttributeNames: []types.QueueAttributeName{"All"}})
	if err != nil || attrs.Attributes["ApproximateNumberOfMessagesNotVisible"] != "0" {
		t.Errorf("expect everything show saw released, got %v, %v", attrs, err)
	}
}

// A release that fails once is not retried by sqsfake's in-process
// client: the message comes back after peek's hold, and peek says how
// many it released.
func TestPeekReportsUnreleased(t *testing.T) {
	srv := fixture(t)
	srv.Inject(sqsfake.Fault{Op: "ChangeMessageVisibilityBatch", Times: 1})
	got := invoke(t, srv, "", "peek", "orders-ops", "-o", "json")
	mustSucceed(t, got)
	var res peekResult
	parseJSON(t, got.stdout, &res)
	if res.Received != 2 || res.Released != 0 {
		t.Errorf("expect 2 received and 0 released, got %+v", res)
	}
}

// A receive that fails part way ends peek with exit 1, and what it had
// received is still given back.
func TestPeekReleasesOnFailure(t *testing.T) {
	srv := fixture(t)
	var receives atomic.Int32
	srv.Inject(sqsfake.Fault{Op: "ReceiveMessage", Queue: "orders-ops", Match: func(string, any) bool { return receives.Add(1) == 2 }})
	got := invoke(t, srv, "", "peek", "orders-ops")
	if got.code != exitFailed || !strings.Contains(got.stderr, "2 of the 2 messages received were made visible again") {
		t.Fatalf("expect exit 1 saying both were released, got %d: %s", got.code, got.stderr)
	}
	if visible, _ := countsOf(t, srv, "orders-ops"); visible != "2" {
		t.Errorf("expect both visible again, got %s", visible)
	}
}

func countsOf(t *testing.T, srv *sqsfake.Server, queue string) (visible, inFlight string) {
	t.Helper()
	out, err := srv.Client().GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(inProcess + queue), AttributeNames: []types.QueueAttributeName{"All"}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Attributes["ApproximateNumberOfMessages"], out.Attributes["ApproximateNumberOfMessagesNotVisible"]
}

func TestPurge(t *testing.T) {
	srv := fixture(t)
	purges := func() int { return srv.Calls().Op["PurgeQueue"] }
	got := invoke(t, srv, "", "purge", "orders-dlq")
	if got.code != exitNotConfirmed || purges() != 0 {
		t.Fatalf("expect exit %d and no purge without a terminal or --yes, got %d, %d purges", exitNotConfirmed, got.code, purges())
	}
	got = invoke(t, srv, "yes\n", "purge", "orders-dlq")
	if got.code != exitNotConfirmed || purges() != 0 {
		t.Fatalf("expect typing yes instead of the name to purge nothing, got %d, %d purges", got.code, purges())
	}
	got = invoke(t, srv, "orders-dlq\n", "purge", "orders-dlq")
	mustSucceed(t, got)
	golden(t, "purge", got.stdout)
	if !strings.Contains(got.stderr, `Type "orders-dlq" to confirm`) || purges() != 1 {
		t.Errorf("expect the typed name asked for and one purge, got %q, %d", got.stderr, purges())
	}
	got = invoke(t, srv, "", "--yes", "purge", inProcess+"orders-ops", "-o", "json")
	mustSucceed(t, got)
	var res purgeResult
	parseJSON(t, got.stdout, &res)
	if res != (purgeResult{Queue: "orders-ops", URL: inProcess + "orders-ops", Purged: true}) {
		t.Errorf("expect orders-ops purged, got %+v", res)
	}
}

func TestPlan(t *testing.T) {
	srv := sqsfake.New()
	for _, tc := range []struct {
		name    string
		args    []string
		binding string
		ceiling float64
	}{
		{"plan-fifo", []string{"--type", "fifo", "--rtt", "10ms", "--concurrency", "8", "--batch", "10"}, "api-quota", 3000},
		{"plan-standard", []string{"--type", "standard", "--rtt", "20ms", "--concurrency", "64", "--batch", "5", "--rate", "50000", "--size", "100000"}, "client", 16000},
		{"plan-fifo-ht", []string{"--type", "fifo-ht", "--rtt", "5ms", "--concurrency", "4096", "--process", "2s"}, "in-flight", 120000 / 2.005},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := invoke(t, srv, "", append([]string{"plan"}, tc.args...)...)
			mustSucceed(t, got)
			golden(t, tc.name, got.stdout)
			got = invoke(t, srv, "", append([]string{"plan", "-o", "json"}, tc.args...)...)
			mustSucceed(t, got)
			var res planResult
			parseJSON(t, got.stdout, &res)
			if res.Binding != tc.binding || res.Ceiling < tc.ceiling-0.5 || res.Ceiling > tc.ceiling+0.5 {
				t.Errorf("expect %.0f msgs/s bound by %s, got %.1f by %s", tc.ceiling, tc.binding, res.Ceiling, res.Binding)
			}
		})
	}
	if n := srv.Calls().Total(); n != 0 {
		t.Errorf("expect plan to call nothing, got %d calls", n)
	}
}

// Every bad argument exits 2 with a reason, before any call that could
// change a queue (only lookups are allowed: GetQueueUrl, GetQueueAttributes).
func TestBadArgumentsExitTwoBeforeAnyCall(t *testing.T) {
	srv := fixture(t)
	before := srv.Calls().Op
	for _, args := range [][]string{
		{"no-such-command"},
		{"--no-such-flag"},
		{"-o", "yaml"},
		{"--endpoint-url", "localhost:9324", "queues"},
		{"--endpoint-url", "ftp://host", "queues"},
		{"queues", "extra"},
		{"peek"},
		{"peek", "orders-ops", "-n", "0"},
		{"peek", "orders-ops", "-n", "1001"},
		{"peek", "no-such-queue"},
		{"peek", "a", "b"},
		{"show", "orders-ops"},
		{"show", "orders-ops", " "},
		{"show", "orders-ops", "id", "--max", "0"},
		{"purge"},
		{"purge", "no-such-queue", "--yes"},
		{"purge", "orders-ops", "orders-dlq", "--yes"},
		{"purge", inProcess + "gone", "--yes"},
		{"peek", inProcess + "gone", "--yes"},
		{"plan", "--type", "lifo"},
		{"plan", "--batch", "11"},
		{"plan", "--rtt", "0s"},
		{"plan", "--rtt", "fast"},
		{"plan", "--concurrency", "0"},
		{"plan", "--size", "200000"},
		{"plan", "--rate", "-1"},
		{"plan", "--process", "13h"},
		{"serve", "--fail", "SendMessage"},
		{"serve", "--max-requests", "0"},
		{"serve", "--queue", ",x=1"},
		{"serve", "stray"},
	} {
		got := invoke(t, srv, "", args...)
		if got.code != exitUsage || got.stderr == "" {
			t.Errorf("sqskit %q: exit %d, stderr %q; want exit %d and a reason", args, got.code, got.stderr, exitUsage)
		}
	}
	after := srv.Calls().Op
	for op, n := range after {
		if n != before[op] && op != "GetQueueUrl" && op != "GetQueueAttributes" {
			t.Errorf("bad arguments made %d %s calls", n-before[op], op)
		}
	}
}

// Every command has a short description and examples in its --help.
func TestHelpHasExamples(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Example == "" || c.Short == "" && c.HasParent() {
			t.Errorf("%s: expect a short description and an Example", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRoot(&app{}))

	got := invoke(t, sqsfake.New(), "", "plan", "--help")
	mustSucceed(t, got)
	if !strings.Contains(got.stdout, "Examples:") {
		t.Errorf("expect examples in plan --help, got:\n%s", got.stdout)
	}
	got = invoke(t, sqsfake.New(), "", "completion", "bash")
	mustSucceed(t, got)
	if !strings.Contains(got.stdout, "bash completion") {
		t.Errorf("expect a bash completion script, got %.200s", got.stdout)
	}
}

// queues works out the sources from the redrive policies where the
// endpoint lacks ListDeadLetterSourceQueues (fauxqs).
func TestQueuesSourcesWithoutTheAPI(t *testing.T) {
	srv := fixture(t)
	srv.Inject(sqsfake.Fault{Op: "ListDeadLetterSourceQueues", Err: &types.UnsupportedOperation{Message: aws.String("InvalidAction")}})
	got := invoke(t, srv, "", "queues", "-o", "json")
	mustSucceed(t, got)
	var list queueList
	parseJSON(t, got.stdout, &list)
	byName := map[string]queueInfo{}
	for _, q := range list.Queues {
		byName[q.Name] = q
	}
	if q := byName["orders-dlq"]; !slices.Equal(q.Sources, []string{"orders"}) || q.SourcesFrom != "policies" {
		t.Errorf("expect orders-dlq fed by orders, from the policies, got %+v (queues %v)", q, slices.Sorted(maps.Keys(byName)))
	}
}

// Progress is drawn on standard error only for people at a terminal: not
// for scripts (-o json) and not when standard error is no terminal.
func TestProgressOnlyAtATerminal(t *testing.T) {
	for _, tc := range []struct {
		visible bool
		output  string
		want    string
	}{
		{true, "table", "\rconform [===============               ] 1/2\rconform [==============================] 2/2\n"},
		{true, "json", ""},
		{false, "table", ""},
	} {
		var errOut strings.Builder
		a := &app{term: terminal{err: &errOut, progressVisible: tc.visible}, output: tc.output}
		p := a.progress("conform", 2)
		p.add(1)
		p.add(1)
		p.finish()
		if errOut.String() != tc.want {
			t.Errorf("visible %v, -o %s: expect %q, got %q", tc.visible, tc.output, tc.want, errOut.String())
		}
	}
}

// Absurd plan values: a non-finite or overflowing quota, rate or
// concurrency is a bad argument, not a NaN ceiling, a +Inf that JSON
// cannot encode (exit 1 with nothing printed), or a negative concurrency
// needed; the largest accepted values give finite, non-negative numbers.
func TestPlanRefusesAbsurdValues(t *testing.T) {
	srv := sqsfake.New()
	for _, args := range [][]string{
		{"--type", "fifo-ht", "--ht-quota", "NaN"},
		{"--type", "fifo-ht", "--ht-quota", "Inf"},
		{"--type", "fifo-ht", "--ht-quota", "1e308"},
		{"--rate", "1e308"},
		{"--rate", "NaN"},
		{"--concurrency", "9223372036854775807"},
		{"--rtt", "2562047h"},
	} {
		got := invoke(t, srv, "", append([]string{"plan", "-o", "json"}, args...)...)
		if got.code != exitUsage || got.stdout != "" {
			t.Errorf("sqskit plan %q: exit %d, stdout %q; want exit %d and nothing printed", args, got.code, got.stdout, exitUsage)
		}
	}
	got := invoke(t, srv, "", "plan", "-o", "json", "--type", "fifo-ht", "--rtt", "12h", "--rate", "1e9", "--concurrency", "1000000", "--ht-quota", "1e6")
	mustSucceed(t, got)
	var res planResult
	parseJSON(t, got.stdout, &res)
	if res.ConcurrencyNeeded < 1 || res.MonthlyCost < 0 {
		t.Errorf("expect a positive concurrency needed and cost, got %+v", res)
	}
}

// Ctrl-C at a confirmation prompt ends the command at once: not confirmed,
// nothing changed, exit 3. The prompt read the terminal without heeding the
// interrupt, so Ctrl-C did nothing and the operator had to type an answer.
func TestConfirmPromptHeedsCtrlC(t *testing.T) {
	srv := fixture(t)
	before := srv.Calls().Op
	for _, args := range [][]string{
		{"purge", "orders-ops"},
		{"peek", "orders"}, // has a redrive policy: asks first
		{"redrive", "cancel", "some-task"},
	} {
		stdin, typing := io.Pipe() // a person at a terminal who types nothing
		var out, errOut lockedBuffer
		a := &app{
			term:      terminal{in: stdin, out: &out, err: &errOut, interactive: true},
			newClient: func(context.Context) (*sqs.Client, error) { return srv.Client(), nil },
			shortPoll: true,
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan int)
		go func() { done <- runApp(ctx, args, a) }()
		for !strings.Contains(errOut.String(), "to confirm") {
			time.Sleep(10 * time.Millisecond)
		}
		cancel() // Ctrl-C
		select {
		case code := <-done:
			if code != exitNotConfirmed {
				t.Errorf("sqskit %q: expect exit %d after Ctrl-C at the prompt, got %d", args, exitNotConfirmed, code)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("sqskit %q: still waiting for an answer 5 s after Ctrl-C", args)
			typing.Write([]byte("no\n"))
			<-done
		}
		typing.Close()
	}
	if visible, _ := countsOf(t, srv, "orders-ops"); visible != "2" {
		t.Errorf("expect orders-ops untouched, got %s visible", visible)
	}
	after := srv.Calls().Op
	if n := after["ReceiveMessage"] - before["ReceiveMessage"] + after["CancelMessageMoveTask"] + after["PurgeQueue"]; n != 0 {
		t.Errorf("expect nothing received or cancelled, got %d calls", n)
	}
}

// lockedBuffer is a bytes.Buffer a command writes while the test reads.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
