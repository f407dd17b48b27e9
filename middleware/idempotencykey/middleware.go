package idempotencykey

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"

	"github.com/onceflow/onceflow/middleware/apikey"
	"github.com/onceflow/onceflow/middleware/receiver"
	"github.com/onceflow/onceflow/problem"
	"github.com/onceflow/onceflow/stores"
)

// Names of the HTTP face (IETF draft-ietf-httpapi-idempotency-key-header).
const (
	// Header carries the client's idempotency key. The draft
	// makes it a Structured Field (RFC 9651) whose value is an sf-string;
	// many clients send their key unquoted instead, so two forms are
	// accepted, and name the same key:
	//
	//   - an sf-string: a value that begins with '"' is parsed as a
	//     Structured Field Item, which must be one string without
	//     parameters; its content, unescaped, is the key: "abc-123" is the
	//     key abc-123;
	//   - a bare key: any other value is the key as it is, such as abc-123
	//     or a UUID (which need not be an sf-token: it may begin with a
	//     digit).
	//
	// Either way the key is 1 to [MaxKeyLength] printable ASCII
	// characters (space to '~'), in one header line. Rejected with 400: a
	// quoted value that is not an sf-string ("unterminated), an empty one
	// (""), one with parameters ("abc";a=1), an inner list (a value that
	// begins with '('), a key that is too long or not printable ASCII, and
	// several headers. An empty value is no key.
	Header = "Idempotency-Key"
	// ReplayedHeader is "true" on a response replayed from the store.
	ReplayedHeader = "Idempotent-Replayed"
	// Scope is the scope of every record the HTTP face makes, and its label
	// in the receiver's metrics. No message handler may take it (package
	// consume refuses a handler of that name).
	Scope = "http"
)

// Errors of the HTTP face, each answered as its [problem.Kind] says.
var (
	errUnreadableBody     = problem.New(problem.Invalid, "the body could not be read")
	errKeyReused          = problem.New(problem.Mismatch, "this Idempotency-Key was used for a different request: another method, path, query or body")
	errKeyInProgress      = problem.New(problem.InProgress, "a request with this Idempotency-Key is in progress: retry after it completes")
	errCancelled          = problem.New(problem.Cancelled, "the request was cancelled")
	errStoreUnavailable   = problem.New(problem.Unavailable, "the idempotency store is unavailable: retry the request")
	errUnreadableResponse = problem.New(problem.Internal, "the stored response to this Idempotency-Key cannot be read")
	errNoClient           = problem.New(problem.Forbidden, "this request carries no client identity: Idempotency-Key records are kept per client")
)

