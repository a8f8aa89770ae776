package sqsfake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/traits"
)

// The wire protocol is AWS JSON 1.0, what aws-sdk-go-v2 and every current
// AWS SDK send to SQS: POST with X-Amz-Target: AmazonSQS.<Operation>, a JSON
// body with the model's member names, and JSON back. The older query
// protocol is served too (wire_query.go). Errors carry the
// status, __type and x-amzn-query-error header of the service, so each SDK
// builds its typed errors and legacy codes from them. Signatures are
// accepted and not checked.

const (
	targetPrefix    = "AmazonSQS."
	jsonContentType = "application/x-amz-json-1.0"
	maxRequestBytes = 8 << 20 // a full batch of 1 MiB, base64 and JSON overhead included
)

// wireResponse is the answer to one request.
type wireResponse struct {
	status int
	header http.Header
	body   []byte
	// drop, if set, means no answer: the connection is closed (over HTTP)
	// or the transport fails with drop (in process).
	drop error
	// enc, if set, is the encoder body belongs to, for release.
	enc *jsonWriter
}

// encoder returns an encoder for an answer, from the pool if one was
// released.
func (s *Server) encoder() *jsonWriter {
	if w, ok := s.writers.Get().(*jsonWriter); ok {
		return w
	}
	return &jsonWriter{buf: make([]byte, 0, 512)}
}

// release returns resp's encoder to the pool once its body has been written
// out and is referenced no more (the HTTP handler; the in-process transport
// hands the body to the client and never releases). An encoder that grew
// past maxPooledAnswer is left to the garbage collector, so one large
// receive does not keep its buffer.
func (s *Server) release(resp wireResponse) {
	if w := resp.enc; w != nil && cap(w.buf) <= maxPooledAnswer {
		w.buf, w.frames, w.keyed = w.buf[:0], w.frames[:0], false
		s.writers.Put(w)
	}
}

// maxPooledAnswer is the largest answer buffer kept for reuse: ten messages
// of a few KiB each.
const maxPooledAnswer = 64 << 10

// wireRequest is one request as it arrived, over HTTP or in process.
type wireRequest struct {
	endpoint    string // the scheme and host it was sent to
	path        string // the URL path
	target      string // the X-Amz-Target header (AWS JSON 1.0)
	contentType string
	rawQuery    string // the URL's query string (the query protocol may use it)
	body        []byte
}

// isQuery reports whether r speaks the query protocol: no X-Amz-Target,
// and a form body or a URL query.
func (r wireRequest) isQuery() bool {
	return r.target == "" && (strings.HasPrefix(r.contentType, "application/x-www-form-urlencoded") || r.rawQuery != "")
}

// serve answers one request in the protocol it speaks.
func (s *Server) serve(ctx context.Context, wr wireRequest) wireResponse {
	start := time.Now()
	req := &request{endpoint: wr.endpoint}
	req.drain, _ = ctx.Value(drainKey{}).(<-chan struct{})
	ctx = context.WithValue(ctx, requestKey{}, req)
	requestID := s.requestID()
	query := wr.isQuery()
	op, body := "", wr.body
	var resp wireResponse
	var err error
	if query {
		op, body, err = queryRequest(wr)
	} else {
		var ok bool
		if op, ok = strings.CutPrefix(wr.target, targetPrefix); !ok {
			err = &smithy.GenericAPIError{Code: "UnknownOperationException", Message: fmt.Sprintf("Expected an AWS JSON 1.0 request (POST with X-Amz-Target: AmazonSQS.<Operation>) or a query protocol request (form-encoded Action=<Operation>), got X-Amz-Target %q.", wr.target), Fault: smithy.FaultClient}
		}
	}
	if err == nil {
		body = markInvalidText(body)
		var out smithy.Serializable
		if out, err = s.dispatch(ctx, op, body); err == nil {
			if req.corrupt {
				corruptChecksums(out)
			}
			if query {
				resp = wireResponse{status: http.StatusOK, header: responseHeader(requestID, true), body: queryResponse(op, requestID, out)}
			} else {
				w := s.encoder()
				out.Serialize(w)
				resp = wireResponse{status: http.StatusOK, header: responseHeader(requestID, false), body: w.Bytes(), enc: w}
			}
		}
	}
	if err != nil {
		resp = s.errorResponse(err, requestID, query)
	}
	if l := s.opts.Logger; l != nil {
		status := slog.Int("status", resp.status)
		if resp.drop != nil {
			status = slog.String("status", "dropped")
		}
		l.LogAttrs(ctx, slog.LevelInfo, "sqsfake request", slog.String("op", op), slog.String("queue", req.queue), status, slog.Duration("duration", time.Since(start)))
	}
	return resp
}

