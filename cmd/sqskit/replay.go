package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/spf13/cobra"

	"github.com/sqskit/sqskit/internal/parking"
	"github.com/sqskit/sqskit/internal/queueref"
	"github.com/sqskit/sqskit/replay"
)

// replayFlags are sqskit replay's own flags.
type replayFlags struct {
	ids          []string
	all          bool
	reason       string
	attrs        []string
	bodyContains string
	bodyRegex    string
	olderThan    time.Duration
	newerThan    time.Duration
	max          int
	to           string
	resetCounter bool
	counter      string
	rehearse     bool
	sample       int
}

func newReplayCmd(a *app) *cobra.Command {
	var f replayFlags
	cmd := &cobra.Command{
		Use:   "replay QUEUE",
		Short: "Replay selected messages from a dead-letter or operator queue to their source (dry run unless --yes)",
		Long: `replay moves selected messages from a dead-letter queue (DLQ) or an operator
queue back to the queue they came from, or to --to QUEUE, with the replayer's
guarantees: a message is deleted only after its target accepted it, a FIFO
group keeps its order, and FIFO sends carry deterministic deduplication ids,
so a replay interrupted and run again sends nothing twice to a FIFO queue.

Where a message goes, unless --to says: the queue SQS names in its
DeadLetterQueueSourceArn; for a message the replayer escalated to an operator
queue, the source its replay metadata names, if that queue really dead-letters
to the queue the metadata says the message was parked from (anyone who can
send to the queue writes its attributes); else the queue's only source queue
(ListDeadLetterSourceQueues). A message with none of these is not replayable.
With --yes, selected messages that are not replayable and --id values that no
message has are listed, left as they are, and the replay exits 1.

Selection: --id (repeatable; the MessageId, or the original id in the replay
metadata), --reason (the replay metadata's escalation reason), --attr
NAME=VALUE (repeatable), --body-contains, --body-regex, --older-than,
--newer-than (the message's SentTimestamp), --max; or --all. Every condition
given must hold.

Without --yes nothing moves: replay prints what it would move, then asks at a
terminal, or exits 3 without one. To select, it receives the messages; every
message it does not move is made visible again at once (ChangeMessageVisibility
0), but each receive raises ApproximateReceiveCount. On a FIFO queue SQS hands
out a group's later messages only once the earlier ones are gone: a group is
replayed up to its first message that is not selected, and a plan sees at most
one receive's worth of each group (run again for the rest).

--rehearse copies a sample of the selected messages into an in-memory SQS
(sqsfake) with queues like the real ones, runs the same replay there, and
reports what arrived: nothing real is changed.

The attempt counter goes on by default (this replay counts as one, as the
replayer counts); --reset-counter sends the messages without it.`,
		Example: `  sqskit replay orders-dlq --reason attempts-exhausted          # what would move
  sqskit replay orders-dlq --reason attempts-exhausted --yes    # move them
  sqskit replay ops-queue --id 3f2a… --to orders --reset-counter --yes
  sqskit replay orders-dlq --older-than 2h --max 100 --rehearse
  sqskit replay orders-dlq --all -o json --yes`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError("replay takes one queue (a name or URL), got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReplay(cmd.Context(), a, args[0], f, cmd.Flags().Changed("sample"))
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&f.ids, "id", nil, "select the message with this MessageId or original id (repeatable)")
	fl.BoolVar(&f.all, "all", false, "select every message (instead of a condition)")
	fl.StringVar(&f.reason, "reason", "", "select messages whose replay metadata gives this escalation reason")
	fl.StringArrayVar(&f.attrs, "attr", nil, "select messages with attribute NAME equal to VALUE: NAME=VALUE (repeatable)")
	fl.StringVar(&f.bodyContains, "body-contains", "", "select messages whose body contains this text")
	fl.StringVar(&f.bodyRegex, "body-regex", "", "select messages whose body matches this regular expression (Go syntax)")
	fl.DurationVar(&f.olderThan, "older-than", 0, "select messages sent longer ago than this (e.g. 2h)")
	fl.DurationVar(&f.newerThan, "newer-than", 0, "select messages sent less long ago than this (e.g. 30m)")
	fl.IntVar(&f.max, "max", 0, "replay at most this many of the selected messages (0: no limit)")
	fl.StringVar(&f.to, "to", "", "send every selected message to this queue instead of its source")
	fl.BoolVar(&f.resetCounter, "reset-counter", false, "send the messages without their attempt counter (default: it goes on)")
	fl.StringVar(&f.counter, "counter-attribute", replay.DefaultCounterAttribute, "the replayer's attempt counter attribute")
	fl.BoolVar(&f.rehearse, "rehearse", false, "run the replay on an in-memory copy of a sample of the selected messages; change nothing real")
	fl.IntVar(&f.sample, "sample", 10, "with --rehearse: how many selected messages to copy (1 to 1000)")
	return cmd
}

// selection is the compiled selection flags: every condition set must hold.
type selection struct {
	all                  bool
	ids                  map[string]bool
	reason               string
	attrs                map[string]string
	contains             string
	re                   *regexp.Regexp
	olderThan, newerThan time.Duration
	counter              string
}

// compileSelection checks the selection flags; every mistake is a usage
// error.
func compileSelection(f replayFlags, sampleSet bool) (*selection, error) {
	s := &selection{all: f.all, reason: f.reason, contains: f.bodyContains, olderThan: f.olderThan, newerThan: f.newerThan, counter: f.counter}
	conditions := len(f.ids) + len(f.attrs)
	for _, c := range []string{f.reason, f.bodyContains, f.bodyRegex} {
		if c != "" {
			conditions++
		}
	}
	if f.olderThan != 0 {
		conditions++
	}
	if f.newerThan != 0 {
		conditions++
	}
	switch {
	case conditions == 0 && !f.all:
		return nil, usageError("replay: say which messages: --id, --reason, --attr, --body-contains, --body-regex, --older-than, --newer-than, or --all")
	case conditions > 0 && f.all:
		return nil, usageError("replay: --all selects every message; it does not combine with other conditions")
	case f.olderThan < 0 || f.newerThan < 0:
		return nil, usageError("replay: --older-than and --newer-than take a positive duration")
	case f.olderThan != 0 && f.newerThan != 0 && f.newerThan <= f.olderThan:
		return nil, usageError("replay: --older-than %v and --newer-than %v select nothing (a message cannot be both)", f.olderThan, f.newerThan)
	case f.max < 0:
		return nil, usageError("replay: --max %d: want 0 (no limit) or more", f.max)
	case sampleSet && !f.rehearse:
		return nil, usageError("replay: --sample is for --rehearse")
	case f.rehearse && (f.sample < 1 || f.sample > 1000):
		return nil, usageError("replay: --sample %d: want 1 to 1000", f.sample)
	case f.counter == "" || f.counter == replay.MetadataAttribute:
		return nil, usageError("replay: --counter-attribute %q is not a counter attribute", f.counter)
	}
	// The policy the flags make (the counter attribute's name above all) is
	// checked now, so that a bad name is a bad argument before any call.
	if err := replayPolicy(f).Validate(); err != nil {
		return nil, usageError("replay: --counter-attribute %q: %v", f.counter, err)
	}
	if len(f.ids) > 0 {
		s.ids = map[string]bool{}
		for _, id := range f.ids {
			if strings.TrimSpace(id) == "" {
				return nil, usageError("replay: --id is empty")
			}
			s.ids[strings.TrimSpace(id)] = true
		}
	}
	if len(f.attrs) > 0 {
		s.attrs = map[string]string{}
		for _, kv := range f.attrs {
			name, value, ok := strings.Cut(kv, "=")
			if !ok || name == "" {
				return nil, usageError("replay: --attr %q: want NAME=VALUE", kv)
			}
			s.attrs[name] = value
		}
	}
	if f.bodyRegex != "" {
		re, err := regexp.Compile(f.bodyRegex)
		if err != nil {
			return nil, usageError("replay: --body-regex: %v", err)
		}
		s.re = re
	}
	return s, nil
}

// match says whether m is selected, at now.
func (s *selection) match(m *types.Message, now time.Time) bool {
	if s.all {
		return true
	}
	md, _ := parking.Read(m.MessageAttributes, s.counter)
	if s.ids != nil && !s.ids[aws.ToString(m.MessageId)] && (md.OriginalID == "" || !s.ids[md.OriginalID]) {
		return false
	}
	if s.reason != "" && string(md.Reason) != s.reason {
		return false
	}
	if s.attrs != nil {
		attrs := replay.Restore(m.MessageAttributes, s.counter)
		for name, want := range s.attrs {
			v, ok := attrs[name]
			if !ok || v.StringValue == nil || *v.StringValue != want {
				return false
			}
		}
	}
	body := aws.ToString(m.Body)
	if s.contains != "" && !strings.Contains(body, s.contains) {
		return false
	}
	if s.re != nil && !s.re.MatchString(body) {
		return false
	}
	if s.olderThan != 0 || s.newerThan != 0 {
		sent, ok := sentAt(m)
		if !ok {
			return false
		}
		age := now.Sub(sent)
		if s.olderThan != 0 && age <= s.olderThan {
			return false
		}
		if s.newerThan != 0 && age >= s.newerThan {
			return false
		}
	}
	return true
}

// sentAt is m's SentTimestamp.
func sentAt(m *types.Message) (time.Time, bool) {
	ms, err := strconv.ParseInt(m.Attributes[string(types.MessageSystemAttributeNameSentTimestamp)], 10, 64)
	if err != nil || ms <= 0 {
		return time.Time{}, false
	}
	return time.UnixMilli(ms).UTC(), true
}

// replayQueues is what replay knows of the queue it replays from, read
// before anything changes.
type replayQueues struct {
	source    string            // URL
	attrs     map[string]string // the source's attributes
	to        string            // --to's URL, or ""
	toAttrs   map[string]string
	sources   []string          // ListDeadLetterSourceQueues: the queues that dead-letter here
	arnToURL  map[string]string // known queues by ARN
	targetErr map[string]string // ARN → why it is no target
}

// resolveReplayQueues checks the queues: each must exist, --to must not be
// the source, and the source must have no redrive policy of its own (each
// receive to select would count toward it). Only reads.
func resolveReplayQueues(ctx context.Context, a *app, c *sqs.Client, queue, to string) (*replayQueues, error) {
	q := &replayQueues{arnToURL: map[string]string{}, targetErr: map[string]string{}}
	var err error
	if q.source, err = a.queueURL(ctx, queue); err != nil {
		return nil, err
	}
	if q.attrs, err = queueAttributes(ctx, c, q.source, queue); err != nil {
		return nil, err
	}
	if rp := q.attrs[string(types.QueueAttributeNameRedrivePolicy)]; rp != "" {
		return nil, usageError("queue %q has a redrive policy of its own (%s): every receive to select messages would count toward it, and SQS would move them on; replay works on dead-letter and operator queues", queue, rp)
	}
	q.arnToURL[q.attrs[string(types.QueueAttributeNameQueueArn)]] = q.source
	if to != "" {
		if q.to, err = a.queueURL(ctx, to); err != nil {
			return nil, err
		}
		if queueref.Same(q.to, q.source) || queueref.Same(to, queue) {
			return nil, usageError("--to %q is the queue replayed from", to)
		}
		if q.toAttrs, err = queueAttributes(ctx, c, q.to, to); err != nil {
			return nil, err
		}
		q.arnToURL[q.toAttrs[string(types.QueueAttributeNameQueueArn)]] = q.to
		return q, nil
	}
	out, err := c.ListDeadLetterSourceQueues(ctx, &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: aws.String(q.source)})
	if err != nil {
		// An emulator without the call (fauxqs): routing by
		// DeadLetterQueueSourceArn and metadata still works.
		return q, nil
	}
	q.sources = out.QueueUrls
	for _, u := range q.sources {
		attrs, err := queueAttributes(ctx, c, u, u)
		if err != nil {
			continue
		}
		q.arnToURL[attrs[string(types.QueueAttributeNameQueueArn)]] = u
	}
	return q, nil
}

