package sqsfake

import (
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs/schemas"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/document"
	"github.com/aws/smithy-go/traits"
)

// The query protocol is SQS's older wire protocol, still served by SQS and
// still sent by distribution-packaged AWS CLIs, older SDKs and scripts: a
// form-encoded request (Action=SendMessage&QueueUrl=…&MessageBody=…, POSTed
// or in the URL) and an XML answer,
//
//	<SendMessageResponse xmlns="http://queue.amazonaws.com/doc/2012-11-05/">
//	  <SendMessageResult>…</SendMessageResult>
//	  <ResponseMetadata><RequestId>…</RequestId></ResponseMetadata>
//	</SendMessageResponse>
//
// or, for an error, <ErrorResponse><Error><Type>Sender</Type><Code>…</Code>
// <Message>…</Message><Detail/></Error><RequestId>…</RequestId></ErrorResponse>
// (the shapes of the SQS API reference's query examples). Parameter and
// element names come from the service model's xmlName and xmlFlattened
// traits, as the SDK's schemas carry them: Attribute.1.Name,
// SendMessageBatchRequestEntry.2.MessageBody, MessageAttribute.1.Value.DataType.
// A request is turned into the JSON body of the same operation and runs the
// JSON path, so both protocols share every rule.

const queryNamespace = "http://queue.amazonaws.com/doc/2012-11-05/"

// queryInput is the input schema of op, or nil if sqsfake does not run it.
func queryInput(op string) *smithy.Schema {
	switch op {
	case "AddPermission":
		return schemas.AddPermissionRequest
	case "CancelMessageMoveTask":
		return schemas.CancelMessageMoveTaskRequest
	case "ChangeMessageVisibility":
		return schemas.ChangeMessageVisibilityRequest
	case "ChangeMessageVisibilityBatch":
		return schemas.ChangeMessageVisibilityBatchRequest
	case "CreateQueue":
		return schemas.CreateQueueRequest
	case "DeleteMessage":
		return schemas.DeleteMessageRequest
	case "DeleteMessageBatch":
		return schemas.DeleteMessageBatchRequest
	case "DeleteQueue":
		return schemas.DeleteQueueRequest
	case "GetQueueAttributes":
		return schemas.GetQueueAttributesRequest
	case "GetQueueUrl":
		return schemas.GetQueueUrlRequest
	case "ListDeadLetterSourceQueues":
		return schemas.ListDeadLetterSourceQueuesRequest
	case "ListMessageMoveTasks":
		return schemas.ListMessageMoveTasksRequest
	case "ListQueues":
		return schemas.ListQueuesRequest
	case "ListQueueTags":
		return schemas.ListQueueTagsRequest
	case "PurgeQueue":
		return schemas.PurgeQueueRequest
	case "ReceiveMessage":
		return schemas.ReceiveMessageRequest
	case "RemovePermission":
		return schemas.RemovePermissionRequest
	case "SendMessage":
		return schemas.SendMessageRequest
	case "SendMessageBatch":
		return schemas.SendMessageBatchRequest
	case "SetQueueAttributes":
		return schemas.SetQueueAttributesRequest
	case "StartMessageMoveTask":
		return schemas.StartMessageMoveTaskRequest
	case "TagQueue":
		return schemas.TagQueueRequest
	case "UntagQueue":
		return schemas.UntagQueueRequest
	}
	return nil
}

// queryToJSON turns the form of op into the JSON body of the same request.
// path is the request's URL path: old clients post to the queue's URL and
// leave QueueUrl out.
func queryToJSON(op string, form url.Values, endpoint, path string) ([]byte, bool) {
	in := queryInput(op)
	if in == nil {
		return nil, false
	}
	keys := make([]string, 0, len(form))
	for k := range form {
		keys = append(keys, k)
	}
	d := formDecoder{form: form, keys: keys}
	doc := d.structure(in, "")
	if _, has := doc["QueueUrl"]; !has && in.Member("QueueUrl") != nil && strings.Count(strings.Trim(path, "/"), "/") == 1 {
		doc["QueueUrl"] = endpoint + path
	}
	body, err := json.Marshal(doc)
	if err != nil {
		return nil, false
	}
	return body, true
}

