package proof

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/fifo"
	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/replay"
)

// ledger is one queue's record of the soak, kept by the producers and the
// handler as things happen, in arrays indexed by message so that a million
// messages cost a few tens of megabytes. It checks what can be checked at
// once (FIFO order of first successes, one copy per FIFO send) and keeps
// what the end needs (who succeeded, how many copies).
type ledger struct {
	mu   sync.Mutex
	fifo bool

	sent               []bool   // acknowledged to the producer
	unconfirmed        []uint16 // Result.Unconfirmed summed over every send of it
	successes          []uint32 // handler returned nil
	deliveries         []uint32 // handler called
	firstOKID          []uint64 // MessageId (hashed) of its first success
	firstOKDeleted     []bool   // a consumer confirmed the delete of that copy
	firstCopy          []uint64 // MessageId (hashed) of its first copy seen at attempt 0
	moreCopies         map[int][]uint64
	replayCopy         map[[2]int]uint64 // FIFO: (message, replay) → the one MessageId allowed
	replayed           map[uint64]bool   // MessageIds of replayed copies seen
	lastSeq            map[int]string    // FIFO group → SequenceNumber of its last first success at attempt 0
	sameIDAgain        int               // successes of a MessageId that had succeeded before
	againAfterDelete   int               // … after a consumer had confirmed its delete
	windowGone         map[int]bool      // FIFO sends that ran out of the dedup window
	reordered          int               // producer results that say Reordered
	forgedOK           map[string]int    // forged bodies handled after a replay
	restoreBad         int               // deliveries whose attributes did not restore
	outOfOrder         int               // FIFO first successes behind a later message of their group
	twiceInDedupWindow int               // FIFO copies enqueued twice inside the dedup window

	violations []string
	violated   int
}

func newLedger(n int, isFIFO bool) *ledger {
	return &ledger{
		fifo: isFIFO, sent: make([]bool, n), unconfirmed: make([]uint16, n), successes: make([]uint32, n), deliveries: make([]uint32, n),
		firstOKID: make([]uint64, n), firstOKDeleted: make([]bool, n), firstCopy: make([]uint64, n), moreCopies: map[int][]uint64{}, replayCopy: map[[2]int]uint64{},
		replayed: map[uint64]bool{}, lastSeq: map[int]string{}, windowGone: map[int]bool{}, forgedOK: map[string]int{},
	}
}

// violate records a broken invariant; the first twenty are kept verbatim.
func (l *ledger) violate(format string, args ...any) {
	l.violated++
	if len(l.violations) < 20 {
		l.violations = append(l.violations, fmt.Sprintf(format, args...))
	}
}

func (l *ledger) Violate(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.violate(format, args...)
}

func hashID(id string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(id))
	return h.Sum64() | 1 // never 0, which means none
}

// sendResult records one send of message i.
func (l *ledger) sendResult(i int, res fifo.Result) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.unconfirmed[i] += uint16(min(res.Unconfirmed, 1000))
	if res.Reordered {
		l.reordered++
	}
	var we *fifo.WindowExceededError
	if res.Err != nil && errors.As(res.Err, &we) {
		l.windowGone[i] = true
	}
	if res.Err == nil {
		l.sent[i] = true
	}
}

// delivered records a handler call for message i: the copy it is
// (MessageId, and the replay it came from), whether it succeeded, and on
// FIFO queues its SequenceNumber.
func (l *ledger) delivered(i, group int, m *handler.Message, attempt int, ok bool) {
	id := hashID(m.ID)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.deliveries[i]++
	switch {
	case attempt == 0 && l.firstCopy[i] == 0:
		l.firstCopy[i] = id
	case attempt == 0 && l.firstCopy[i] != id:
		known := false
		for _, c := range l.moreCopies[i] {
			known = known || c == id
		}
		if !known {
			l.moreCopies[i] = append(l.moreCopies[i], id)
			if l.fifo && !l.windowGone[i] {
				l.twiceInDedupWindow++
				l.violate("FIFO message %d enqueued twice inside the deduplication window", i)
			}
		}
	case attempt > 0:
		l.replayed[id] = true
		if l.fifo {
			key := [2]int{i, attempt}
			if prev, ok := l.replayCopy[key]; ok && prev != id {
				l.twiceInDedupWindow++
				l.violate("FIFO message %d replayed twice as replay %d inside the deduplication window", i, attempt)
			} else if !ok {
				l.replayCopy[key] = id
			}
		}
	}
	if !ok {
		return
	}
	l.successes[i]++
	if l.successes[i] > 1 {
		if l.firstOKID[i] == id {
			l.sameIDAgain++
			if l.firstOKDeleted[i] {
				l.againAfterDelete++
				l.violate("message %d: its copy succeeded again after a consumer had reported its delete done", i)
			}
		}
		return
	}
	l.firstOKID[i] = id
	if !l.fifo || attempt != 0 {
		return // a replayed message is a new message, behind its group
	}
	seq := m.Attributes["SequenceNumber"]
	if last, ok := l.lastSeq[group]; ok && seqLess(seq, last) {
		l.outOfOrder++
		l.violate("FIFO group %d: message %d (sequence %s) first succeeded after a later one (sequence %s)", group, i, seq, last)
	}
	l.lastSeq[group] = seq
}

// deleted records a consumer's report (Hooks.Deleted) that the copy of
// message i with MessageId id was deleted. A copy succeeds again only if
// its delete was never reported done: its delete failed, its lease was
// lost, or the consumer had given it up (timeout, shutdown) when the
// handler returned.
func (l *ledger) deleted(i int, id string) {
	h := hashID(id)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.firstOKID[i] == h {
		l.firstOKDeleted[i] = true
	}
}

// seqLess compares SequenceNumbers: decimal strings, longer is larger.
func seqLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// replayAttempt is the replay a delivered message came from: the counter
// attribute, or the count kept in the replay metadata; 0 for an original.
func replayAttempt(m *handler.Message) int {
	if v, ok := m.MessageAttributes[replay.DefaultCounterAttribute]; ok {
		n, _ := strconv.Atoi(v.StringValue)
		return n
	}
	if v, ok := m.MessageAttributes[replay.MetadataAttribute]; ok {
		var md struct {
			N int `json:"n"`
		}
		_ = json.Unmarshal([]byte(v.StringValue), &md)
		return md.N
	}
	return 0
}

// sameAttributes compares message attributes by value.
func sameAttributes(a, b map[string]types.MessageAttributeValue) bool {
	if len(a) != len(b) {
		return false
	}
	for k, va := range a {
		vb, ok := b[k]
		if !ok || aws.ToString(va.DataType) != aws.ToString(vb.DataType) || aws.ToString(va.StringValue) != aws.ToString(vb.StringValue) || string(va.BinaryValue) != string(vb.BinaryValue) {
			return false
		}
	}
	return true
}

// escalations is what the operator queue held at the end, by body.
type escalations struct {
	reasons  map[string][]replay.Reason
	byReason map[replay.Reason]int
	total    int
}

func (e *escalations) add(body string, reason replay.Reason) {
	e.reasons[body] = append(e.reasons[body], reason)
	e.byReason[reason]++
	e.total++
}

func (e *escalations) String() string {
	var parts []string
	for r, n := range e.byReason {
		parts = append(parts, fmt.Sprintf("%s %d", r, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