// urlOfArn finds the URL of the queue arn names (arn:aws:sqs:REGION:ACCOUNT:NAME).
func (q *replayQueues) urlOfArn(ctx context.Context, c *sqs.Client, arn string) (string, string) {
	if u, ok := q.arnToURL[arn]; ok {
		return u, ""
	}
	if why, ok := q.targetErr[arn]; ok {
		return "", why
	}
	parts := strings.Split(arn, ":")
	if len(parts) != 6 || parts[0] != "arn" || parts[2] != "sqs" || parts[5] == "" {
		q.targetErr[arn] = fmt.Sprintf("its source %q is not a queue ARN", arn)
		return "", q.targetErr[arn]
	}
	out, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(parts[5]), QueueOwnerAWSAccountId: aws.String(parts[4])})
	if err != nil {
		q.targetErr[arn] = fmt.Sprintf("its source queue %s: %v", parts[5], shortError(err))
		return "", q.targetErr[arn]
	}
	q.arnToURL[arn] = aws.ToString(out.QueueUrl)
	return q.arnToURL[arn], ""
}

// checkParkedFrom accepts a source named by a message's metadata (which
// whoever sent the message wrote) only when that queue really dead-letters
// to the queue the metadata says the message was parked from: a message
// cannot send itself to any queue it names.
func (q *replayQueues) checkParkedFrom(ctx context.Context, c *sqs.Client, url, from string) string {
	if from == "" {
		return "its replay metadata names a source but no queue it was parked from: pass --to"
	}
	key := url + "\x00" + from
	if why, ok := q.targetErr[key]; ok {
		return why
	}
	why := ""
	attrs, err := queueAttributes(ctx, c, url, url)
	var rp struct {
		DeadLetterTargetArn string `json:"deadLetterTargetArn"`
	}
	switch {
	case err != nil:
		why = fmt.Sprintf("its source queue %s: %v", queueref.Name(url), shortError(err))
	case json.Unmarshal([]byte(attrs[string(types.QueueAttributeNameRedrivePolicy)]), &rp) != nil || rp.DeadLetterTargetArn == "":
		why = fmt.Sprintf("its replay metadata names %s as its source, which dead-letters nowhere: pass --to", queueref.Name(url))
	case arnName(rp.DeadLetterTargetArn) != queueref.Name(from):
		why = fmt.Sprintf("its replay metadata names %s as its source, which dead-letters to %s, not to %s where it was parked from: pass --to",
			queueref.Name(url), arnName(rp.DeadLetterTargetArn), queueref.Name(from))
	}
	q.targetErr[key] = why
	return why
}

