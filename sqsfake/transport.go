package sqsfake

import (
	"bytes"
	"io"
	"net/http"
)

// memTransport is the SDK client's HTTP client in process: it hands each
// request to the Server's wire layer on the caller's goroutine and returns
// the answer, with no socket in between. The SDK's whole stack still runs:
// validation, serialisation, error deserialisation, checksums.
type memTransport struct{ s *Server }

func (t memTransport) Do(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		_ = req.Body.Close()
	}
	resp := t.s.serve(req.Context(), wireRequest{
		endpoint: req.URL.Scheme + "://" + req.URL.Host, path: req.URL.Path, target: req.Header.Get("X-Amz-Target"),
		contentType: req.Header.Get("Content-Type"), rawQuery: req.URL.RawQuery, body: body,
	})
	if resp.drop != nil {
		return nil, resp.drop
	}
	return &http.Response{
		Status:        http.StatusText(resp.status),
		StatusCode:    resp.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        resp.header,
		Body:          io.NopCloser(bytes.NewReader(resp.body)),
		ContentLength: int64(len(resp.body)),
		Request:       req,
	}, nil
}
