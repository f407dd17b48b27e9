package handlers

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// ProblemContentType is the media type of problem details (RFC 9457).
const ProblemContentType = "application/problem+json"

// Problem is an RFC 9457 problem details object.
type Problem struct {
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

// Write sends p with its status and Content-Type ProblemContentType, filling
// the defaults of Type and Title. Headers set on w before, such as
// Retry-After, are kept.
func (p Problem) Write(w http.ResponseWriter) {
	if p.Type == "" {
		p.Type = "about:blank"
	}
	if p.Title == "" {
		p.Title = http.StatusText(p.Status)
	}
	body, err := json.Marshal(p)
	if err != nil { // unreachable: Problem holds only strings and ints
		http.Error(w, p.Title, p.Status)
		return
	}
	body = append(body, '\n')
	h := w.Header()
	h.Set("Content-Type", ProblemContentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(p.Status)
	_, _ = w.Write(body)
}

// WriteProblem sends a problem of type "about:blank" with status, title
// (the status text when empty), detail and the invalid fields, if any.
func WriteProblem(w http.ResponseWriter, status int, title, detail string, fields ...FieldError) {
	Problem{Status: status, Title: title, Detail: detail, Errors: fields}.Write(w)
}