type formDecoder struct {
	form url.Values
	keys []string
}

// has reports whether the form holds key or anything under key.
func (d formDecoder) has(key string) bool {
	if _, ok := d.form[key]; ok {
		return true
	}
	for _, k := range d.keys {
		if strings.HasPrefix(k, key+".") {
			return true
		}
	}
	return false
}

// queryName is a member's parameter name: its xmlName, or its own name.
func queryName(s *smithy.Schema) string {
	if n, ok := smithy.SchemaTrait[*traits.XMLName](s); ok {
		return n.Name
	}
	return s.MemberName()
}

func flattened(s *smithy.Schema) bool {
	_, ok := smithy.SchemaTrait[*traits.XMLFlattened](s)
	return ok
}

func (d formDecoder) structure(s *smithy.Schema, prefix string) map[string]any {
	out := map[string]any{}
	for name, m := range s.Members() {
		if v, ok := d.value(m, prefix+queryName(m)); ok {
			out[name] = v
		}
	}
	return out
}

// value decodes the member m found at key.
func (d formDecoder) value(m *smithy.Schema, key string) (any, bool) {
	if !d.has(key) {
		return nil, false
	}
	switch m.Type() {
	case smithy.ShapeTypeStructure:
		return d.structure(m, key+"."), true
	case smithy.ShapeTypeList, smithy.ShapeTypeSet:
		item := m.ListMember()
		if !flattened(m) {
			key += "." + memberNameOr(item, "member")
		}
		list := []any{}
		for i := 1; ; i++ {
			v, ok := d.value(item, key+"."+strconv.Itoa(i))
			if !ok {
				break
			}
			list = append(list, v)
		}
		return list, true
	case smithy.ShapeTypeMap:
		if !flattened(m) {
			key += ".entry"
		}
		k, v := m.MapKey(), m.MapValue()
		kn, vn := memberNameOr(k, "key"), memberNameOr(v, "value")
		out := map[string]any{}
		for i := 1; ; i++ {
			entry := key + "." + strconv.Itoa(i) + "."
			name, ok := d.form[entry+kn]
			if !ok {
				break
			}
			if val, ok := d.value(v, entry+vn); ok {
				out[strings.ToValidUTF8(name[0], "\uffff")] = val
			}
		}
		return out, true
	}
	vs, ok := d.form[key]
	if !ok {
		return nil, false
	}
	text := strings.ToValidUTF8(vs[0], "\uffff") // refused later, as over JSON
	switch m.Type() {
	case smithy.ShapeTypeBoolean:
		return text == "true", true
	case smithy.ShapeTypeByte, smithy.ShapeTypeShort, smithy.ShapeTypeInteger, smithy.ShapeTypeLong, smithy.ShapeTypeIntEnum:
		if n, err := strconv.ParseInt(text, 10, 64); err == nil {
			return n, true
		}
	}
	return text, true // a bad number fails the JSON decode: a SerializationException
}

// memberNameOr is the xmlName of a list member or map key or value, or def.
func memberNameOr(s *smithy.Schema, def string) string {
	if s == nil {
		return def
	}
	if n, ok := smithy.SchemaTrait[*traits.XMLName](s); ok {
		return n.Name
	}
	return def
}

// xmlWriter writes an output shape as the query protocol's XML, from the
// shape's own Serialize method as jsonWriter does for JSON.
type xmlWriter struct {
	buf    []byte
	frames []xmlFrame
}

type xmlFrame struct {
	kind     smithy.ShapeType // ShapeTypeStructure, ShapeTypeList or ShapeTypeMap
	closeTag string           // written when the frame closes; "" for none
	itemName string           // list: each item's element
	entry    string           // map: each entry's element
	key, val string           // map: the key's and value's elements
	inEntry  bool             // map: an entry is open, awaiting its value
}

