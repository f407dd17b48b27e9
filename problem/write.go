package problem

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ContentType is the media type of problem details (RFC 9457).
const ContentType = "application/problem+json"

// Details is an RFC 9457 problem details object.
type Details struct {
	// Type is a URI reference identifying the problem type; "about:blank"
	// (the default when empty) means the problem is just its status code.
	Type string `json:"type"`
	// Title is a short summary of the problem type; it defaults to the
	// status text.
	Title string `json:"title"`
	// Status is the HTTP status code.
	Status int `json:"status"`
	// Detail explains this occurrence, for people.
	Detail string `json:"detail,omitempty"`
	// Instance is a URI reference identifying this occurrence, if any.
	Instance string `json:"instance,omitempty"`
	// Errors names each invalid field of the request (extension member).
	Errors []FieldError `json:"errors,omitempty"`
}

// A Writer answers an error as a problem. [Write] is the default; a service
// that wants its problems to look its own (a type URI per kind, say) writes
// one around [Prepare] and [Details.Write], keeping the statuses and
// headers of the table.
type Writer func(w http.ResponseWriter, err error)

// Write answers err: an [*Error] in err's chain with the status and headers
// of its [Kind], its detail and fields; any other error as [Internal]
// without a detail. Headers set on w before, such as WWW-Authenticate, are
// kept.
func Write(w http.ResponseWriter, err error) {
	d := Prepare(w, err)
	d.Write(w)
}

// Prepare sets on w the headers that err's [Kind] calls for (Retry-After)
// and returns its problem details, unwritten.
func Prepare(w http.ResponseWriter, err error) Details {
	e, ok := errors.AsType[*Error](err)
	if !ok {
		e = &Error{Kind: Internal}
	}
	if kinds[e.Kind].retryAfter {
		w.Header().Set("Retry-After", retryAfter(e.RetryAfter))
	}
	return Details{Status: e.Kind.Status(), Detail: e.Detail, Errors: e.Fields}
}

// cut is s cut to MaxQuoted bytes, on a rune's boundary, ending in "…"
// when cut.
func cut(s string) string {
	if len(s) <= MaxQuoted {
		return s
	}
	return strings.ToValidUTF8(s[:MaxQuoted-len("…")], "") + "…" // the cut rune dropped
}

// retryAfter is the Retry-After of a wait of d: whole seconds, rounded up,
// or [RetryAfter] when d is not positive.
func retryAfter(d time.Duration) string {
	if d <= 0 {
		return RetryAfter
	}
	return strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10)
}

// Bounds of what an answer quotes: a detail, a field's name or detail is
// cut to MaxQuoted bytes, and at most MaxFields fields are named. A
// problem often quotes what the caller sent (an unknown field's name),
// and a stored answer is replayed: bounded, no request amplifies into a
// larger answer.
const (
	MaxQuoted = 256
	MaxFields = 32
)

// Write sends d with its status and Content-Type [ContentType], filling the
// defaults of Type and Title, with Content-Length and
// X-Content-Type-Options: nosniff. Headers set on w before are kept. Its
// strings are cut to [MaxQuoted] bytes and its fields to [MaxFields], and
// written as they are (a "<" is one byte, not the six of an HTML escape).
func (d Details) Write(w http.ResponseWriter) {
	if d.Type == "" {
		d.Type = "about:blank"
	}
	if d.Title == "" {
		d.Title = http.StatusText(d.Status)
	}
	d.Detail = cut(d.Detail)
	fields := d.Errors[:min(len(d.Errors), MaxFields)]
	d.Errors = make([]FieldError, len(fields))
	for i, f := range fields {
		d.Errors[i] = FieldError{Field: cut(f.Field), Detail: cut(f.Detail)}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)              // problem+json is no HTML page
	if err := enc.Encode(d); err != nil { // unreachable: Details holds only strings and ints
		http.Error(w, d.Title, d.Status)
		return
	}
	body := buf.Bytes()
	h := w.Header()
	h.Set("Content-Type", ContentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(d.Status)
	_, _ = w.Write(body)
}
