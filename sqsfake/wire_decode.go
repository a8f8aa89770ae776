package sqsfake

import (
	"math"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// encoding/json decodes a request by reflection, which was about a third of
// the server's own time per message in a send, receive and delete round
// trip. decodeFast reads the inputs of the message operations directly, as
// long as the body is written the way SDKs write it: members named exactly,
// each once, strings, integers that fit, no nulls and no message
// attributes. Anything else returns false and encoding/json decodes the
// body as before, so answers, errors and their wording are unchanged.
// FuzzDecodeFast checks that whatever decodeFast accepts, encoding/json
// decodes to the same input and probeZeros to the same explicit zeros.

// decodeFast decodes body into in, a new input, and notes its explicit
// zeros. ok false means it did not: in may hold part of the body, and the
// caller decodes into a new input with encoding/json.
func decodeFast(body []byte, in any) (z explicitZeros, ok bool) {
	r := &fastReader{b: body, ok: true}
	switch in := in.(type) {
	case *sqs.SendMessageInput:
		r.members(func(key []byte) bool {
			switch string(key) {
			case "QueueUrl":
				in.QueueUrl = r.str()
			case "MessageBody":
				in.MessageBody = r.str()
			case "DelaySeconds":
				in.DelaySeconds = r.int32()
				z.delay = in.DelaySeconds == 0
			case "MessageGroupId":
				in.MessageGroupId = r.str()
			case "MessageDeduplicationId":
				in.MessageDeduplicationId = r.str()
			default:
				return false
			}
			return true
		})
	case *sqs.SendMessageBatchInput:
		r.members(func(key []byte) bool {
			switch string(key) {
			case "QueueUrl":
				in.QueueUrl = r.str()
			case "Entries":
				in.Entries = make([]types.SendMessageBatchRequestEntry, 0, 10) // a full batch
				z.entryDelay = make([]bool, 0, 10)
				r.elements(func() {
					var e types.SendMessageBatchRequestEntry
					zero := false
					r.members(func(key []byte) bool {
						switch string(key) {
						case "Id":
							e.Id = r.str()
						case "MessageBody":
							e.MessageBody = r.str()
						case "DelaySeconds":
							e.DelaySeconds = r.int32()
							zero = e.DelaySeconds == 0
						case "MessageGroupId":
							e.MessageGroupId = r.str()
						case "MessageDeduplicationId":
							e.MessageDeduplicationId = r.str()
						default:
							return false
						}
						return true
					})
					in.Entries = append(in.Entries, e)
					z.entryDelay = append(z.entryDelay, zero)
				})
			default:
				return false
			}
			return true
		})
	case *sqs.ReceiveMessageInput:
		r.members(func(key []byte) bool {
			switch string(key) {
			case "QueueUrl":
				in.QueueUrl = r.str()
			case "MaxNumberOfMessages":
				in.MaxNumberOfMessages = r.int32()
				z.maxMessages = in.MaxNumberOfMessages == 0
			case "VisibilityTimeout":
				in.VisibilityTimeout = r.int32()
				z.visibility = in.VisibilityTimeout == 0
			case "WaitTimeSeconds":
				in.WaitTimeSeconds = r.int32()
				z.wait = in.WaitTimeSeconds == 0
			case "AttributeNames":
				//lint:ignore SA1019 callers still send the legacy field and SQS still honours it
				in.AttributeNames = strs[types.QueueAttributeName](r)
			case "MessageSystemAttributeNames":
				in.MessageSystemAttributeNames = strs[types.MessageSystemAttributeName](r)
			case "MessageAttributeNames":
				in.MessageAttributeNames = strs[string](r)
			case "ReceiveRequestAttemptId":
				in.ReceiveRequestAttemptId = r.str()
			default:
				return false
			}
			return true
		})
	case *sqs.DeleteMessageInput:
		r.members(func(key []byte) bool {
			switch string(key) {
			case "QueueUrl":
				in.QueueUrl = r.str()
			case "ReceiptHandle":
				in.ReceiptHandle = r.str()
			default:
				return false
			}
			return true
		})
	case *sqs.DeleteMessageBatchInput:
		r.members(func(key []byte) bool {
			switch string(key) {
			case "QueueUrl":
				in.QueueUrl = r.str()
			case "Entries":
				in.Entries = make([]types.DeleteMessageBatchRequestEntry, 0, 10)
				r.elements(func() {
					var e types.DeleteMessageBatchRequestEntry
					r.members(func(key []byte) bool {
						switch string(key) {
						case "Id":
							e.Id = r.str()
						case "ReceiptHandle":
							e.ReceiptHandle = r.str()
						default:
							return false
						}
						return true
					})
					in.Entries = append(in.Entries, e)
				})
			default:
				return false
			}
			return true
		})
	case *sqs.ChangeMessageVisibilityInput:
		r.members(func(key []byte) bool {
			switch string(key) {
			case "QueueUrl":
				in.QueueUrl = r.str()
			case "ReceiptHandle":
				in.ReceiptHandle = r.str()
			case "VisibilityTimeout":
				in.VisibilityTimeout = r.int32()
			default:
				return false
			}
			return true
		})
	case *sqs.ChangeMessageVisibilityBatchInput:
		r.members(func(key []byte) bool {
			switch string(key) {
			case "QueueUrl":
				in.QueueUrl = r.str()
			case "Entries":
				in.Entries = make([]types.ChangeMessageVisibilityBatchRequestEntry, 0, 10)
				r.elements(func() {
					var e types.ChangeMessageVisibilityBatchRequestEntry
					r.members(func(key []byte) bool {
						switch string(key) {
						case "Id":
							e.Id = r.str()
						case "ReceiptHandle":
							e.ReceiptHandle = r.str()
						case "VisibilityTimeout":
							e.VisibilityTimeout = r.int32()
						default:
							return false
						}
						return true
					})
					in.Entries = append(in.Entries, e)
				})
			default:
				return false
			}
			return true
		})
	default:
		return explicitZeros{}, false
	}
	r.space()
	if !r.ok || r.i != len(r.b) {
		return explicitZeros{}, false
	}
	return z, true
}

// fastReader reads the JSON decodeFast accepts. ok turns false at the first
// thing it does not accept, and stays false.
type fastReader struct {
	b  []byte
	i  int
	ok bool
}

func (r *fastReader) space() {
	for r.i < len(r.b) {
		switch r.b[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

// take consumes c, after any space, if it comes next.
func (r *fastReader) take(c byte) bool {
	r.space()
	if r.i < len(r.b) && r.b[r.i] == c {
		r.i++
		return true
	}
	return false
}

// members reads an object, calling member with each key to read its value.
// member returns false for a key it does not know. A key seen twice, or
// written with an escape or outside ASCII, is not accepted (encoding/json
// has its own rules for those: last one wins, case-insensitive matches).
func (r *fastReader) members(member func(key []byte) bool) {
	if !r.ok || !r.take('{') {
		r.ok = false
		return
	}
	if r.take('}') {
		return
	}
	var seen [8][]byte
	n := 0
	for r.ok {
		key := r.key()
		if key == nil || n == len(seen) || !r.take(':') {
			r.ok = false
			return
		}
		for _, k := range seen[:n] {
			if string(k) == string(key) {
				r.ok = false
				return
			}
		}
		seen[n] = key
		n++
		if !member(key) {
			r.ok = false
			return
		}
		if r.take(',') {
			continue
		}
		if !r.take('}') {
			r.ok = false
		}
		return
	}
}

// key reads a member name of printable ASCII without escapes; nil if it is
// anything else.
func (r *fastReader) key() []byte {
	if !r.take('"') {
		return nil
	}
	start := r.i
	for r.i < len(r.b) {
		c := r.b[r.i]
		switch {
		case c == '"':
			r.i++
			return r.b[start : r.i-1]
		case c < 0x20 || c == '\\' || c >= utf8.RuneSelf:
			return nil
		}
		r.i++
	}
	return nil
}

// elements reads an array, calling elem to read each element.
func (r *fastReader) elements(elem func()) {
	if !r.ok || !r.take('[') {
		r.ok = false
		return
	}
	if r.take(']') {
		return
	}
	for r.ok {
		elem()
		if r.take(',') {
			continue
		}
		if !r.take(']') {
			r.ok = false
		}
		return
	}
}

// str reads a string value.
func (r *fastReader) str() *string {
	s, ok := r.text()
	if !ok {
		r.ok = false
		return nil
	}
	return &s
}

// strs reads an array of strings; empty, not nil, for [] as encoding/json.
func strs[T ~string](r *fastReader) []T {
	out := []T{}
	r.elements(func() {
		s, ok := r.text()
		if !ok {
			r.ok = false
		}
		out = append(out, T(s))
	})
	return out
}

// text reads a string, unescaping it as encoding/json does. It does not
// accept invalid UTF-8 or a surrogate escape that is not half of a pair,
// which encoding/json turns into U+FFFD.
func (r *fastReader) text() (string, bool) {
	if !r.ok || !r.take('"') {
		return "", false
	}
	start, escaped := r.i, false
	for r.i < len(r.b) {
		c := r.b[r.i]
		switch {
		case c == '"':
			raw := r.b[start:r.i]
			r.i++
			if !escaped {
				return string(raw), true
			}
			return unescape(raw)
		case c < 0x20:
			return "", false
		case c == '\\':
			escaped = true
			r.i += 2 // the escaped byte is checked by unescape
		case c >= utf8.RuneSelf:
			c, size := utf8.DecodeRune(r.b[r.i:])
			if c == utf8.RuneError && size == 1 {
				return "", false
			}
			r.i += size
		default:
			r.i++
		}
	}
	return "", false
}

// unescape returns the text of raw, a string's bytes between its quotes,
// with its escapes replaced: in one allocation, since the text is never
// longer than raw.
func unescape(raw []byte) (string, bool) {
	var small [128]byte // most bodies of a batch fit: no buffer on the heap
	out := small[:0]
	if len(raw) > len(small) {
		out = make([]byte, 0, len(raw))
	}
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		if i+1 == len(raw) {
			return "", false
		}
		switch e := raw[i+1]; e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			c, ok := hexEscape(raw, i)
			if !ok {
				return "", false
			}
			if utf16.IsSurrogate(c) {
				lo, ok := hexEscape(raw, i+6)
				if c = utf16.DecodeRune(c, lo); !ok || c == utf8.RuneError {
					return "", false
				}
				i += 6
			}
			out = utf8.AppendRune(out, c)
			i += 4
		default:
			return "", false
		}
		i += 2
	}
	return string(out), true
}

// int32 reads an integer that fits in an int32, written without a fraction
// or an exponent.
func (r *fastReader) int32() int32 {
	if !r.ok {
		return 0
	}
	r.space()
	neg := r.i < len(r.b) && r.b[r.i] == '-'
	if neg {
		r.i++
	}
	start := r.i
	var v int64
	for r.i < len(r.b) && r.b[r.i] >= '0' && r.b[r.i] <= '9' && r.i-start < 11 {
		v = v*10 + int64(r.b[r.i]-'0')
		r.i++
	}
	if neg {
		v = -v
	}
	digits := r.i - start
	if digits == 0 || digits > 10 || (digits > 1 && r.b[start] == '0') || v < math.MinInt32 || v > math.MaxInt32 {
		r.ok = false
		return 0
	}
	return int32(v)
}