// Middleware is the net/http face of r: Idempotency-Key middleware for
// unsafe methods (POST, PATCH), after the IETF httpapi draft. It runs the
// handler at most once per key and replays its response to retries.
//
// The record key is the client identity ([apikey.ClientFromContext]), the
// method, the route pattern ([http.Request.Pattern], set by
// [http.ServeMux]) and the idempotency key, in scope [Scope]: one client
// can never replay
// or block another's response. (Outside a ServeMux the pattern is empty,
// and a key is one per client and method.) The fingerprint is the SHA-256
// of the method, path, query and body.
//
//   - No client identity in the request's context (which
//     [apikey.Authenticate] or [apikey.ContextWithClient] sets outside the
//     face; an empty one is none):
//     403, before anything else, and a warning logged the first time,
//     unless [WithAnonymous] says that every such caller is one anonymous
//     client. Fail closed: without an identity, one caller's retry could
//     be answered with another caller's response. 403, not 401: the face
//     does not know the service's authentication scheme, which a 401's
//     WWW-Authenticate must name, and where no authentication runs no
//     credentials would help.
//   - No key: 400 (unless [WithOptionalKey]). The header is an sf-string
//     ("abc-123") or a bare key (abc-123), which name the same key, of 1 to
//     [MaxKeyLength] printable ASCII characters; anything else, or several
//     headers: 400 saying why (see [Header]).
//   - Body larger than [WithMaxRequestBody]: 413. Otherwise the body is read
//     whole, fingerprinted, and handed on to the handler unchanged.
//   - First request: the handler runs with the request's context carrying
//     the fencing token (cancelled if the lease is lost). Its response is
//     held, stored, then sent. Every status below 500 is stored for the
//     receiver's TTL, except 408 and 429; those, 5xx and a panic release
//     the key so that the client may retry, and a response larger than
//     [WithMaxStoredResponse] is sent but not stored (a warning, outcome
//     not_stored). Set-Cookie, Date and hop-by-hop headers are not stored.
//   - Retry after completion, same fingerprint: the stored status, headers
//     and byte-identical body, with Idempotent-Replayed: true.
//   - Same key, other method, path, query or body: 422.
//   - Same key while the first request is in flight: 409 with Retry-After,
//     or, under the receiver's [receiver.Wait] policy, a bounded wait for
//     the first response, which is then replayed.
//   - Store unavailable: 503 with Retry-After under [receiver.FailClosed];
//     under [receiver.FailOpen] the handler runs unguarded.
//   - Store full ([stores.ErrFull]): 503 with Retry-After, under either
//     policy; no record is ever dropped to make room.
//   - Client over its quota of new records ([WithClientQuota], on by
//     default): 429 with Retry-After.
//
// Every error is a [*problem.Error] answered by [problem.Write], or by the
// writer of [WithProblemWriter]: the statuses above come from the one table
// of package problem. Register it innermost on the route, after
// authentication. The held response cannot be flushed early (no
// [http.Flusher]). Safe for concurrent use.
func Middleware(r *receiver.Receiver, opts ...Option) func(http.Handler) http.Handler {
	f := &face{r: r, log: r.Config().Logger, obs: r.Config().Observer,
		o: options{maxStored: DefaultMaxStoredResponse, maxRequest: DefaultMaxRequestBody, problem: problem.Write,
			quotaRecords: DefaultClientRecords, quotaBytes: DefaultClientBytes, quotaWindow: DefaultClientWindow}}
	for _, opt := range opts {
		opt(&f.o)
	}
	f.o.replayed = newReplayed(f.o.replayedNames)
	f.o.quota = newQuota(f.o.quotaRecords, f.o.quotaBytes, f.o.quotaWindow)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			f.serveHTTP(w, req, next)
		})
	}
}

// face is the HTTP face of one receiver, with its options: it logs through
// the receiver's logger and counts what it refuses before claiming with
// the receiver's observer.
type face struct {
	r   *receiver.Receiver
	log *slog.Logger
	obs receiver.Observer
	o   options
}

func (f *face) serveHTTP(w http.ResponseWriter, req *http.Request, next http.Handler) {
	o := &f.o
	client, _ := apikey.ClientFromContext(req.Context())
	if client == "" && !o.anonymous {
		o.unidentified.Do(func() {
			f.log.WarnContext(req.Context(), "request without a client identity refused (403): "+
				"set one outside the HTTP face (apikey.Authenticate or apikey.ContextWithClient), or pass WithAnonymous",
				"scope", Scope, "method", req.Method, "pattern", req.Pattern)
		})
		o.problem(w, errNoClient)
		return
	}
	key, err := idempotencyKey(req.Header)
	switch {
	case err != nil:
		o.problem(w, err)
		return
	case key == "" && o.keyOptional:
		next.ServeHTTP(w, req)
		return
	case key == "":
		o.problem(w, errMissingKey)
		return
	}
	var allow *allowance
	if o.quota != nil {
		allow = o.quota.of(client)
		if wait := allow.wait(); wait > 0 {
			f.obs.Outcome(Scope, receiver.OutcomeRateLimited)
			o.problem(w, overQuota(wait))
			return
		}
	}
	body, err := readBody(req, o.maxRequest)
	if err != nil {
		o.problem(w, err)
		return
	}
	k := requestKey(client, req, key)
	buf := newResponseBuffer(w, o.maxStored, o.replayed)
	ran := false
	res, err := f.r.Execute(req.Context(), Scope, k, requestFingerprint(req, body),
		func(ctx context.Context) ([]byte, error) {
			// The key was free: this request creates a record.
			if allow != nil && !allow.take() {
				return nil, errOverQuota
			}
			ran = true
			inner := req.WithContext(ctx)
			held := new(heldBody)
			held.Reset(body)
			inner.Body = held
			next.ServeHTTP(buf, inner)
			stored, err := buf.result()
			if err == nil && allow != nil {
				allow.stored(len(k) + len(stored))
			}
			return stored, err
		})
	// In transaction mode a failure to complete or commit rolled the
	// handler's effects back: its held answer must not reach the client.
	rolledBack := err != nil && res.Outcome == receiver.OutcomeStoreError
	if ran && !rolledBack {
		if errors.Is(err, errNotStored) {
			f.log.WarnContext(req.Context(), "response served but not stored: a retry runs the handler again",
				"scope", Scope, "key", shown(k), "max_stored_response", o.maxStored)
		}
		buf.send()
		return
	}
	if errors.Is(err, errOverQuota) {
		o.problem(w, overQuota(allow.wait()))
		return
	}
	f.answer(w, req, k, res, err)
}

