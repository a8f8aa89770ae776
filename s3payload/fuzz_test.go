package s3payload_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/s3payload"
)

// FuzzMiddleware feeds hostile bodies and size attributes to the
// middleware: it never panics, a message it resolves reaches the handler
// with exactly the declared number of bytes, from the allowed bucket and
// prefix only, and one it refuses is an Escalate outcome.
func FuzzMiddleware(f *testing.F) {
	ptr := func(bucket, key string) string { return s3payload.Pointer{Bucket: bucket, Key: key}.Body() }
	f.Add(ptr("payloads", "in/a"), "5", "Number", true)
	f.Add(ptr("payloads", "in/a"), "4", "Number", false)
	f.Add(ptr("secrets", "in/a"), "5", "Number", true)
	f.Add(ptr("payloads", "in/../a"), "5", "Number", true)
	f.Add(snsNotification(ptr("payloads", "in/a"), 5), "", "", false)
	f.Add("not json", "5", "String", true)
	f.Add(`{"Type":"Notification","TopicArn":"x","Message":7}`, "", "", false)
	api := newS3(f, nil)
	put(f, api, "payloads", "in/a", "hello")
	recv, err := s3payload.NewReceiver(api, []string{"payloads"}, func(o *s3payload.ReceiverOptions) {
		o.KeyPrefix = "in/"
		o.MaxPayloadBytes = 1 << 10
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body, size, dataType string, legacy bool) {
		m := &handler.Message{ID: "m", Body: body, MessageAttributes: map[string]handler.AttributeValue{}}
		if dataType != "" {
			name := s3payload.SizeAttribute
			if legacy {
				name = s3payload.LegacySizeAttribute
			}
			m.MessageAttributes[name] = handler.AttributeValue{DataType: dataType, StringValue: size}
		}
		var got *handler.Message
		err := recv.Middleware()(func(_ context.Context, m *handler.Message) error { got = m; return nil })(context.Background(), m)
		switch {
		case err != nil && handler.EscalationOf(err) == nil:
			t.Fatalf("expect an Escalate outcome (S3 is up), got %v", err)
		case err != nil && got != nil:
			t.Fatal("the handler ran for a refused message")
		case err == nil && got == nil:
			t.Fatal("the handler did not run for an accepted message")
		case err == nil && got != m && got.Body != "hello":
			t.Fatalf("resolved to %q, want the one allowed object", got.Body)
		case err == nil && got != m:
			if n, _ := strconv.Atoi(size); n != len(got.Body) && dataType != "" {
				t.Fatalf("resolved %d bytes, %q declared", len(got.Body), size)
			}
		}
	})
}
