package handler

import (
	"context"
	"encoding/json"
	"errors"
	"hash/fnv"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// Seeds: the event source mapping's object and EventBridge Pipes' bare
// array, standard and FIFO, with the fields Lambda sends.
var lambdaEventSeeds = []string{
	`{"Records":[{"messageId":"059f36b4-87a3-44ab-83d2-661975830a7d","receiptHandle":"AQEBwJnKyrHigUMZj6rYigCgxlaS3SLy0a","body":"test","attributes":{"ApproximateReceiveCount":"1","SentTimestamp":"1545082649183","SenderId":"AIDAIENQZJOLO23YVJ4VO","ApproximateFirstReceiveTimestamp":"1545082649185"},"messageAttributes":{"n":{"stringValue":"1","dataType":"Number"},"b":{"binaryValue":"AAEC","dataType":"Binary"}},"md5OfBody":"098f6bcd4621d373cade4e832627b4f6","eventSource":"aws:sqs","eventSourceARN":"arn:aws:sqs:us-east-2:123456789012:my-queue","awsRegion":"us-east-2"}]}`,
	`[{"messageId":"a","body":"1","attributes":{"MessageGroupId":"g"},"eventSourceARN":"arn:aws:sqs:us-east-1:123456789012:q.fifo"},{"messageId":"b","body":"22","attributes":{"MessageGroupId":"g"},"eventSourceARN":"arn:aws:sqs:us-east-1:123456789012:q.fifo"},{"messageId":"c","body":"333","attributes":{"MessageGroupId":"h"},"eventSourceARN":"arn:aws:sqs:us-east-1:123456789012:q.fifo"}]`,
	`{"Records":[{"messageId":"a"},{"messageId":"a"},{"messageId":""}]}`,
	`{"Records":null}`,
	` [ ] `,
	`null`,
	`{"Records":[{"messageId":"x","messageAttributes":{"k":{"dataType":"String","stringValue":"v","stringListValues":[]}}}]}`,
}

// FuzzLambdaEvent decodes any bytes as an invocation's event and hands it
// to a Lambda handler. Decoding never panics and round-trips in both
// shapes (the object and the Pipes array carry the same records); Handle
// fails a malformed event as a whole, naming the first record without a
// messageId, and otherwise lists exactly the messages that did not
// succeed, each once, handles each message at most once, and on FIFO
// sources never lets a message of a group succeed after an earlier one
// that did not.
func FuzzLambdaEvent(f *testing.F) {
	for _, s := range lambdaEventSeeds {
		f.Add([]byte(s), uint8(2))
	}
	f.Fuzz(func(t *testing.T, data []byte, failEvery uint8) {
		var ev Event
		if err := json.Unmarshal(data, &ev); err != nil {
			return
		}
		checkEventRoundTrip(t, ev)
		var mu sync.Mutex
		calls, succeeded := map[string]int{}, map[string]bool{}
		l, err := NewLambda(func(_ context.Context, m *Message) error {
			mu.Lock()
			defer mu.Unlock()
			calls[m.ID]++
			if fails(m.ID, m.Body, failEvery) {
				return errors.New("fails")
			}
			succeeded[m.ID] = true
			return nil
		}, func(o *LambdaOptions) { o.Concurrency = 3 })
		if err != nil {
			t.Fatal(err)
		}
		resp, err := l.Handle(context.Background(), ev)
		if first := firstWithoutID(ev); first >= 0 {
			var me *MalformedEventError
			if !errors.As(err, &me) || me.Record != first || len(calls) != 0 {
				t.Fatalf("expect a MalformedEventError for record %d and no handler call, got %v, %d calls", first, err, len(calls))
			}
			return
		}
		if err != nil {
			t.Fatalf("expect a response, got %v", err)
		}
		checkResponse(t, ev, resp, succeeded)
		for id, n := range calls {
			if n > 1 {
				t.Fatalf("message %q handled %d times in one invocation", id, n)
			}
		}
	})
}

// FuzzBatchLambdaEvent hands any decodable event to a batch handler whose
// results follow a pattern (nil, an error, or no result at all): exactly
// the messages without a nil result are listed, and on FIFO sources the
// later messages of a group behind one that failed are listed too, even if
// the handler reported them done.
func FuzzBatchLambdaEvent(f *testing.F) {
	for _, s := range lambdaEventSeeds {
		f.Add([]byte(s), []byte{0, 1, 0, 2})
	}
	f.Fuzz(func(t *testing.T, data, pattern []byte) {
		var ev Event
		if err := json.Unmarshal(data, &ev); err != nil || firstWithoutID(ev) >= 0 {
			return
		}
		l, err := NewBatchLambda(func(_ context.Context, msgs []*Message) []error {
			var out []error
			for i := range msgs {
				p := byte(0)
				if len(pattern) > 0 {
					p = pattern[i%len(pattern)] % 3
				}
				if p == 2 {
					return out // no more results
				}
				if p == 1 {
					out = append(out, errors.New("fails"))
				} else {
					out = append(out, nil)
				}
			}
			return out
		})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := l.Handle(context.Background(), ev)
		if err != nil {
			t.Fatalf("expect a response, got %v", err)
		}
		// The oracle: walk the unique messages in order as the handler saw
		// them.
		succeeded := map[string]bool{}
		failedGroups := map[string]bool{}
		fifo := isFIFOEvent(ev)
		i := 0
		stopped := false
		for _, r := range uniqueRecords(ev) {
			p := byte(0)
			if len(pattern) > 0 {
				p = pattern[i%len(pattern)] % 3
			}
			i++
			if p == 2 {
				stopped = true
			}
			group := r.Attributes["MessageGroupId"]
			ok := !stopped && p == 0 && !(fifo && failedGroups[group])
			if ok {
				succeeded[r.MessageId] = true
			} else {
				failedGroups[group] = true
			}
		}
		checkResponse(t, ev, resp, succeeded)
	})
}

func fails(id, body string, every uint8) bool {
	if every == 0 {
		return false
	}
	h := fnv.New32a()
	h.Write([]byte(id + "\x00" + body))
	return h.Sum32()%uint32(every) == 0
}

func firstWithoutID(ev Event) int {
	for i, r := range ev.Records {
		if r.MessageId == "" {
			return i
		}
	}
	return -1
}

func isFIFOEvent(ev Event) bool {
	for _, r := range ev.Records {
		if strings.HasSuffix(r.EventSourceARN, ".fifo") {
			return true
		}
	}
	return false
}

// uniqueRecords is the event's records without repeated messageIds, first
// occurrence kept.
func uniqueRecords(ev Event) []events.SQSMessage {
	seen := map[string]bool{}
	var out []events.SQSMessage
	for _, r := range ev.Records {
		if !seen[r.MessageId] {
			seen[r.MessageId] = true
			out = append(out, r)
		}
	}
	return out
}

// checkResponse: the response lists exactly the unique messages that did
// not succeed, each once; on FIFO sources no message succeeded after an
// earlier one of its group that did not.
func checkResponse(t *testing.T, ev Event, resp events.SQSEventResponse, succeeded map[string]bool) {
	t.Helper()
	listed := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		if listed[f.ItemIdentifier] {
			t.Fatalf("message %q listed twice", f.ItemIdentifier)
		}
		listed[f.ItemIdentifier] = true
	}
	unique := uniqueRecords(ev)
	inEvent := map[string]bool{}
	for _, r := range unique {
		inEvent[r.MessageId] = true
		if listed[r.MessageId] == succeeded[r.MessageId] {
			t.Fatalf("message %q: succeeded=%v, listed=%v", r.MessageId, succeeded[r.MessageId], listed[r.MessageId])
		}
	}
	for id := range listed {
		if !inEvent[id] {
			t.Fatalf("listed %q, which is not in the event", id)
		}
	}
	if isFIFOEvent(ev) {
		notDone := map[string]bool{}
		for _, r := range unique {
			g := r.Attributes["MessageGroupId"]
			if succeeded[r.MessageId] && notDone[g] {
				t.Fatalf("message %q of group %q succeeded after an earlier one of its group did not", r.MessageId, g)
			}
			if !succeeded[r.MessageId] {
				notDone[g] = true
			}
		}
	}
}