// target is where m goes, or why it goes nowhere. Called from one
// goroutine at a time (the plan's recorder holds its lock).
func (q *replayQueues) target(ctx context.Context, c *sqs.Client, m *types.Message, counter string) (string, string) {
	if q.to != "" {
		return q.to, ""
	}
	var url, why string
	if arn := m.Attributes[string(types.MessageSystemAttributeNameDeadLetterQueueSourceArn)]; arn != "" {
		url, why = q.urlOfArn(ctx, c, arn)
	} else if md, bad := parking.Read(m.MessageAttributes, counter); bad == nil && md.SourceArn != "" {
		url, why = q.urlOfArn(ctx, c, md.SourceArn)
		if why == "" {
			why = q.checkParkedFrom(ctx, c, url, md.From)
		}
	} else if len(q.sources) == 1 {
		url = q.sources[0]
	} else {
		return "", "no source known (no DeadLetterQueueSourceArn, no source in its replay metadata, and not exactly one source queue): pass --to"
	}
	if why == "" && queueref.Same(url, q.source) {
		why = "its source is the queue replayed from: pass --to"
	}
	if why != "" {
		return "", why
	}
	return url, ""
}

// shortError is err's API code and message, without the SDK's wrapping.
func shortError(err error) string {
	var missing *types.QueueDoesNotExist
	if errors.As(err, &missing) {
		return "does not exist"
	}
	if s := strings.TrimSpace(err.Error()); s != "" {
		if i := strings.LastIndex(s, "api error "); i >= 0 {
			return s[i+len("api error "):]
		}
		return s
	}
	return "failed"
}

