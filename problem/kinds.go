package problem

import "net/http"

// Kind is what went wrong, in the terms HTTP answers it in. The zero Kind
// is [Internal].
type Kind int

// The kinds of error, and the status each is answered with (see [Status]).
const (
	// Internal: the server failed (500). The detail must not show the
	// cause; log it instead.
	Internal Kind = iota
	// Invalid: the request is malformed or has invalid fields (400).
	Invalid
	// Unauthorized: the request lacks valid credentials (401). The caller
	// sets WWW-Authenticate, which depends on its scheme.
	Unauthorized
	// NotFound: nothing is there (404).
	NotFound
	// Conflict: the request conflicts with what is stored (409).
	Conflict
	// InProgress: the same request is being served; retry after it
	// completes (409 with Retry-After).
	InProgress
	// TooLarge: the request body is over the limit (413).
	TooLarge
	// UnsupportedMediaType: the request body's Content-Type is not
	// accepted (415).
	UnsupportedMediaType
	// Mismatch: the request reuses an idempotency key that was sent with
	// another request (422).
	Mismatch
	// Unavailable: a dependency is down; a retry may succeed (503 with
	// Retry-After).
	Unavailable
	// Cancelled: the request was cancelled before it could be answered
	// (503).
	Cancelled
	// TooManyRequests: the client is over its quota; a retry after the
	// wait succeeds (429 with Retry-After).
	TooManyRequests
	// Forbidden: the server understood the request and refuses it;
	// other credentials would not change that (403).
	Forbidden
)

// RetryAfter is the Retry-After, in seconds, of the kinds that carry one,
// unless the error says how long to wait ([Error.RetryAfter]).
const RetryAfter = "1"

// kinds is the one table from a Kind to its answer: the status, and
// whether the client is told when to retry (Retry-After).
var kinds = map[Kind]struct {
	status     int
	retryAfter bool
}{
	Internal:             {http.StatusInternalServerError, false},
	Invalid:              {http.StatusBadRequest, false},
	Unauthorized:         {http.StatusUnauthorized, false},
	NotFound:             {http.StatusNotFound, false},
	Conflict:             {http.StatusConflict, false},
	InProgress:           {http.StatusConflict, true},
	TooLarge:             {http.StatusRequestEntityTooLarge, false},
	UnsupportedMediaType: {http.StatusUnsupportedMediaType, false},
	Mismatch:             {http.StatusUnprocessableEntity, false},
	Unavailable:          {http.StatusServiceUnavailable, true},
	Cancelled:            {http.StatusServiceUnavailable, false},
	TooManyRequests:      {http.StatusTooManyRequests, true},
	Forbidden:            {http.StatusForbidden, false},
}

// Status returns the HTTP status of k; an unknown Kind is [Internal].
func (k Kind) Status() int {
	if a, ok := kinds[k]; ok {
		return a.status
	}
	return http.StatusInternalServerError
}