// queryRequest reads the operation of a query protocol request and turns
// its parameters into the operation's JSON body.
func queryRequest(wr wireRequest) (op string, body []byte, err error) {
	form, ferr := url.ParseQuery(wr.rawQuery)
	if strings.HasPrefix(wr.contentType, "application/x-www-form-urlencoded") {
		posted, perr := url.ParseQuery(string(wr.body))
		for k, v := range posted {
			form[k] = append(form[k], v...)
		}
		if perr != nil {
			ferr = perr
		}
	}
	if ferr != nil {
		return "", nil, &smithy.GenericAPIError{Code: "MalformedQueryString", Message: "The query string is malformed: " + ferr.Error(), Fault: smithy.FaultClient}
	}
	op = form.Get("Action")
	if op == "" {
		return "", nil, &smithy.GenericAPIError{Code: "MissingAction", Message: "The request must contain the parameter Action.", Fault: smithy.FaultClient}
	}
	body, ok := queryToJSON(op, form, wr.endpoint, wr.path)
	if !ok {
		return op, nil, &smithy.GenericAPIError{Code: "InvalidAction", Message: "The action " + op + " is not valid for this endpoint.", Fault: smithy.FaultClient}
	}
	return op, body, nil
}

func (s *Server) requestID() string {
	return uuidOf(s.requestSeq.Add(1), "5a5a")
}

func responseHeader(requestID string, query bool) http.Header {
	if query {
		return http.Header{"Content-Type": {"text/xml"}, "X-Amzn-Requestid": {requestID}}
	}
	return http.Header{"Content-Type": {jsonContentType}, "X-Amzn-Requestid": {requestID}}
}

// dispatch decodes the input of op, runs it and returns its output.
func (s *Server) dispatch(ctx context.Context, op string, body []byte) (smithy.Serializable, error) {
	switch op {
	case "CreateQueue":
		return call(ctx, body, s.createQueue)
	case "GetQueueUrl":
		return call(ctx, body, s.getQueueURL)
	case "GetQueueAttributes":
		return call(ctx, body, s.getQueueAttributes)
	case "SetQueueAttributes":
		return call(ctx, body, s.setQueueAttributes)
	case "DeleteQueue":
		return call(ctx, body, s.deleteQueue)
	case "PurgeQueue":
		return call(ctx, body, s.purgeQueue)
	case "ListQueues":
		return call(ctx, body, s.listQueues)
	case "ListDeadLetterSourceQueues":
		return call(ctx, body, s.listDeadLetterSourceQueues)
	case "TagQueue":
		return call(ctx, body, s.tagQueue)
	case "UntagQueue":
		return call(ctx, body, s.untagQueue)
	case "ListQueueTags":
		return call(ctx, body, s.listQueueTags)
	case "SendMessage":
		return call(ctx, body, s.sendMessage)
	case "SendMessageBatch":
		return call(ctx, body, s.sendMessageBatch)
	case "ReceiveMessage":
		return call(ctx, body, s.receiveMessage)
	case "DeleteMessage":
		return call(ctx, body, s.deleteMessageOp)
	case "DeleteMessageBatch":
		return call(ctx, body, s.deleteMessageBatch)
	case "ChangeMessageVisibility":
		return call(ctx, body, s.changeMessageVisibility)
	case "ChangeMessageVisibilityBatch":
		return call(ctx, body, s.changeMessageVisibilityBatch)
	case "StartMessageMoveTask":
		return call(ctx, body, s.startMessageMoveTask)
	case "ListMessageMoveTasks":
		return call(ctx, body, s.listMessageMoveTasks)
	case "CancelMessageMoveTask":
		return call(ctx, body, s.cancelMessageMoveTask)
	case "AddPermission":
		return call(ctx, body, s.addPermission)
	case "RemovePermission":
		return call(ctx, body, s.removePermission)
	}
	return nil, &smithy.GenericAPIError{Code: "UnknownOperationException", Message: "Unknown operation " + op + ".", Fault: smithy.FaultClient}
}

