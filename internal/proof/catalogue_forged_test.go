package proof

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/backoff"
	"github.com/sqskit/sqskit/replay"
	"github.com/sqskit/sqskit/sqsfake"
)

// forgery is a message that reaches a dead-letter queue with attributes
// its sender chose, and where it must end up.
type forgery struct {
	name  string
	body  string // default "forged"
	attrs map[string]types.MessageAttributeValue
	// reason is the escalation it must get; "" means it is replayed to the
	// target.
	reason replay.Reason
	// routed: the reason comes from routing (the pass), not from Decide.
	routed bool
	policy func(*replay.Policy)
	// toFIFO replays to a FIFO target from a standard DLQ.
	toFIFO bool
	// sources routes by DeadLetterQueueSourceArn instead of a Target.
	sources bool
	// check, if set, checks the decision further.
	check func(d replay.Decision) error
}

func counterAttr(dt, v string) map[string]types.MessageAttributeValue {
	return map[string]types.MessageAttributeValue{replay.DefaultCounterAttribute: str(dt, v)}
}

func metaAttr(raw string) map[string]types.MessageAttributeValue {
	return map[string]types.MessageAttributeValue{replay.MetadataAttribute: str("String", raw)}
}

func withAttr(m map[string]types.MessageAttributeValue, name string, v types.MessageAttributeValue) map[string]types.MessageAttributeValue {
	m[name] = v
	return m
}

