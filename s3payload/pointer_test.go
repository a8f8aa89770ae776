package s3payload_test

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqskit/sqskit/fifo"
	"github.com/sqskit/sqskit/s3payload"
	"github.com/sqskit/sqskit/sqsfake"
)

// javaFixtures are message bodies in the Extended Client's format, as its
// libraries and their documentation show them.
var javaFixtures = []struct {
	name        string
	body        string
	bucket, key string
}{
	// The README of awslabs/amazon-sns-python-extended-client-lib (the SNS
	// client that writes the Java format), lines 379 and 391, at commit
	// 233ff73e590532c4225493a25c024174a59b4aff: "Published Message: …".
	{"sns-python-readme-379", `["software.amazon.payloadoffloading.PayloadS3Pointer", {"s3BucketName": "extended-client-bucket-store", "s3Key": "10999f58-c5ae-4d68-9208-f70475e0113d"}]`,
		"extended-client-bucket-store", "10999f58-c5ae-4d68-9208-f70475e0113d"},
	{"sns-python-readme-391", `["software.amazon.payloadoffloading.PayloadS3Pointer", {"s3BucketName": "extended-client-bucket-store", "s3Key": "247c11c4-a22c-42e4-a6a2-9b5af5b76587"}]`,
		"extended-client-bucket-store", "247c11c4-a22c-42e4-a6a2-9b5af5b76587"},
	// The compact form Jackson's default typing writes for
	// PayloadS3Pointer.toJson() (awslabs/payload-offloading-java-common-lib-for-aws,
	// src/main/java/software/amazon/payloadoffloading/JsonDataConverter.java,
	// enableDefaultTyping(NON_FINAL), commit d9c73b6844a6bcec8dbd015535ed6402fe7a9d8d),
	// with the bucket and key of its S3BackedPayloadStoreTest ("AnyS3key").
	{"java-compact", `["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"test-bucket-name","s3Key":"AnyS3key"}]`,
		"test-bucket-name", "AnyS3key"},
	// The version 1 type id that AmazonSQSExtendedClient.receiveMessage
	// still accepts (awslabs/amazon-sqs-java-extended-client-lib,
	// src/main/java/com/amazon/sqs/javamessaging/AmazonSQSExtendedClient.java
	// line 342, commit 3f763f6e2ca5a68ad1aa37644e11642b6e638a13), with the
	// key its tests use ("S3Key", AmazonSQSExtendedClientTest.java line 683).
	{"java-v1-class", `["com.amazon.sqs.javamessaging.MessageS3Pointer",{"s3BucketName":"test-bucket-name","s3Key":"S3Key"}]`,
		"test-bucket-name", "S3Key"},
}

// TestParsePointerReadsJavaFixtures: every fixture parses to its bucket and
// key.
func TestParsePointerReadsJavaFixtures(t *testing.T) {
	for _, f := range javaFixtures {
		t.Run(f.name, func(t *testing.T) {
			p, err := s3payload.ParsePointer(f.body)
			if err != nil {
				t.Fatal(err)
			}
			if p.Bucket != f.bucket || p.Key != f.key {
				t.Errorf("expect %s/%s, got %s/%s", f.bucket, f.key, p.Bucket, p.Key)
			}
		})
	}
}

// TestPointerBodyIsJavaCompactForm: Body writes exactly what Jackson writes.
func TestPointerBodyIsJavaCompactForm(t *testing.T) {
	got := s3payload.Pointer{Bucket: "test-bucket-name", Key: "AnyS3key"}.Body()
	if want := javaFixtures[2].body; got != want {
		t.Errorf("expect %s, got %s", want, got)
	}
}

// TestParsePointerRefusesMalformed: each hostile body is a PointerError
// with ReasonMalformed, never a panic.
func TestParsePointerRefusesMalformed(t *testing.T) {
	for _, body := range []string{
		"", "hello", "{}", "[]", `["software.amazon.payloadoffloading.PayloadS3Pointer"]`,
		`["x.Other",{"s3BucketName":"b","s3Key":"k"}]`,
		`["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"b"}]`,
		`["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"","s3Key":"k"}]`,
		`["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"b","s3Key":"k","extra":1}]`,
		`["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":1,"s3Key":"k"}]`,
		`["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"b","s3Key":"k"},3]`,
		`["software.amazon.payloadoffloading.PayloadS3Pointer",["b","k"]]`,
	} {
		_, err := s3payload.ParsePointer(body)
		var pe *s3payload.PointerError
		if !errors.As(err, &pe) || pe.Reason != s3payload.ReasonMalformed || !errors.Is(err, s3payload.ErrBadPointer) {
			t.Errorf("%q: expect a malformed PointerError, got %v", body, err)
		}
	}
}

