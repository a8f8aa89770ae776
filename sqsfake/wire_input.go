package sqsfake

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// The SDK's input structs, into which requests are decoded, hold optional
// integers as plain int32: an absent member and an explicit 0 look the
// same. aws-sdk-go-v2 never sends a 0, but boto3, the JavaScript SDK and the
// AWS CLI do, and SQS reads it as zero, not as "the queue's default". So the
// wire layer notes which members a request set to 0 explicitly.

// explicitZeros lists the members a request sent as 0.
type explicitZeros struct {
	visibility  bool   // ReceiveMessage VisibilityTimeout
	wait        bool   // ReceiveMessage WaitTimeSeconds
	maxMessages bool   // ReceiveMessage MaxNumberOfMessages
	delay       bool   // SendMessage DelaySeconds
	entryDelay  []bool // SendMessageBatch Entries[i].DelaySeconds
}

// zeroProbe reads the members whose zero differs from their absence.
type zeroProbe struct {
	VisibilityTimeout   *int64
	WaitTimeSeconds     *int64
	MaxNumberOfMessages *int64
	DelaySeconds        *int64
	Entries             []struct{ DelaySeconds *int64 }
}

// probeZeros finds explicit zeros in the JSON body of in's operation, for
// bodies decodeFast left to encoding/json. It decodes the body a second
// time only when it names one of the members.
func probeZeros(in any, body []byte) explicitZeros {
	var names []string
	switch in.(type) {
	case *sqs.ReceiveMessageInput:
		names = []string{`"VisibilityTimeout"`, `"WaitTimeSeconds"`, `"MaxNumberOfMessages"`}
	case *sqs.SendMessageInput, *sqs.SendMessageBatchInput:
		names = []string{`"DelaySeconds"`}
	default:
		return explicitZeros{}
	}
	found := false
	for _, n := range names {
		if bytes.Contains(body, []byte(n)) {
			found = true
			break
		}
	}
	if !found {
		return explicitZeros{}
	}
	var p zeroProbe
	if json.Unmarshal(body, &p) != nil {
		return explicitZeros{} // the real decode reports the error
	}
	zero := func(v *int64) bool { return v != nil && *v == 0 }
	z := explicitZeros{visibility: zero(p.VisibilityTimeout), wait: zero(p.WaitTimeSeconds), maxMessages: zero(p.MaxNumberOfMessages), delay: zero(p.DelaySeconds)}
	if _, batch := in.(*sqs.SendMessageBatchInput); batch {
		z.entryDelay = make([]bool, len(p.Entries))
		for i, e := range p.Entries {
			z.entryDelay[i] = zero(e.DelaySeconds)
		}
	}
	return z
}

// entryDelayZero reports whether batch entry i sent DelaySeconds 0.
func (z explicitZeros) entryDelayZero(i int) bool {
	return i < len(z.entryDelay) && z.entryDelay[i]
}

// notCharacter replaces what is not a character in a request: U+FFFF is
// outside SQS's allowed set, so a message body or attribute value that held
// one is refused with InvalidMessageContents, as SQS refuses it; elsewhere
// the parameter's own check refuses it.
const notCharacter = `\uffff`

// markInvalidText returns body with every invalid UTF-8 byte and every lone
// surrogate escape (\ud800 without its low half, or a low half alone)
// replaced by notCharacter. encoding/json would otherwise turn both into
// U+FFFD, a valid character, and the request would be accepted where SQS
// refuses it. Most bodies are returned unchanged, without a copy.
func markInvalidText(body []byte) []byte {
	if utf8.Valid(body) && !bytes.Contains(body, []byte(`\u`)) {
		return body
	}
	var out []byte
	start := 0
	flush := func(i int, repl string) {
		if out == nil {
			out = make([]byte, 0, len(body)+16)
		}
		out = append(out, body[start:i]...)
		out = append(out, repl...)
	}
	for i := 0; i < len(body); {
		c := body[i]
		if c == '\\' && i+1 < len(body) {
			if body[i+1] != 'u' {
				i += 2 // an escaped character, perhaps a backslash
				continue
			}
			r, ok := hexEscape(body, i)
			if !ok || !isSurrogate(r) {
				i += 2
				continue
			}
			if r < 0xdc00 { // a high half: valid only before a low half
				if lo, ok := hexEscape(body, i+6); ok && lo >= 0xdc00 && lo <= 0xdfff {
					i += 12
					continue
				}
			}
			flush(i, notCharacter)
			i += 6
			start = i
			continue
		}
		if c < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(body[i:])
		if r == utf8.RuneError && size == 1 {
			flush(i, notCharacter)
			i++
			start = i
			continue
		}
		i += size
	}
	if out == nil {
		return body
	}
	return append(out, body[start:]...)
}

// hexEscape reads the \uXXXX escape at body[i:].
func hexEscape(body []byte, i int) (rune, bool) {
	if i+6 > len(body) || body[i] != '\\' || body[i+1] != 'u' {
		return 0, false
	}
	var r rune
	for _, c := range body[i+2 : i+6] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

func isSurrogate(r rune) bool { return r >= 0xd800 && r <= 0xdfff }