// call decodes a request body into the SDK's input type (member names are
// the Go field names; blobs are base64, as encoding/json reads []byte),
// notes its explicit zeros, and runs fn on it. The message operations'
// usual bodies take decodeFast; every other body encoding/json.
func call[In any, Out smithy.Serializable](ctx context.Context, body []byte, fn func(context.Context, *In) (Out, error)) (smithy.Serializable, error) {
	in := new(In)
	if len(body) > 0 {
		req := requestOf(ctx)
		var fast bool
		if req.zeros, fast = decodeFast(body, in); !fast {
			in = new(In)
			req.zeros = probeZeros(in, body)
			if err := json.Unmarshal(body, in); err != nil {
				return nil, &smithy.GenericAPIError{Code: "SerializationException", Message: "Cannot read the request body: " + err.Error(), Fault: smithy.FaultClient}
			}
		}
	}
	out, err := fn(ctx, in)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// errorResponse encodes err as the service would: the status and legacy
// code of its shape in the SDK's own model (or of its fault for unmodeled
// errors), a body with __type and message, and x-amzn-query-error.
func (s *Server) errorResponse(err error, requestID string, query bool) wireResponse {
	var status int
	var wf *wireFault
	if errors.As(err, &wf) {
		if wf.drop {
			return wireResponse{drop: errDropped}
		}
		status = wf.status
		if wf.err == nil {
			return wireResponse{status: status, header: http.Header{"X-Amzn-Requestid": {requestID}}}
		}
		err = wf.err
	}
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		return wireResponse{drop: err}
	}
	d := describe(apiErr)
	if status == 0 {
		status = d.status
	}
	fault := "Sender"
	if d.server {
		fault = "Receiver"
	}
	h := responseHeader(requestID, query)
	if query {
		return wireResponse{status: status, header: h, body: queryError(d.code, fault, apiErr.ErrorMessage(), requestID)}
	}
	w := &jsonWriter{}
	w.buf = append(w.buf, `{"__type":`...)
	w.buf = appendJSONString(w.buf, "com.amazonaws.sqs#"+d.shape)
	w.buf = append(w.buf, `,"message":`...)
	w.buf = appendJSONString(w.buf, apiErr.ErrorMessage())
	w.buf = append(w.buf, '}')
	h.Set("X-Amzn-Query-Error", d.code+";"+fault)
	return wireResponse{status: status, header: h, body: w.Bytes()}
}

// errDropped is what the in-process transport returns for a dropped
// connection: what net/http returns when the server closes it unanswered.
var errDropped = fmt.Errorf("sqsfake: connection closed by the server: %w", io.EOF)

// errorDescription is how an API error travels.
type errorDescription struct {
	shape  string // __type, without the namespace
	code   string // legacy code for x-amzn-query-error
	status int
	server bool
}

// describe finds err's shape in the SDK's model when it is one of the
// modeled error types, reading the status and legacy code from the model's
// traits; other errors travel under their own code.
func describe(err smithy.APIError) errorDescription {
	d := errorDescription{shape: err.ErrorCode(), code: err.ErrorCode(), server: err.ErrorFault() == smithy.FaultServer}
	if t := reflect.TypeOf(err); t.Kind() == reflect.Pointer && t.Elem().PkgPath() == "github.com/aws/aws-sdk-go-v2/service/sqs/types" {
		if entry, ok := sqs.TypeRegistry.Entries["com.amazonaws.sqs#"+t.Elem().Name()]; ok {
			d.shape = t.Elem().Name()
			if e, ok := smithy.SchemaTrait[*traits.Error](entry.Schema); ok {
				d.server = e.Type == "server"
			}
			if h, ok := smithy.SchemaTrait[*traits.HTTPError](entry.Schema); ok {
				d.status = h.Code
			}
			if q, ok := smithy.SchemaTrait[*traits.AWSQueryError](entry.Schema); ok && err.ErrorCode() == d.shape {
				d.code = q.ErrorCode // no override: the model's legacy code
			}
		}
	}
	if d.status == 0 {
		switch {
		case d.code == "ServiceUnavailable":
			d.status = http.StatusServiceUnavailable
		case d.server:
			d.status = http.StatusInternalServerError
		default:
			d.status = http.StatusBadRequest
		}
	}
	return d
}