var _ smithy.ShapeSerializer = (*xmlWriter)(nil)

func (w *xmlWriter) Bytes() []byte { return w.buf }

// name is the element of a value written with schema s where it is now.
func (w *xmlWriter) name(s *smithy.Schema) string {
	if len(w.frames) == 0 {
		return ""
	}
	f := &w.frames[len(w.frames)-1]
	switch f.kind {
	case smithy.ShapeTypeList:
		return f.itemName
	case smithy.ShapeTypeMap:
		return f.val
	}
	if s == nil {
		return ""
	}
	return queryName(s)
}

// afterValue closes a map entry once its value is written.
func (w *xmlWriter) afterValue() {
	if len(w.frames) == 0 {
		return
	}
	f := &w.frames[len(w.frames)-1]
	if f.kind == smithy.ShapeTypeMap && f.inEntry {
		w.buf = append(w.buf, "</"+f.entry+">"...)
		f.inEntry = false
	}
}

func (w *xmlWriter) element(s *smithy.Schema, text string) {
	n := w.name(s)
	w.buf = append(w.buf, '<')
	w.buf = append(w.buf, n...)
	w.buf = append(w.buf, '>')
	w.buf = appendXMLText(w.buf, text)
	w.buf = append(w.buf, "</"+n+">"...)
	w.afterValue()
}

func (w *xmlWriter) open(s *smithy.Schema, f xmlFrame, tag string) {
	if tag != "" {
		w.buf = append(w.buf, "<"+tag+">"...)
	}
	f.closeTag = tag
	w.frames = append(w.frames, f)
}

func (w *xmlWriter) close() {
	f := w.frames[len(w.frames)-1]
	w.frames = w.frames[:len(w.frames)-1]
	if f.closeTag != "" {
		w.buf = append(w.buf, "</"+f.closeTag+">"...)
	}
	w.afterValue()
}

func (w *xmlWriter) WriteStruct(s *smithy.Schema) {
	tag := ""
	if len(w.frames) > 0 { // the output itself is wrapped by the caller
		tag = w.name(s)
	}
	w.open(s, xmlFrame{kind: smithy.ShapeTypeStructure}, tag)
}

func (w *xmlWriter) CloseStruct() { w.close() }

func (w *xmlWriter) WriteList(s *smithy.Schema) {
	n := w.name(s)
	if flattened(s) {
		w.open(s, xmlFrame{kind: smithy.ShapeTypeList, itemName: n}, "")
		return
	}
	w.open(s, xmlFrame{kind: smithy.ShapeTypeList, itemName: memberNameOr(s.ListMember(), "member")}, n)
}

func (w *xmlWriter) CloseList() { w.close() }

func (w *xmlWriter) WriteMap(s *smithy.Schema) {
	n := w.name(s)
	f := xmlFrame{kind: smithy.ShapeTypeMap, key: memberNameOr(s.MapKey(), "key"), val: memberNameOr(s.MapValue(), "value")}
	if flattened(s) {
		f.entry = n
		w.open(s, f, "")
		return
	}
	f.entry = "entry"
	w.open(s, f, n)
}

func (w *xmlWriter) CloseMap() { w.close() }

func (w *xmlWriter) WriteKey(_ *smithy.Schema, key string) {
	f := &w.frames[len(w.frames)-1]
	w.buf = append(w.buf, "<"+f.entry+"><"+f.key+">"...)
	w.buf = appendXMLText(w.buf, key)
	w.buf = append(w.buf, "</"+f.key+">"...)
	f.inEntry = true
}

