package idempotencykey

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/onceflow/onceflow/middleware/receiver"
)

// errRetryableStatus is the error the HTTP face gives Execute for a
// response that a retry may change (5xx, 408, 429): the claim is released
// and the outcome is failed.
var errRetryableStatus = errors.New("retryable status")

// errNotStored, wrapped in the error the face gives Execute, says that the
// handler succeeded but its response must not be recorded: Execute
// releases the claim (commits without a record, in transaction mode) and
// reports the outcome not_stored.
var errNotStored error = &receiver.OutcomeError{Outcome: receiver.OutcomeNotStored,
	Err: errors.New("result not stored")}

// responseBuffer is the http.ResponseWriter the wrapped handler writes to.
// It holds the response so that it can be stored before the client gets
// it, up to limit body bytes. A response that outgrows limit is not stored:
// what is held is sent and the rest streams straight to the client.
//
// It does not implement http.Flusher, nor Unwrap for
// http.ResponseController: flushing a held response is not possible.
// Informational (1xx) responses are dropped. A handler goroutine must not
// use it after returning, as with any ResponseWriter.
type responseBuffer struct {
	w      http.ResponseWriter
	limit  int64
	allow  replayed    // the headers stored
	header http.Header // the handler's, changed freely until WriteHeader
	sent   http.Header // header as of WriteHeader
	status int         // 0 until WriteHeader
	body   bytes.Buffer
	// spilled: the response outgrew limit, its head and held body are
	// sent, and writes go straight to w.
	spilled bool
}

func newResponseBuffer(w http.ResponseWriter, limit int64, allow replayed) *responseBuffer {
	return &responseBuffer{w: w, limit: limit, allow: allow, header: make(http.Header)}
}

// Header returns the header map the handler sets before WriteHeader.
func (b *responseBuffer) Header() http.Header { return b.header }

// WriteHeader records the status and freezes the header, like net/http; a
// second call is ignored, and a code net/http rejects panics as it would.
func (b *responseBuffer) WriteHeader(code int) {
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code))
	}
	if b.status != 0 || code < 200 {
		return
	}
	b.status = code
	b.sent = b.header.Clone()
}

// Write holds p, or sends it once the response has outgrown the limit.
func (b *responseBuffer) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.WriteHeader(http.StatusOK)
	}
	if !bodyAllowed(b.status) {
		return 0, http.ErrBodyNotAllowed
	}
	if !b.spilled && int64(b.body.Len())+int64(len(p)) > b.limit {
		b.spill()
	}
	if b.spilled {
		return b.w.Write(p)
	}
	return b.body.Write(p)
}

// spill sends the head and the held body, and stops holding.
func (b *responseBuffer) spill() {
	copyHeader(b.w.Header(), b.sent)
	b.w.WriteHeader(b.status)
	_, _ = b.w.Write(b.body.Bytes())
	b.body = bytes.Buffer{}
	b.spilled = true
}

// result ends the handler's response and says what Execute should do with
// it: the envelope to store, or an error that releases the key.
func (b *responseBuffer) result() ([]byte, error) {
	if b.status == 0 { // the handler wrote nothing: net/http would send 200
		b.WriteHeader(http.StatusOK)
	}
	switch s := b.status; {
	case s >= 500 || s == http.StatusRequestTimeout || s == http.StatusTooManyRequests:
		return nil, fmt.Errorf("%w %d", errRetryableStatus, s)
	case b.spilled:
		return nil, fmt.Errorf("%w: response larger than %d bytes", errNotStored, b.limit)
	}
	return encodeResponse(b.allow, b.status, b.sent, b.body.Bytes()), nil
}

// send gives the client the held response, if it was not sent already.
func (b *responseBuffer) send() {
	if b.spilled {
		return
	}
	writeResponse(b.w, b.status, b.sent, b.body.Bytes())
}

// writeResponse sends a whole response: header onto w's (keeping what outer
// middleware set), a Content-Length unless header has one, status, body.
func writeResponse(w http.ResponseWriter, status int, header http.Header, body []byte) {
	h := w.Header()
	copyHeader(h, header)
	if bodyAllowed(status) && h.Get("Content-Length") == "" {
		h.Set("Content-Length", strconv.Itoa(len(body)))
	}
	w.WriteHeader(status)
	if bodyAllowed(status) {
		_, _ = w.Write(body)
	}
}

func copyHeader(dst, src http.Header) {
	for name, values := range src {
		dst[name] = values
	}
}

// bodyAllowed reports whether a response with status may have a body
// (RFC 9110: not 1xx, 204 or 304).
func bodyAllowed(status int) bool {
	return status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified
}