// wireCode is the code a client reads for err: the legacy code of its shape.
func wireCode(err smithy.APIError) string { return describe(err).code }

// Handler returns the Server's AWS JSON 1.0 endpoint as an http.Handler.
// Mount it anywhere (every path answers); NewHTTPServer and cmd/sqsfake
// serve it on a port. Queue URLs in its answers point at the host each
// request was sent to, unless Options.Endpoint says otherwise.
func (s *Server) Handler() http.Handler { return wireHandler{s} }

type wireHandler struct{ s *Server }

func (h wireHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost && (r.Method != http.MethodGet || r.URL.RawQuery == "") {
		http.Error(w, "sqsfake speaks SQS's AWS JSON 1.0 protocol (POST with X-Amz-Target: AmazonSQS.<Operation>) and its query protocol (Action=<Operation>, form-encoded in a POST or in the URL of a GET)", http.StatusMethodNotAllowed)
		return
	}
	query := r.Header.Get("X-Amz-Target") == ""
	body, err := readBody(w, r)
	if err != nil {
		status, apiErr := http.StatusBadRequest, &smithy.GenericAPIError{Code: "SerializationException", Message: "Cannot read the request body: " + err.Error(), Fault: smithy.FaultClient}
		if errors.Is(err, errRequestTooLarge) {
			status, apiErr = http.StatusRequestEntityTooLarge, &smithy.GenericAPIError{Code: "RequestEntityTooLarge", Message: fmt.Sprintf("The request body must be at most %d bytes.", maxRequestBytes), Fault: smithy.FaultClient}
		}
		h.s.writeResponse(w, h.s.errorResponse(&wireFault{status: status, err: apiErr}, h.s.requestID(), query))
		return
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	resp := h.s.serve(r.Context(), wireRequest{
		endpoint: scheme + "://" + r.Host, path: r.URL.Path, target: r.Header.Get("X-Amz-Target"),
		contentType: r.Header.Get("Content-Type"), rawQuery: r.URL.RawQuery, body: body,
	})
	h.s.writeResponse(w, resp)
	h.s.release(resp)
}

// writeResponse sends resp, or closes the connection unanswered for a drop.
func (s *Server) writeResponse(w http.ResponseWriter, resp wireResponse) {
	if resp.drop != nil {
		panic(http.ErrAbortHandler) // close the connection unanswered
	}
	for k, v := range resp.header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(resp.body))) // never chunked
	w.WriteHeader(resp.status)
	_, _ = w.Write(resp.body)
}

// errRequestTooLarge is why a request body is refused unread.
var errRequestTooLarge = errors.New("request body too large")

// readBody reads a request body of at most maxRequestBytes. A larger
// declared Content-Length is refused before anything is read, and memory
// grows with the bytes that arrive, not with what the client declared: a
// client that declares 8 MiB and sends nothing holds a small buffer.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.ContentLength > maxRequestBytes {
		return nil, errRequestTooLarge
	}
	rd := http.MaxBytesReader(w, r.Body, maxRequestBytes)
	size := 512 // length unknown: grow from here as bytes arrive
	if n := r.ContentLength; n > 0 {
		size = int(min(n, initialBodyBuffer)) + 1 // room for the read that finds the end
	}
	// Read by hand: bytes.Buffer.ReadFrom wants 512 bytes free before each
	// read, so a buffer of the declared length was copied to a bigger one
	// before the read that found the end, on every request.
	buf := make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := rd.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				return nil, errRequestTooLarge
			}
			return nil, err
		}
	}
}

// initialBodyBuffer is the most a request body reserves before its bytes
// arrive; most SQS requests are smaller.
const initialBodyBuffer = 64 << 10

// corruptChecksums spoils an answer's body digests, for a CorruptChecksum
// fault.
func corruptChecksums(out smithy.Serializable) {
	const wrong = "00000000000000000000000000000000"
	switch o := out.(type) {
	case *sqs.SendMessageOutput:
		o.MD5OfMessageBody = aws.String(wrong)
	case *sqs.SendMessageBatchOutput:
		for i := range o.Successful {
			o.Successful[i].MD5OfMessageBody = aws.String(wrong)
		}
	case *sqs.ReceiveMessageOutput:
		for i := range o.Messages {
			o.Messages[i].MD5OfBody = aws.String(wrong)
		}
	}
}
