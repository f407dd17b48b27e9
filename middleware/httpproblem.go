package middleware

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// ProblemWriter writes an error response as RFC 9457 problem details
// (application/problem+json) with status and a detail for people. Headers
// already set on w, such as Retry-After or WWW-Authenticate, must be kept.
// The HTTP face and Authenticate answer every error through one, so that a
// service can make them look like its own problems (see WithProblemWriter).
type ProblemWriter func(w http.ResponseWriter, status int, detail string)

// writeProblem is the default ProblemWriter: type "about:blank" and the
// status text as title, so that the middleware answers well on its own.
func writeProblem(w http.ResponseWriter, status int, detail string) {
	body, _ := json.Marshal(struct { // strings and an int: cannot fail
		Type   string `json:"type"`
		Title  string `json:"title"`
		Status int    `json:"status"`
		Detail string `json:"detail,omitempty"`
	}{"about:blank", http.StatusText(status), status, detail})
	body = append(body, '\n')
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