func forgeries() []forgery {
	tenAttrs := map[string]types.MessageAttributeValue{}
	for i := range 10 {
		tenAttrs[fmt.Sprintf("a%d", i)] = str("String", "v")
	}
	return []forgery{
		{name: "counter String many", attrs: counterAttr("String", "many"), reason: replay.InvalidCounter},
		{name: "counter -1", attrs: counterAttr("Number", "-1"), reason: replay.InvalidCounter},
		{name: "counter 1.5", attrs: counterAttr("Number", "1.5"), reason: replay.InvalidCounter},
		{name: "counter 1e3", attrs: counterAttr("Number", "1e3"), reason: replay.InvalidCounter},
		{name: "counter 1,000,001", attrs: counterAttr("Number", "1000001"), reason: replay.InvalidCounter},
		{name: "counter beyond int64", attrs: counterAttr("Number", "99999999999999999999"), reason: replay.InvalidCounter},
		{name: "counter Binary", attrs: map[string]types.MessageAttributeValue{replay.DefaultCounterAttribute: {DataType: aws.String("Binary"), BinaryValue: []byte{1}}}, reason: replay.InvalidCounter},
		{name: "counter with spaces around 1", attrs: counterAttr("String", " 1 ")},
		{name: "counter at MaxAttempts", attrs: counterAttr("Number", "2"), reason: replay.AttemptsExhausted},
		{name: "counter 0 with a custom Number type", attrs: counterAttr("Number.int", "0")},
		{name: "counter in both the attribute and the metadata", attrs: withAttr(counterAttr("Number", "1"), replay.MetadataAttribute, str("String", `{"id":"x","n":1}`)), reason: replay.InvalidCounter},
		{name: "metadata not JSON", attrs: metaAttr(`{`), reason: replay.InvalidMetadata},
		{name: "metadata a JSON array", attrs: metaAttr(`[]`), reason: replay.InvalidMetadata},
		{name: "metadata a JSON string", attrs: metaAttr(`"x"`), reason: replay.InvalidMetadata},
		{name: "metadata JSON null", attrs: metaAttr(`null`), reason: replay.InvalidMetadata},
		{name: "metadata Binary", attrs: map[string]types.MessageAttributeValue{replay.MetadataAttribute: {DataType: aws.String("Binary"), BinaryValue: []byte(`{}`)}}, reason: replay.InvalidMetadata},
		{name: "metadata a Number", attrs: map[string]types.MessageAttributeValue{replay.MetadataAttribute: str("Number", "1")}, reason: replay.InvalidMetadata},
		{name: "metadata count -1", attrs: metaAttr(`{"n":-1}`), reason: replay.InvalidCounter},
		{name: "metadata count a string", attrs: metaAttr(`{"n":"x"}`), reason: replay.InvalidCounter},
		{name: "metadata count 10,000,000", attrs: metaAttr(`{"n":1e7}`), reason: replay.InvalidCounter},
		{name: "metadata count 1.5", attrs: metaAttr(`{"n":1.5}`), reason: replay.InvalidCounter},
		{name: "metadata count given twice, the last -1", attrs: metaAttr(`{"n":1,"n":-1}`), reason: replay.InvalidCounter},
		{name: "metadata previous delay -5", attrs: metaAttr(`{"prev":-5}`), reason: replay.InvalidMetadata},
		{name: "metadata previous delay 1e300", attrs: metaAttr(`{"prev":1e300}`), reason: replay.InvalidMetadata},
		{name: "metadata sent delay 901 s", attrs: metaAttr(`{"sd":901000000000}`), reason: replay.InvalidMetadata},
		{name: "metadata sent delay -1", attrs: metaAttr(`{"sd":-1}`), reason: replay.InvalidMetadata},
		{name: "metadata first failure not a time", attrs: metaAttr(`{"first":"yesterday"}`), reason: replay.InvalidMetadata},
		{name: "metadata id a number", attrs: metaAttr(`{"id":5}`), reason: replay.InvalidMetadata},
		{name: "metadata moves an attribute with an invalid name", attrs: metaAttr(`{"moved":{"a b":{"t":"String","s":"v"}}}`), reason: replay.InvalidMetadata},
		{name: "metadata moves an attribute of an unknown type", attrs: metaAttr(`{"moved":{"x":{"t":"Strange","s":"v"}}}`), reason: replay.InvalidMetadata},
		{name: "metadata moves an attribute the message also carries", attrs: withAttr(metaAttr(`{"moved":{"x":{"t":"String","s":"v"}}}`), "x", str("String", "w")), reason: replay.InvalidMetadata},
		{name: "metadata moved a string", attrs: metaAttr(`{"moved":"x"}`), reason: replay.InvalidMetadata},
		{name: "metadata nested 10,000 deep", attrs: metaAttr(`{"moved":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`), reason: replay.InvalidMetadata},
		{name: "metadata previous delay of 31 years feeding decorrelated jitter", attrs: metaAttr(`{"prev":1000000000000000000}`),
			policy: func(p *replay.Policy) { p.Backoff = backoff.DecorrelatedJitter{Base: time.Second} },
			check: func(d replay.Decision) error {
				if d.Delay > 10*time.Minute {
					return fmt.Errorf("expect the delay within MaxBackoff 10m, got %v", d.Delay)
				}
				return nil
			}},
		{name: "metadata claiming an escalation reason", attrs: metaAttr(`{"reason":"attempts-exhausted","detail":"forged"}`)},
		{name: "metadata claiming another message's id", attrs: metaAttr(`{"id":"00000000-0000-4000-8000-000000000001","first":"2020-01-01T00:00:00Z"}`),
			check: func(d replay.Decision) error {
				if d.Metadata.OriginalID != "00000000-0000-4000-8000-000000000001" {
					return fmt.Errorf("expect the claimed id kept as information, got %q", d.Metadata.OriginalID)
				}
				return nil
			}},
		{name: "no DeadLetterQueueSourceArn with Sources routing", sources: true, reason: replay.NotRoutable, routed: true},
		{name: "no group id for a FIFO target", toFIFO: true, reason: replay.NotRoutable, routed: true},
		{name: "ten attributes with KeepAttributesInPlace", attrs: tenAttrs, reason: replay.AttributeBudget, policy: func(p *replay.Policy) { p.KeepAttributesInPlace = true }},
		{name: "a body with no room for the replay metadata", body: strings.Repeat("x", 1<<20-100), reason: replay.TooLarge},
	}
}

