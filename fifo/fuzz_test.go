package fifo_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/fifo"
	"github.com/sqskit/sqskit/sqsfake"
)

// sqsID is SQS's rule for group and deduplication ids, restated: 1 to 128
// alphanumerics or the listed punctuation.
func sqsID(id string) bool {
	const punctuation = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
	if len(id) < 1 || len(id) > 128 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(punctuation, r)) {
			return false
		}
	}
	return true
}

// FuzzDedupIDs: every id a Dedup strategy derives passes SQS's rules,
// whatever the message holds; deterministic strategies give the same id for
// the same input and different ids for different inputs (their fields are
// length-prefixed, so no two messages can be made to collide by moving
// bytes between fields); ContentDedup without options is SQS's own
// content-based id.
func FuzzDedupIDs(f *testing.F) {
	f.Add("body", "group", "key", "orders", "attr", "value")
	f.Add("ab", "c", "", "", "", "")
	f.Add("\x00", "g\x00", "k\xff", "ns\x00", "a", "")
	f.Add(strings.Repeat("é", 300), strings.Repeat("g", 200), strings.Repeat("k", 500), "n", "x", "y")
	f.Fuzz(func(t *testing.T, body, group, key, namespace, attr, value string) {
		m := &fifo.Message{Body: body, DedupKey: key, Attributes: map[string]types.MessageAttributeValue{
			attr: {DataType: aws.String("String"), StringValue: aws.String(value)},
		}}
		derive := func(name string, d fifo.Dedup, m *fifo.Message, group string) string {
			id, err := d(m, group)
			if err != nil {
				t.Fatalf("%s: unexpected error %v", name, err)
			}
			if !sqsID(id) {
				t.Fatalf("%s: id %q breaks SQS's rules", name, id)
			}
			return id
		}
		deterministic := map[string]fifo.Dedup{
			"content":            fifo.ContentDedup(false),
			"content+group":      fifo.ContentDedup(true),
			"content+group+attr": fifo.ContentDedup(true, attr),
		}
		if key != "" {
			deterministic["key"] = fifo.KeyDedup(namespace)
		}
		for name, d := range deterministic {
			clone := *m
			if a, b := derive(name, d, m, group), derive(name, d, &clone, group); a != b {
				t.Fatalf("%s: expect the same id twice, got %q and %q", name, a, b)
			}
		}
		sum := sha256.Sum256([]byte(body))
		if got := derive("content", fifo.ContentDedup(false), m, group); got != hex.EncodeToString(sum[:]) {
			t.Fatalf("content: expect SQS's SHA-256 of the body, got %q", got)
		}
		// Moving a byte from the body to the group changes the id.
		if body != "" {
			shifted := &fifo.Message{Body: body[:len(body)-1], Attributes: m.Attributes}
			if derive("content+group", fifo.ContentDedup(true), m, group) == derive("content+group", fifo.ContentDedup(true), shifted, body[len(body)-1:]+group) {
				t.Fatalf("content+group: bytes moved between fields give the same id")
			}
		}
		if key != "" && derive("key", fifo.KeyDedup(namespace), m, group) == derive("key", fifo.KeyDedup(namespace+"x"), m, group) {
			t.Fatalf("key: two namespaces give the same id")
		}
		changed := &fifo.Message{Body: body, DedupKey: key, Attributes: map[string]types.MessageAttributeValue{
			attr: {DataType: aws.String("String"), StringValue: aws.String(value + "x")},
		}}
		if derive("content+group+attr", fifo.ContentDedup(true, attr), m, group) == derive("content+group+attr", fifo.ContentDedup(true, attr), changed, group) {
			t.Fatalf("content+group+attr: a changed attribute gives the same id")
		}
		a, b := derive("random", fifo.RandomDedup(), m, group), derive("random", fifo.RandomDedup(), m, group)
		if a == b {
			t.Fatalf("random: two ids alike: %q", a)
		}
		if _, err := fifo.ProvidedDedup()(m, group); !errors.Is(err, fifo.ErrNoDedupID) {
			t.Fatalf("provided: expect ErrNoDedupID, got %v", err)
		}
	})
}

// FuzzSendIDs: a FIFO send with any group id (given or derived by
// SenderOptions.GroupID) and deduplication id either reaches the queue with
// those ids, when SQS's rules allow them, or fails with a ValidationError
// before any call.
func FuzzSendIDs(f *testing.F) {
	f.Add("g", "", false)
	f.Add("g", "d-1", true)
	f.Add("a b", "d", false)
	f.Add("", "d", true)
	f.Add(strings.Repeat("g", 128), strings.Repeat("d", 129), false)
	f.Add("é", "\x7f", true)
	f.Fuzz(func(t *testing.T, group, dedup string, derived bool) {
		srv := sqsfake.New()
		client := srv.Client()
		q, err := client.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String("q.fifo"), Attributes: map[string]string{"FifoQueue": "true"}})
		if err != nil {
			t.Fatal(err)
		}
		m := fifo.Message{Body: "x", GroupID: group, DeduplicationID: dedup}
		s, err := fifo.NewSender(client, *q.QueueUrl, func(o *fifo.SenderOptions) {
			if derived {
				m.GroupID = ""
				o.GroupID = func(*fifo.Message) string { return group }
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		srv.ResetCalls()
		res, err := s.Send(context.Background(), m)
		valid := sqsID(group) && (dedup == "" || sqsID(dedup))
		if !valid {
			if !errors.Is(err, fifo.ErrInvalid) || srv.Calls().Total() != 0 {
				t.Fatalf("group %q, dedup %q: expect a ValidationError before any call, got %v after %d calls", group, dedup, err, srv.Calls().Total())
			}
			return
		}
		if err != nil {
			t.Fatalf("group %q, dedup %q: expect sent, got %v", group, dedup, err)
		}
		if dedup != "" && res.DeduplicationID != dedup || !sqsID(res.DeduplicationID) {
			t.Fatalf("expect the dedup id %q used, got %q", dedup, res.DeduplicationID)
		}
		out, err := client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{"MessageGroupId", "MessageDeduplicationId"}})
		if err != nil || len(out.Messages) != 1 {
			t.Fatalf("expect the message on the queue, got %v, %v", out, err)
		}
		if got := out.Messages[0].Attributes; got["MessageGroupId"] != group || got["MessageDeduplicationId"] != res.DeduplicationID {
			t.Fatalf("expect group %q and dedup %q on the message, got %v", group, res.DeduplicationID, got)
		}
	})
}
