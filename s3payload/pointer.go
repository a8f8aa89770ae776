package s3payload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/sqskit/sqskit/handler"
)

// The wire format of the SQS Extended Client for Java
// (awslabs/amazon-sqs-java-extended-client-lib with
// payload-offloading-java-common-lib-for-aws) and its Python port.
const (
	// PointerClass is the type id Jackson writes as the first element of the
	// pointer body: ["software.amazon.payloadoffloading.PayloadS3Pointer",
	// {"s3BucketName":"…","s3Key":"…"}].
	PointerClass = "software.amazon.payloadoffloading.PayloadS3Pointer"
	// legacyPointerClass is what version 1 of the Java client wrote; its
	// readers accept it still, and so does ParsePointer.
	legacyPointerClass = "com.amazon.sqs.javamessaging.MessageS3Pointer"

	// SizeAttribute is the Number message attribute that marks an offloaded
	// message and carries the payload's size in bytes.
	SizeAttribute = "ExtendedPayloadSize"
	// LegacySizeAttribute is its older name, written instead with
	// SenderOptions.LegacyAttribute and read always.
	LegacySizeAttribute = "SQSLargePayloadSize"
)

// Pointer names the S3 object holding an offloaded payload.
type Pointer struct {
	Bucket string
	Key    string
}

type pointerObject struct {
	Bucket *string `json:"s3BucketName"`
	Key    *string `json:"s3Key"`
}

// Body returns the message body that points to p, byte for byte what the
// Java Extended Client writes.
func (p Pointer) Body() string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // Jackson does not escape <, > and &
	_ = enc.Encode([]any{PointerClass, pointerObject{Bucket: &p.Bucket, Key: &p.Key}})
	return strings.TrimSuffix(b.String(), "\n")
}

// ErrBadPointer matches every PointerError with errors.Is.
var ErrBadPointer = errors.New("s3payload: bad payload pointer")

// The reasons a message with a bad pointer is escalated under (see
// handler.Escalate): each is permanent, as no retry can mend it.
const (
	ReasonMalformed    = "s3-pointer-malformed"     // not a pointer body, or a size attribute that is not a size
	ReasonBucket       = "s3-bucket-not-allowed"    // a bucket outside ReceiverOptions.Buckets
	ReasonKey          = "s3-key-not-allowed"       // a key outside ReceiverOptions.KeyPrefix, or not a key
	ReasonMissing      = "s3-payload-missing"       // no such object (or bucket)
	ReasonTooLarge     = "s3-payload-too-large"     // over ReceiverOptions.MaxPayloadBytes
	ReasonSizeMismatch = "s3-payload-size-mismatch" // the object's size is not what the attribute says
)

// PointerError is the failure of a message whose pointer cannot be
// followed: Reason is one of the Reason constants.
type PointerError struct {
	Reason string
	Pointer
	Err error
}

func (e *PointerError) Error() string {
	s := "s3payload: " + e.Reason
	if e.Bucket != "" || e.Key != "" {
		s += fmt.Sprintf(" (s3://%s/%s)", printable(e.Bucket), printable(e.Key))
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// printable returns a forged pointer's bucket or key fit for a log line:
// its first 256 bytes, quoted as Go quotes a string, without the quotes:
// control characters and invalid UTF-8 escaped (a key a Sender writes is
// unchanged).
func printable(s string) string {
	cut := ""
	if len(s) > 256 {
		s, cut = s[:256], "…"
	}
	q := strconv.QuoteToGraphic(s)
	return q[1:len(q)-1] + cut
}

// Is makes a PointerError match ErrBadPointer.
func (e *PointerError) Is(target error) bool { return target == ErrBadPointer }

func (e *PointerError) Unwrap() error { return e.Err }

// ParsePointer reads a pointer body in the Extended Client's format (the
// current type id or the legacy one). Anything else — not JSON, another
// shape, missing, empty, unknown or repeated fields (names match exactly,
// as Jackson reads them) — is a PointerError with
// ReasonMalformed. It never panics.
func ParsePointer(body string) (Pointer, error) {
	bad := func(format string, args ...any) (Pointer, error) {
		return Pointer{}, &PointerError{Reason: ReasonMalformed, Err: fmt.Errorf(format, args...)}
	}
	var parts []json.RawMessage
	if err := json.Unmarshal([]byte(body), &parts); err != nil {
		return bad("not a JSON array: %w", err)
	}
	if len(parts) != 2 {
		return bad("%d elements, want 2", len(parts))
	}
	var class string
	if err := json.Unmarshal(parts[0], &class); err != nil {
		return bad("type id: %w", err)
	}
	if class != PointerClass && class != legacyPointerClass {
		return bad("type id %q", class)
	}
	o, err := pointerFields(parts[1])
	if err != nil {
		return bad("pointer object: %w", err)
	}
	if o.Bucket == nil || *o.Bucket == "" || o.Key == nil || *o.Key == "" {
		return bad("s3BucketName and s3Key are required")
	}
	return Pointer{Bucket: *o.Bucket, Key: *o.Key}, nil
}

// pointerFields reads the pointer object as Jackson does, not as
// encoding/json would: field names match exactly (encoding/json folds
// case, so {"S3BUCKETNAME":…} would name the bucket, where Jackson calls
// it unknown), and a repeated field is refused rather than the last one
// taken, so no two readers of one message can disagree on its object.
func pointerFields(raw json.RawMessage) (pointerObject, error) {
	var o pointerObject
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return o, errors.New("not an object")
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return o, err
		}
		name, _ := t.(string)
		var field **string
		switch name {
		case "s3BucketName":
			field = &o.Bucket
		case "s3Key":
			field = &o.Key
		default:
			return o, fmt.Errorf("unknown field %q", name)
		}
		if *field != nil {
			return o, fmt.Errorf("field %q repeated", name)
		}
		var v string
		if err := dec.Decode(&v); err != nil {
			return o, fmt.Errorf("field %q: %w", name, err)
		}
		*field = &v
	}
	return o, nil
}

// sizeOf returns the payload size an offloaded message declares, and
// whether it declares one (carries either size attribute).
func sizeOf(attrs map[string]handler.AttributeValue) (int64, bool, error) {
	v, ok := attrs[SizeAttribute]
	if !ok {
		if v, ok = attrs[LegacySizeAttribute]; !ok {
			return 0, false, nil
		}
	}
	n, err := strconv.ParseInt(v.StringValue, 10, 64)
	if err != nil || n < 0 || v.BaseType() != "Number" {
		return 0, true, &PointerError{Reason: ReasonMalformed, Err: fmt.Errorf("size attribute %q (%s) is not a size", v.StringValue, v.DataType)}
	}
	return n, true, nil
}

// validKey reports whether key is an S3 key a sender of ours could have
// written under prefix: 1 to 1,024 bytes of UTF-8 without control
// characters, under prefix, with no "." or ".." path segment.
func validKey(key, prefix string) error {
	switch {
	case len(key) > 1024 || !utf8.ValidString(key):
		return errors.New("not an S3 key")
	case !strings.HasPrefix(key, prefix) || len(key) == len(prefix):
		return fmt.Errorf("not under the prefix %q", prefix)
	case strings.IndexFunc(key, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0:
		return errors.New("control characters")
	}
	for seg := range strings.SplitSeq(key, "/") {
		if seg == "." || seg == ".." {
			return errors.New("a relative path segment")
		}
	}
	return nil
}