// normalized drops the one difference encoding makes that is not ours:
// aws-lambda-go omits an empty binaryValue, which decodes as nil.
func normalized(rs []events.SQSMessage) []events.SQSMessage {
	out := make([]events.SQSMessage, len(rs))
	for i, r := range rs {
		if r.MessageAttributes != nil {
			attrs := make(map[string]events.SQSMessageAttribute, len(r.MessageAttributes))
			for k, v := range r.MessageAttributes {
				if len(v.BinaryValue) == 0 {
					v.BinaryValue = nil
				}
				attrs[k] = v
			}
			r.MessageAttributes = attrs
		}
		out[i] = r
	}
	return out
}

// checkEventRoundTrip: an Event encodes as the object shape and as the
// Pipes array, and both decode back to the same records.
func checkEventRoundTrip(t *testing.T, ev Event) {
	t.Helper()
	object, err := json.Marshal(events.SQSEvent(ev))
	if err != nil {
		t.Fatalf("encode the object shape: %v", err)
	}
	array, err := json.Marshal(ev.Records)
	if err != nil {
		t.Fatalf("encode the Pipes array: %v", err)
	}
	for shape, b := range map[string][]byte{"object": object, "array": array} {
		var back Event
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s shape: decode %s: %v", shape, b, err)
		}
		if len(back.Records) != len(ev.Records) || (len(ev.Records) > 0 && !reflect.DeepEqual(normalized(back.Records), normalized(ev.Records))) {
			t.Fatalf("%s shape: round trip changed the records:\n got  %+v\n want %+v", shape, back.Records, ev.Records)
		}
	}
}