func (w *xmlWriter) WriteInt8(s *smithy.Schema, v int8)   { w.WriteInt64(s, int64(v)) }
func (w *xmlWriter) WriteInt16(s *smithy.Schema, v int16) { w.WriteInt64(s, int64(v)) }
func (w *xmlWriter) WriteInt32(s *smithy.Schema, v int32) { w.WriteInt64(s, int64(v)) }
func (w *xmlWriter) WriteInt64(s *smithy.Schema, v int64) { w.element(s, strconv.FormatInt(v, 10)) }
func (w *xmlWriter) WriteFloat32(s *smithy.Schema, v float32) {
	w.element(s, strconv.FormatFloat(float64(v), 'g', -1, 32))
}
func (w *xmlWriter) WriteFloat64(s *smithy.Schema, v float64) {
	w.element(s, strconv.FormatFloat(v, 'g', -1, 64))
}
func (w *xmlWriter) WriteBool(s *smithy.Schema, v bool)           { w.element(s, strconv.FormatBool(v)) }
func (w *xmlWriter) WriteString(s *smithy.Schema, v string)       { w.element(s, v) }
func (w *xmlWriter) WriteBigInt(s *smithy.Schema, v *big.Int)     { w.element(s, v.String()) }
func (w *xmlWriter) WriteBigFloat(s *smithy.Schema, v *big.Float) { w.element(s, v.Text('g', -1)) }
func (w *xmlWriter) WriteBlob(s *smithy.Schema, v []byte) {
	if v != nil {
		w.element(s, base64.StdEncoding.EncodeToString(v))
	}
}

// WriteTime writes ISO 8601; no SQS output has a timestamp member.
func (w *xmlWriter) WriteTime(s *smithy.Schema, v time.Time) {
	w.element(s, v.UTC().Format(time.RFC3339Nano))
}

func (w *xmlWriter) WriteNil(s *smithy.Schema) {
	n := w.name(s)
	w.buf = append(w.buf, "<"+n+"/>"...)
	w.afterValue()
}

// WriteDocument writes nothing: SQS has no document members.
func (w *xmlWriter) WriteDocument(s *smithy.Schema, _ document.Value) { w.WriteNil(s) }

// WriteUnion writes a struct: SQS has no union members.
func (w *xmlWriter) WriteUnion(s, _ *smithy.Schema) { w.WriteStruct(s) }

func (w *xmlWriter) CloseUnion() { w.close() }

// appendXMLText appends s escaped as XML character data. Characters XML
// cannot carry (SQS refuses them in messages) never reach an answer.
func appendXMLText(buf []byte, s string) []byte {
	for _, r := range s {
		switch r {
		case '<':
			buf = append(buf, "&lt;"...)
		case '>':
			buf = append(buf, "&gt;"...)
		case '&':
			buf = append(buf, "&amp;"...)
		case '"':
			buf = append(buf, "&quot;"...)
		case '\'':
			buf = append(buf, "&apos;"...)
		case '\r':
			buf = append(buf, "&#xD;"...)
		default:
			buf = append(buf, string(r)...)
		}
	}
	return buf
}

// queryResponse wraps an output written by xmlWriter.
func queryResponse(op, requestID string, out smithy.Serializable) []byte {
	w := &xmlWriter{buf: make([]byte, 0, 512)}
	w.buf = append(w.buf, `<?xml version="1.0"?><`+op+`Response xmlns="`+queryNamespace+`"><`+op+`Result>`...)
	out.Serialize(w)
	w.buf = append(w.buf, `</`+op+`Result><ResponseMetadata><RequestId>`+requestID+`</RequestId></ResponseMetadata></`+op+`Response>`...)
	return w.buf
}

// queryError is the XML body of an error.
func queryError(code, fault, message, requestID string) []byte {
	buf := []byte(`<?xml version="1.0"?><ErrorResponse xmlns="` + queryNamespace + `"><Error><Type>` + fault + `</Type><Code>`)
	buf = appendXMLText(buf, code)
	buf = append(buf, "</Code><Message>"...)
	buf = appendXMLText(buf, message)
	buf = append(buf, "</Message><Detail/></Error><RequestId>"+requestID+"</RequestId></ErrorResponse>"...)
	return buf
}
