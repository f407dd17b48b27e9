package middleware

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/onceflow/onceflow/stores"
)

// Names of the HTTP face (IETF draft-ietf-httpapi-idempotency-key-header).
const (
	// IdempotencyKeyHeader carries the client's idempotency key.
	IdempotencyKeyHeader = "Idempotency-Key"
	// ReplayedHeader is "true" on a response replayed from the store.
	ReplayedHeader = "Idempotent-Replayed"
	// HTTPScope is the scope of every record the HTTP face makes, and its
	// label in the receiver's metrics.
	HTTPScope = "http"
)

// retryAfterSeconds is the Retry-After of a 409 (in flight) or a 503 (store
// unavailable).
const retryAfterSeconds = "1"

// HTTP is the net/http face of the receiver: Idempotency-Key middleware for
// unsafe methods (POST, PATCH), after the IETF httpapi draft. It runs the
// handler at most once per key and replays its response to retries.
//
// The record key is the client identity (ClientFromContext; without one,
// every caller is the same anonymous client), the method, the route pattern
// (r.Pattern, set by http.ServeMux) and the Idempotency-Key, in scope
// HTTPScope: one client can never replay or block another's response.
// (Outside a ServeMux the pattern is empty, and a key is one per client and
// method.) The fingerprint is the SHA-256 of the method, path, query and
// body.
//
//   - No key: 400 (unless WithOptionalKey); several keys, or a key that is
//     longer than 255 characters or not printable ASCII: 400.
//   - Body larger than WithMaxRequestBody: 413. Otherwise the body is read
//     whole, fingerprinted, and handed on to the handler unchanged.
//   - First request: the handler runs with the request's context carrying
//     the fencing token (cancelled if the lease is lost). Its response is
//     held, stored, then sent. Every status below 500 is stored for the
//     receiver's TTL, except 408 and 429; those, 5xx and a panic release
//     the key so that the client may retry, and a response larger than
//     WithMaxStoredResponse is sent but not stored (a warning, outcome
//     not_stored). Set-Cookie, Date and hop-by-hop headers are not stored.
//   - Retry after completion, same fingerprint: the stored status, headers
//     and byte-identical body, with Idempotent-Replayed: true.
//   - Same key, other method, path, query or body: 422.
//   - Same key while the first request is in flight: 409 with Retry-After,
//     or, under the receiver's Wait policy, a bounded wait for the first
//     response, which is then replayed.
//   - Store unavailable: 503 with Retry-After under FailClosed; under
//     FailOpen the handler runs unguarded.
//
// Every error is written by the ProblemWriter (application/problem+json).
// Register it innermost on the route, after authentication. The held
// response cannot be flushed early (no http.Flusher). Safe for concurrent
// use.
func (r *Receiver) HTTP(opts ...HTTPOption) func(http.Handler) http.Handler {
	o := httpOptions{maxStored: DefaultMaxStoredResponse, maxRequest: DefaultMaxRequestBody, problem: writeProblem}
	for _, opt := range opts {
		opt(&o)
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			r.serveHTTP(w, req, next, &o)
		})
	}
}

func (r *Receiver) serveHTTP(w http.ResponseWriter, req *http.Request, next http.Handler, o *httpOptions) {
	key, problem := idempotencyKey(req.Header)
	switch {
	case problem != "":
		o.problem(w, http.StatusBadRequest, problem)
		return
	case key == "" && o.keyOptional:
		next.ServeHTTP(w, req)
		return
	case key == "":
		o.problem(w, http.StatusBadRequest, detailMissingKey)
		return
	}
	body, status, detail := readBody(req, o.maxRequest)
	if status != 0 {
		o.problem(w, status, detail)
		return
	}
	client, _ := ClientFromContext(req.Context())
	k := requestKey(client, req, key)
	buf := newResponseBuffer(w, o.maxStored)
	ran := false
	res, err := r.Execute(req.Context(), HTTPScope, k, requestFingerprint(req, body),
		func(ctx context.Context) ([]byte, error) {
			ran = true
			inner := req.WithContext(ctx)
			inner.Body = io.NopCloser(bytes.NewReader(body))
			next.ServeHTTP(buf, inner)
			return buf.result()
		})
	// In transaction mode a failure to complete or commit rolled the
	// handler's effects back: its held answer must not reach the client.
	rolledBack := err != nil && res.Outcome == OutcomeStoreError
	if ran && !rolledBack {
		if errors.Is(err, errNotStored) {
			r.cfg.Logger.WarnContext(req.Context(), "response served but not stored: a retry runs the handler again",
				"scope", HTTPScope, "key", shown(k), "max_stored_response", o.maxStored)
		}
		buf.send()
		return
	}
	r.answer(w, req, k, res, err, o)
}

// answer responds to a request whose handler did not run.
func (r *Receiver) answer(w http.ResponseWriter, req *http.Request, k string, res Result, err error, o *httpOptions) {
	switch {
	case err == nil && res.Outcome == OutcomeDuplicate:
		stored, derr := decodeResponse(res.Value)
		if derr != nil {
			r.cfg.Logger.ErrorContext(req.Context(), "replaying response", "scope", HTTPScope, "key", shown(k), "err", derr)
			o.problem(w, http.StatusInternalServerError, "the stored response to this Idempotency-Key cannot be read")
			return
		}
		w.Header().Set(ReplayedHeader, "true")
		writeResponse(w, stored.status, stored.header, stored.body)
	case errors.Is(err, ErrFingerprintMismatch):
		o.problem(w, http.StatusUnprocessableEntity,
			"this Idempotency-Key was used for a different request: another method, path, query or body")
	case errors.Is(err, ErrInProgress):
		w.Header().Set("Retry-After", retryAfterSeconds)
		o.problem(w, http.StatusConflict, "a request with this Idempotency-Key is in progress: retry after it completes")
	case req.Context().Err() != nil:
		o.problem(w, http.StatusServiceUnavailable, "the request was cancelled")
	default:
		// The claim failed under FailClosed (ErrUnavailable), a transaction
		// could not commit and rolled the handler's effects back, or the
		// result was unexpected: nothing took effect, so a retry is safe.
		if !errors.Is(err, stores.ErrUnavailable) {
			err = fmt.Errorf("unexpected outcome %q: %w", res.Outcome, err)
		}
		r.cfg.Logger.WarnContext(req.Context(), "idempotency store unavailable: request refused",
			"scope", HTTPScope, "key", shown(k), "err", err)
		w.Header().Set("Retry-After", retryAfterSeconds)
		o.problem(w, http.StatusServiceUnavailable, "the idempotency store is unavailable: retry the request")
	}
}

// readBody reads the whole request body, up to limit bytes. On failure it
// returns the status and detail to answer with.
func readBody(req *http.Request, limit int64) (body []byte, status int, detail string) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, 0, ""
	}
	tooLarge := fmt.Sprintf("the body must be at most %d bytes", limit)
	if req.ContentLength > limit {
		return nil, http.StatusRequestEntityTooLarge, tooLarge
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, limit+1))
	var maxBytes *http.MaxBytesError
	switch {
	case errors.As(err, &maxBytes):
		return nil, http.StatusRequestEntityTooLarge, fmt.Sprintf("the body must be at most %d bytes", maxBytes.Limit)
	case err != nil:
		return nil, http.StatusBadRequest, "the body could not be read"
	case int64(len(body)) > limit:
		return nil, http.StatusRequestEntityTooLarge, tooLarge
	}
	return body, 0, ""
}
