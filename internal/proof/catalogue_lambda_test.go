package proof

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/replay"
)

// lambdaCase is an event as Lambda or EventBridge Pipes would pass it,
// raw JSON, and what the handler must make of it.
type lambdaCase struct {
	name  string
	event string
	// decodeErr: the JSON does not decode into an Event; the error holds a
	// *json.SyntaxError, *json.UnmarshalTypeError or
	// base64.CorruptInputError, or says the nesting is too deep (the
	// runtime then fails the invocation before the handler runs).
	decodeErr bool
	// malformed: Handle returns a *handler.MalformedEventError naming
	// this record.
	malformed int
	// fail: the handler fails the messages with these ids.
	fail []string
	// wantFailed: the ids the response must list, each once, in any
	// order; nil means none.
	wantFailed []string
}

func records(n int, format string) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf(format, i)
	}
	return strings.Join(parts, ",")
}

func lambdaCases() []lambdaCase {
	const fifoArn = `"eventSourceARN":"arn:aws:sqs:us-east-1:123456789012:orders.fifo"`
	var oddIDs []string
	for i := 1; i < 10000; i += 2 {
		oddIDs = append(oddIDs, fmt.Sprint("m", i))
	}
	return []lambdaCase{
		{name: "an object with no Records", event: `{}`, malformed: -1},
		{name: "an empty Pipes array", event: `[]`, malformed: -1},
		{name: "null", event: `null`, malformed: -1},
		{name: "Records null", event: `{"Records":null}`, malformed: -1},
		{name: "a JSON string", event: `"text"`, decodeErr: true},
		{name: "a number", event: `42`, decodeErr: true},
		{name: "Records a string", event: `{"Records":"x"}`, decodeErr: true},
		{name: "a Pipes array of numbers", event: `[1,2]`, decodeErr: true},
		{name: "messageId a number", event: `{"Records":[{"messageId":5}]}`, decodeErr: true},
		{name: "truncated JSON", event: `{"Records":[{"messageId":"a"`, decodeErr: true},
		{name: "trailing data after the event", event: `{"Records":[]} x`, decodeErr: true},
		{name: "messageAttributes a string", event: `{"Records":[{"messageId":"a","messageAttributes":{"k":"v"}}]}`, decodeErr: true},
		{name: "attributes with a number value", event: `[{"messageId":"a","attributes":{"ApproximateReceiveCount":3}}]`, decodeErr: true},
		{name: "binaryValue not base64", event: `{"Records":[{"messageId":"a","messageAttributes":{"k":{"dataType":"Binary","binaryValue":"%%%"}}}]}`, decodeErr: true},
		{name: "nested 100,000 arrays deep", event: strings.Repeat("[", 100000) + strings.Repeat("]", 100000), decodeErr: true},
		{name: "a record without messageId", event: `{"Records":[{"body":"x"}]}`, malformed: 0},
		{name: "a Pipes record with an empty messageId after a good one", event: `[{"messageId":"a"},{"messageId":""}]`, malformed: 1},
		{name: "the same messageId twice, failing", event: `{"Records":[{"messageId":"a"},{"messageId":"a"}]}`, malformed: -1, fail: []string{"a"}, wantFailed: []string{"a"}},
		{name: "the same messageId twice, succeeding", event: `[{"messageId":"a"},{"messageId":"a"}]`, malformed: -1},
		{name: "10,000 records, odd ones failing", event: `{"Records":[` + records(10000, `{"messageId":"m%d"}`) + `]}`, malformed: -1, fail: oddIDs, wantFailed: oddIDs},
		{name: "a body with NUL and lone surrogate escapes", event: `[{"messageId":"a","body":"\u0000\ud800"}]`, malformed: -1},
		{name: "a FIFO source without group ids, the first failing", event: `{"Records":[{"messageId":"a",` + fifoArn + `},{"messageId":"b",` + fifoArn + `}]}`,
			malformed: -1, fail: []string{"a"}, wantFailed: []string{"a", "b"}},
		{name: "a FIFO Pipes array, one group failing", event: `[{"messageId":"a","attributes":{"MessageGroupId":"g1"},` + fifoArn + `},` +
			`{"messageId":"b","attributes":{"MessageGroupId":"g2"},` + fifoArn + `},{"messageId":"c","attributes":{"MessageGroupId":"g1"},` + fifoArn + `}]`,
			malformed: -1, fail: []string{"a"}, wantFailed: []string{"a", "c"}},
		{name: "records from a FIFO and a standard source mixed", event: `[{"messageId":"a",` + fifoArn + `},{"messageId":"b","eventSourceARN":"arn:aws:sqs:us-east-1:123456789012:std"}]`,
			malformed: -1, fail: []string{"a"}, wantFailed: []string{"a", "b"}},
		{name: "a record without a receipt handle or body", event: `[{"messageId":"a"}]`, malformed: -1},
		{name: "whitespace before a Pipes array", event: " \n\t[{\"messageId\":\"a\"}]", malformed: -1, fail: []string{"a"}, wantFailed: []string{"a"}},
		{name: "unknown fields and wrong-case keys", event: `{"records":[{"messageId":"x"}],"Records":[{"MessageId":"a","extra":{"deep":[1,2,3]}}]}`, malformed: -1},
	}
}

