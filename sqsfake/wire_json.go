package sqsfake

import (
	"encoding/base64"
	"math"
	"math/big"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/document"
)

// jsonWriter writes the SDK's output shapes as AWS JSON 1.0 response bodies.
// It implements smithy.ShapeSerializer, so each output type's own Serialize
// method, generated from the service model, decides the member names and
// which members are present: the server cannot drift from what the SDK
// reads. Blobs are base64, as the protocol requires.
type jsonWriter struct {
	buf    []byte
	frames []jsonFrame
	keyed  bool // a map key was just written: the next value takes no member name
}

type jsonFrame struct {
	object bool // struct or map: values are named
	count  int  // values written so far
}

var _ smithy.ShapeSerializer = (*jsonWriter)(nil)

func (w *jsonWriter) Bytes() []byte { return w.buf }

// prefix writes what comes before a value: a comma, and the member name when
// the value is a member of a struct.
func (w *jsonWriter) prefix(s *smithy.Schema) {
	if w.keyed {
		w.keyed = false
		return
	}
	if len(w.frames) == 0 {
		return
	}
	f := &w.frames[len(w.frames)-1]
	if f.count > 0 {
		w.buf = append(w.buf, ',')
	}
	f.count++
	if f.object && s != nil {
		w.buf = appendJSONString(w.buf, s.MemberName())
		w.buf = append(w.buf, ':')
	}
}

func (w *jsonWriter) open(s *smithy.Schema, c byte, object bool) {
	w.prefix(s)
	w.buf = append(w.buf, c)
	w.frames = append(w.frames, jsonFrame{object: object})
}

func (w *jsonWriter) close(c byte) {
	w.buf = append(w.buf, c)
	w.frames = w.frames[:len(w.frames)-1]
}

func (w *jsonWriter) WriteInt8(s *smithy.Schema, v int8)   { w.WriteInt64(s, int64(v)) }
func (w *jsonWriter) WriteInt16(s *smithy.Schema, v int16) { w.WriteInt64(s, int64(v)) }
func (w *jsonWriter) WriteInt32(s *smithy.Schema, v int32) { w.WriteInt64(s, int64(v)) }

func (w *jsonWriter) WriteInt64(s *smithy.Schema, v int64) {
	w.prefix(s)
	w.buf = strconv.AppendInt(w.buf, v, 10)
}

func (w *jsonWriter) WriteFloat32(s *smithy.Schema, v float32) { w.writeFloat(s, float64(v), 32) }
func (w *jsonWriter) WriteFloat64(s *smithy.Schema, v float64) { w.writeFloat(s, v, 64) }

func (w *jsonWriter) writeFloat(s *smithy.Schema, v float64, bits int) {
	w.prefix(s)
	switch {
	case math.IsNaN(v):
		w.buf = append(w.buf, `"NaN"`...)
	case math.IsInf(v, 1):
		w.buf = append(w.buf, `"Infinity"`...)
	case math.IsInf(v, -1):
		w.buf = append(w.buf, `"-Infinity"`...)
	default:
		w.buf = strconv.AppendFloat(w.buf, v, 'g', -1, bits)
	}
}

func (w *jsonWriter) WriteBool(s *smithy.Schema, v bool) {
	w.prefix(s)
	w.buf = strconv.AppendBool(w.buf, v)
}

func (w *jsonWriter) WriteString(s *smithy.Schema, v string) {
	w.prefix(s)
	w.buf = appendJSONString(w.buf, v)
}

func (w *jsonWriter) WriteBigInt(s *smithy.Schema, v *big.Int) {
	w.prefix(s)
	w.buf = v.Append(w.buf, 10)
}

func (w *jsonWriter) WriteBigFloat(s *smithy.Schema, v *big.Float) {
	w.prefix(s)
	w.buf = v.Append(w.buf, 'g', -1)
}

func (w *jsonWriter) WriteBlob(s *smithy.Schema, v []byte) {
	w.prefix(s)
	if v == nil {
		w.buf = append(w.buf, "null"...)
		return
	}
	w.buf = append(w.buf, '"')
	w.buf = base64.StdEncoding.AppendEncode(w.buf, v)
	w.buf = append(w.buf, '"')
}

// WriteTime writes epoch seconds, the protocol's default timestamp format.
// No SQS output has a timestamp member; the SDK's shapes carry epoch
// milliseconds as longs.
func (w *jsonWriter) WriteTime(s *smithy.Schema, v time.Time) {
	w.prefix(s)
	w.buf = strconv.AppendFloat(w.buf, float64(v.UnixMilli())/1000, 'f', -1, 64)
}

func (w *jsonWriter) WriteUnion(s, variant *smithy.Schema) {
	w.open(s, '{', true)
	w.prefix(variant)
	w.keyed = true
}

func (w *jsonWriter) CloseUnion() { w.close('}') }

// WriteDocument writes null: SQS has no document members.
func (w *jsonWriter) WriteDocument(s *smithy.Schema, _ document.Value) { w.WriteNil(s) }

func (w *jsonWriter) WriteNil(s *smithy.Schema) {
	w.prefix(s)
	w.buf = append(w.buf, "null"...)
}

func (w *jsonWriter) WriteStruct(s *smithy.Schema) { w.open(s, '{', true) }
func (w *jsonWriter) CloseStruct()                 { w.close('}') }
func (w *jsonWriter) WriteList(s *smithy.Schema)   { w.open(s, '[', false) }
func (w *jsonWriter) CloseList()                   { w.close(']') }
func (w *jsonWriter) WriteMap(s *smithy.Schema)    { w.open(s, '{', true) }
func (w *jsonWriter) CloseMap()                    { w.close('}') }

func (w *jsonWriter) WriteKey(_ *smithy.Schema, key string) {
	f := &w.frames[len(w.frames)-1]
	if f.count > 0 {
		w.buf = append(w.buf, ',')
	}
	f.count++
	w.buf = appendJSONString(w.buf, key)
	w.buf = append(w.buf, ':')
	w.keyed = true
}

// appendJSONString appends s as a JSON string: quotes, backslashes and
// control characters escaped, invalid UTF-8 replaced by U+FFFD, everything
// else as is.
func appendJSONString(buf []byte, s string) []byte {
	const hex = "0123456789abcdef"
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			buf = append(buf, s[start:i]...)
			switch c {
			case '"', '\\':
				buf = append(buf, '\\', c)
			case '\n':
				buf = append(buf, '\\', 'n')
			case '\r':
				buf = append(buf, '\\', 'r')
			case '\t':
				buf = append(buf, '\\', 't')
			default:
				buf = append(buf, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			buf = append(buf, s[start:i]...)
			buf = append(buf, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"')
}