// policy is the replayer's policy for an operator's replay: now, whatever
// the counter says.
func replayPolicy(f replayFlags) replay.Policy {
	return replay.Policy{
		CounterAttribute: f.counter,
		MaxAttempts:      1_000_000,
		Backoff:          backoffNow{},
		MaxBackoff:       time.Second,
		ResetCounter:     f.resetCounter,
	}
}

func runReplay(ctx context.Context, a *app, queue string, f replayFlags, sampleSet bool) error {
	sel, err := compileSelection(f, sampleSet)
	if err != nil {
		return err
	}
	c, err := a.sqs(ctx)
	if err != nil {
		return err
	}
	q, err := resolveReplayQueues(ctx, a, c, queue, f.to)
	if err != nil {
		return err
	}
	policy := replayPolicy(f)
	p, err := planReplay(ctx, c, q, sel, policy, f.max)
	if err != nil {
		return err
	}
	if f.rehearse {
		if err := a.emitPlan(p, "REHEARSAL"); err != nil {
			return err
		}
		r, err := rehearse(ctx, c, q, p, policy, f.sample)
		if err != nil {
			return err
		}
		return a.emitRehearsal(r)
	}
	if !a.yes {
		if err := a.emitPlan(p, "DRY RUN"); err != nil {
			return err
		}
		if len(p.Selected) == 0 {
			return nil
		}
		if err := a.confirm(ctx, fmt.Sprintf("Replay %d messages from %s?", len(p.Selected), queueref.Name(q.source)), "yes"); err != nil {
			return err
		}
	}
	todo := make(map[string]string, len(p.Selected))
	order := make([]string, 0, len(p.Selected))
	for _, s := range p.Selected {
		todo[s.ID] = s.target
		order = append(order, s.ID)
	}
	bar := a.progress("replay", len(todo))
	res, runErr := executeReplay(ctx, c, q.source, order, todo, policy, func(string) { bar.add(1) })
	bar.finish()
	res.Queue = q.source
	if p.held > 0 { // the plan's release failed too: say so
		res.Note = heldNote(p.held+res.held, p.Received+res.received)
	}
	res.Skipped = p.NotSelected + len(p.NotReplayable) + p.OverMax
	if len(p.NotReplayable) > 0 {
		res.NotReplayable = p.NotReplayable
	}
	res.NotFound = p.NotFound
	if err := a.emitResult(res); err != nil {
		return err
	}
	switch {
	case runErr != nil:
		return fmt.Errorf("replay: %w", runErr)
	case res.Failed > 0:
		return &exitError{code: exitFailed, err: fmt.Errorf("replay: %d of %d messages not moved (they are in %s; run again)", res.Failed, len(todo), queueref.Name(q.source))}
	case len(res.NotReplayable) > 0 || len(res.NotFound) > 0:
		// Asked for and not moved: listed above, and not a success.
		return &exitError{code: exitFailed, err: fmt.Errorf("replay: %d selected messages not replayable and %d --id not found (listed; nothing was done to them)", len(res.NotReplayable), len(res.NotFound))}
	}
	return nil
}

// backoffNow replays at once.
type backoffNow struct{}

func (backoffNow) Delay(int, time.Duration) time.Duration { return 0 }

// targetName is a queue URL's name, for tables.
func targetName(url string) string { return queueref.Name(url) }

// table helpers shared by plan and results.
func age(now, sent time.Time) string {
	if sent.IsZero() {
		return "-"
	}
	return now.Sub(sent).Round(time.Second).String()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
