package problem

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
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

// retryAfter is the Retry-After of a wait of d: whole seconds, rounded up,
// or [RetryAfter] when d is not positive.
func retryAfter(d time.Duration) string {
	if d <= 0 {
		return RetryAfter
	}
	return strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10)
}

// Write sends d with its status and Content-Type [ContentType], filling the
// defaults of Type and Title, with Content-Length and
// X-Content-Type-Options: nosniff. Headers set on w before are kept.
func (d Details) Write(w http.ResponseWriter) {
	if d.Type == "" {
		d.Type = "about:blank"
	}
	if d.Title == "" {
		d.Title = http.StatusText(d.Status)
	}
	body, err := json.Marshal(d)
	if err != nil { // unreachable: Details holds only strings and ints
		http.Error(w, d.Title, d.Status)
		return
	}
	body = append(body, '\n')
	h := w.Header()
	h.Set("Content-Type", ContentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(d.Status)
	_, _ = w.Write(body)
}