func FuzzParsePointer(f *testing.F) {
	for _, fx := range javaFixtures {
		f.Add(fx.body)
	}
	f.Add(`["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"b","s3Key":null}]`)
	f.Fuzz(func(t *testing.T, body string) {
		p, err := s3payload.ParsePointer(body)
		if err != nil {
			return
		}
		q, err := s3payload.ParsePointer(p.Body())
		if err != nil || q != p {
			t.Fatalf("%q parsed as %+v, which reads back as %+v, %v", body, p, q, err)
		}
	})
}

// independentDecode reads an offloaded SQS message as a consumer written
// from the format alone would: the body is a two-element JSON array whose
// first element is the type id and second an object; the size attribute is
// a Number. It shares nothing with the package's decoder.
func independentDecode(t *testing.T, body string, attrs map[string]string) (bucket, key string, size int) {
	t.Helper()
	const head = `["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"`
	if len(body) < len(head) || body[:len(head)] != head {
		t.Fatalf("body %q does not start as the Java client's does", body)
	}
	rest := body[len(head):]
	i := 0
	for i < len(rest) && rest[i] != '"' {
		i++
	}
	bucket, rest = rest[:i], rest[i:]
	const mid = `","s3Key":"`
	if len(rest) < len(mid) || rest[:len(mid)] != mid {
		t.Fatalf("body %q: no s3Key after the bucket", body)
	}
	rest = rest[len(mid):]
	if len(rest) < 3 || rest[len(rest)-3:] != `"}]` {
		t.Fatalf("body %q does not end as the Java client's does", body)
	}
	key = rest[:len(rest)-3]
	n, err := strconv.Atoi(attrs["ExtendedPayloadSize"])
	if err != nil {
		t.Fatalf("ExtendedPayloadSize %q: %v", attrs["ExtendedPayloadSize"], err)
	}
	return bucket, key, n
}

// TestSentMessagesReadByIndependentDecoder: what the Sender puts on the
// queue is read by a decoder written from the format, and the object it
// names holds the payload.
func TestSentMessagesReadByIndependentDecoder(t *testing.T) {
	ctx := context.Background()
	s3api := newS3(t, nil)
	sqsapi := sqsfake.New().Client()
	q := createQueue(t, sqsapi, "orders", nil)
	fs, err := fifo.NewSender(sqsapi, q)
	if err != nil {
		t.Fatal(err)
	}
	s, err := s3payload.NewSender(s3api, fs, "payloads", func(o *s3payload.SenderOptions) { o.KeyPrefix = "in/" })
	if err != nil {
		t.Fatal(err)
	}
	body := payload(300_000, 1)
	if _, err := s.Send(ctx, fifo.Message{Body: body}); err != nil {
		t.Fatal(err)
	}
	out, err := sqsapi.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &q, MessageAttributeNames: []string{"All"}})
	if err != nil || len(out.Messages) != 1 {
		t.Fatalf("receive: %v, %d messages", err, len(out.Messages))
	}
	m := out.Messages[0]
	attrs := map[string]string{}
	for k, v := range m.MessageAttributes {
		attrs[k] = aws.ToString(v.StringValue)
		if aws.ToString(v.DataType) != "Number" {
			t.Errorf("expect %s to be a Number, got %s", k, aws.ToString(v.DataType))
		}
	}
	bucket, key, size := independentDecode(t, aws.ToString(m.Body), attrs)
	if bucket != "payloads" || len(key) != len("in/")+36 || key[:3] != "in/" || size != len(body) {
		t.Errorf("expect payloads, in/<uuid>, %d; got %s, %s, %d", len(body), bucket, key, size)
	}
	obj, err := s3api.GetObject(ctx, &s3GetInput{Bucket: &bucket, Key: &key})
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Body.Close()
	got := readAll(t, obj.Body)
	if got != body {
		t.Errorf("expect the object to hold the %d-byte body, got %d bytes", len(body), len(got))
	}
}