func lambdaRows() []row {
	var rows []row
	for _, lc := range lambdaCases() {
		rows = append(rows, row{cat: catLambda, name: "handler.Lambda: " + lc.name, run: func(t *testing.T, w *catWorld) error {
			return runLambdaCase(lc)
		}})
	}
	rows = append(rows,
		row{cat: catLambda, name: "replay.HandleLambda: a record without messageId", run: func(t *testing.T, w *catWorld) error {
			r, err := replay.New(w.api, w.dlq, w.operator, func(o *replay.Options) { o.Target = w.main })
			if err != nil {
				return err
			}
			_, err = r.HandleLambda(context.Background(), handler.Event{Records: []events.SQSMessage{{MessageId: "a", Body: "x"}, {Body: "y"}}})
			return is(err, replay.ErrMalformedEvent)
		}},
		row{cat: catLambda, name: "replay.HandleLambda: no records", run: func(t *testing.T, w *catWorld) error {
			r, err := replay.New(w.api, w.dlq, w.operator, func(o *replay.Options) { o.Target = w.main })
			if err != nil {
				return err
			}
			resp, err := r.HandleLambda(context.Background(), handler.Event{})
			if err != nil || len(resp.BatchItemFailures) != 0 {
				return fmt.Errorf("expect success, got %v, %v", resp, err)
			}
			return nil
		}},
	)
	return rows
}

func runLambdaCase(lc lambdaCase) error {
	var ev handler.Event
	err := json.Unmarshal([]byte(lc.event), &ev)
	if lc.decodeErr {
		var syntax *json.SyntaxError
		var typ *json.UnmarshalTypeError
		var b64 base64.CorruptInputError
		if !errors.As(err, &syntax) && !errors.As(err, &typ) && !errors.As(err, &b64) && (err == nil || !strings.Contains(err.Error(), "exceeded max depth")) {
			return fmt.Errorf("expect a JSON decoding error, got %v", err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("expect the event to decode, got %v", err)
	}
	fail := map[string]bool{}
	for _, id := range lc.fail {
		fail[id] = true
	}
	var mu sync.Mutex
	calls := map[string]int{}
	l, err := handler.NewLambda(func(_ context.Context, m *handler.Message) error {
		mu.Lock()
		calls[m.ID]++
		mu.Unlock()
		if fail[m.ID] {
			return errors.New("handler failure")
		}
		return nil
	}, func(o *handler.LambdaOptions) { o.Concurrency = 4 })
	if err != nil {
		return err
	}
	resp, err := l.Handle(context.Background(), ev)
	if lc.malformed >= 0 {
		me, e := isAs[*handler.MalformedEventError](err)
		if e != nil {
			return e
		}
		if me.Record != lc.malformed {
			return fmt.Errorf("expect record %d named, got %d", lc.malformed, me.Record)
		}
		if len(calls) != 0 {
			return fmt.Errorf("expect no handler call for a malformed event, got %v", calls)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("expect a response, got %v", err)
	}
	var got []string
	for _, f := range resp.BatchItemFailures {
		got = append(got, f.ItemIdentifier)
	}
	slices.Sort(got)
	want := slices.Clone(lc.wantFailed)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		return fmt.Errorf("expect failures %v, got %v", short(want), short(got))
	}
	// Nothing lost: every record either succeeded in a handler or is listed.
	for _, r := range ev.Records {
		if calls[r.MessageId] > 1 {
			return fmt.Errorf("message %s handled %d times in one invocation", r.MessageId, calls[r.MessageId])
		}
		if !slices.Contains(got, r.MessageId) && (calls[r.MessageId] == 0 || fail[r.MessageId]) {
			return fmt.Errorf("message %s neither succeeded nor reported failed", r.MessageId)
		}
	}
	return nil
}

func short(ids []string) string {
	if len(ids) > 6 {
		return fmt.Sprintf("%v … (%d)", ids[:6], len(ids))
	}
	return fmt.Sprint(ids)
}

// recordFor is a record as an event source mapping delivers it from arn.
func recordFor(id, arn string) events.SQSMessage {
	r := events.SQSMessage{MessageId: id, ReceiptHandle: "rh-" + id, Body: "body " + id, EventSourceARN: arn,
		Attributes: map[string]string{"ApproximateReceiveCount": "1"}}
	if strings.HasSuffix(arn, ".fifo") {
		r.Attributes["MessageGroupId"] = "g"
	}
	return r
}