// answer responds to a request whose handler did not run.
func (f *face) answer(w http.ResponseWriter, req *http.Request, k string, res receiver.Result, err error) {
	o := &f.o
	switch {
	case err == nil && res.Outcome == receiver.OutcomeDuplicate:
		stored, derr := decodeResponse(o.replayed, res.Value)
		if derr != nil {
			f.log.ErrorContext(req.Context(), "replaying response", "scope", Scope, "key", shown(k), "err", derr)
			o.problem(w, errUnreadableResponse)
			return
		}
		w.Header().Set(ReplayedHeader, "true")
		writeResponse(w, stored.status, stored.header, stored.body)
	case errors.Is(err, receiver.ErrFingerprintMismatch):
		o.problem(w, errKeyReused)
	case errors.Is(err, receiver.ErrInProgress):
		o.problem(w, errKeyInProgress)
	case req.Context().Err() != nil:
		o.problem(w, errCancelled)
	case errors.Is(err, stores.ErrFull):
		// Counted as store_full; a flood would only flood the log.
		o.problem(w, storeFull(err))
	default:
		// The claim failed under FailClosed (ErrUnavailable), a transaction
		// could not commit and rolled the handler's effects back, or the
		// result was unexpected: nothing took effect, so a retry is safe.
		if !errors.Is(err, stores.ErrUnavailable) {
			err = fmt.Errorf("unexpected outcome %q: %w", res.Outcome, err)
		}
		f.log.WarnContext(req.Context(), "idempotency store unavailable: request refused",
			"scope", Scope, "key", shown(k), "err", err)
		o.problem(w, errStoreUnavailable)
	}
}

// readBody reads the whole request body, up to limit bytes. Its errors are
// [*problem.Error]s to answer with.
func readBody(req *http.Request, limit int64) ([]byte, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	if req.ContentLength > limit {
		return nil, bodyTooLarge(limit)
	}
	body, err := readAtMost(req.Body, req.ContentLength, limit)
	if err != nil {
		if maxBytes, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, bodyTooLarge(maxBytes.Limit)
		}
		return nil, errUnreadableBody
	}
	if int64(len(body)) > limit {
		return nil, bodyTooLarge(limit)
	}
	return body, nil
}

// readAtMost is io.ReadAll(io.LimitReader(r, limit+1)), but for a body of
// declared length n (-1 if unknown) it allocates once, not from 512 bytes
// up. A body that runs past n is read on, up to the same limit.
func readAtMost(r io.Reader, n, limit int64) ([]byte, error) {
	if n < 0 || n > limit {
		return io.ReadAll(io.LimitReader(r, limit+1))
	}
	b := make([]byte, 0, n+1) // a body that fills it runs past n
	for {
		m, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+m]
		switch {
		case err == io.EOF:
			return b, nil
		case err != nil:
			return b, err
		case len(b) == cap(b):
			rest, err := io.ReadAll(io.LimitReader(r, limit+1-int64(len(b))))
			return append(b, rest...), err
		}
	}
}

// heldBody hands the handler the body the face read, in one allocation.
type heldBody struct{ bytes.Reader }

func (*heldBody) Close() error { return nil }

func bodyTooLarge(limit int64) error {
	return problem.Errorf(problem.TooLarge, "the body must be at most %d bytes", limit)
}

// shown is a key as the receiver shows it in logs: as the stores keep it
// ([stores.StorageKey]), so a long or binary key becomes its short hash.
func shown(key string) string {
	s, _ := stores.StorageKey(key) // fails only for "", shown as ""
	return s
}