func forgedRows() []row {
	var rows []row
	for _, f := range forgeries() {
		rows = append(rows, row{cat: catForged, name: f.name, calls: true, run: func(t *testing.T, _ *catWorld) error { return runForgery(t, f) }})
	}
	return rows
}

// runForgery checks the Policy's decision on the forged message, then puts
// it in a DLQ and drains it: it must reach the operator queue with the
// reason in its metadata, or the target, and leave the DLQ.
func runForgery(t *testing.T, f forgery) (err error) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		srv := sqsfake.New()
		api := srv.Client()
		create := func(name string, attrs map[string]string) string {
			out, e := api.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
			if e != nil {
				t.Fatal(e)
			}
			return *out.QueueUrl
		}
		dlq, operator := create("dlq", nil), create("operator", nil)
		target := create("main", nil)
		if f.toFIFO {
			target = create("main.fifo", map[string]string{"FifoQueue": "true"})
		}
		body := f.body
		if body == "" {
			body = "forged"
		}
		if _, e := api.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(dlq), MessageBody: aws.String(body), MessageAttributes: f.attrs}); e != nil {
			t.Fatalf("SQS refuses the forgery itself: %v", e)
		}
		p := replay.Policy{MaxAttempts: 2, Backoff: backoff.Constant{}, MaxBackoff: 10 * time.Minute}
		if f.policy != nil {
			f.policy(&p)
		}
		d := p.Decide(&types.Message{MessageId: aws.String("00000000-0000-4000-8000-0000000000aa"), Body: aws.String(body), MessageAttributes: f.attrs}, time.Now())
		wantAction := replay.Replay
		if f.reason != "" && !f.routed {
			wantAction = replay.Escalate
		}
		if d.Action != wantAction || (!f.routed && d.Reason != f.reason) {
			err = fmt.Errorf("Decide: expect %v %q, got %v %q (%s)", wantAction, f.reason, d.Action, d.Reason, d.Detail)
			return
		}
		if f.check != nil {
			if err = f.check(d); err != nil {
				return
			}
		}
		r, e := replay.New(api, dlq, operator, func(o *replay.Options) {
			o.Policy = p
			if f.sources {
				o.Sources = map[string]string{"arn:aws:sqs:us-east-1:123456789012:main": target}
			} else {
				o.Target = target
			}
		})
		if e != nil {
			t.Fatal(e)
		}
		rep, e := r.Drain(ctx)
		if e != nil {
			err = fmt.Errorf("Drain: %v", e)
			return
		}
		err = checkForgeryOutcome(api, dlq, operator, target, f.reason, rep)
	})
	return err
}

func checkForgeryOutcome(api *sqs.Client, dlq, operator, target string, reason replay.Reason, rep replay.Report) error {
	count := func(url string) int { return queueDepth(api, url) }
	if n := count(dlq); n != 0 {
		return fmt.Errorf("expect the DLQ empty after the pass, %d left", n)
	}
	if reason == "" {
		if n, m := count(target), count(operator); n != 1 || m != 0 {
			return fmt.Errorf("expect it replayed to the target, got %d there and %d escalated", n, m)
		}
		return nil
	}
	out, err := api.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(operator), MaxNumberOfMessages: 10, MessageAttributeNames: []string{"All"}})
	if err != nil {
		return err
	}
	if len(out.Messages) != 1 || count(target) != 0 {
		return fmt.Errorf("expect it escalated and not replayed, got %d escalated, %d replayed", len(out.Messages), count(target))
	}
	mdAttr, ok := out.Messages[0].MessageAttributes[replay.MetadataAttribute]
	if !ok && rep.Escalated == 1 && reason == replay.TooLarge {
		return nil // sent as the body alone: the reason is in the Report and the logs only
	}
	var md replay.Metadata
	if err := json.Unmarshal([]byte(aws.ToString(mdAttr.StringValue)), &md); err != nil {
		return fmt.Errorf("escalation metadata: %v", err)
	}
	if md.Reason != reason {
		return fmt.Errorf("expect the escalation to say %q, got %q (%s)", reason, md.Reason, md.Detail)
	}
	return nil
}
