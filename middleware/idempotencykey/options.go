package idempotencykey

import (
	"sync"
	"time"

	"github.com/onceflow/onceflow/problem"
)

// Defaults of the HTTP face's options.
const (
	DefaultMaxStoredResponse = 64 << 10
	DefaultMaxRequestBody    = 1 << 20
)

// Option configures [Middleware].
type Option func(*options)

type options struct {
	maxStored    int64
	maxRequest   int64
	keyOptional  bool
	anonymous    bool
	problem      problem.Writer
	quotaRecords int
	quotaBytes   int64
	quotaWindow  time.Duration
	quota        *quota // built from the three above once every option is applied
	// replayedNames are WithReplayedHeaders'; replayed is the allow-list
	// built from them.
	replayedNames []string
	replayed      replayed
	// unidentified logs the first request refused for want of a client
	// identity.
	unidentified sync.Once
}

// WithMaxStoredResponse bounds the body of a stored response, in bytes. A
// larger response is served but not stored: its key is released, so a
// retry runs the handler again, and the outcome is not_stored. Default
// [DefaultMaxStoredResponse] (64 KiB, far below the request body's
// default: a stored answer is replayed and kept for the TTL); n <= 0 means
// the default.
func WithMaxStoredResponse(n int64) Option {
	return func(o *options) {
		if n > 0 {
			o.maxStored = n
		}
	}
}

// WithMaxRequestBody bounds the request body the face reads to fingerprint
// it, in bytes; a larger one gets 413 without reaching the handler. Set it
// to what the handler accepts. Default [DefaultMaxRequestBody] (1 MiB); n <= 0
// means the default.
func WithMaxRequestBody(n int64) Option {
	return func(o *options) {
		if n > 0 {
			o.maxRequest = n
		}
	}
}

// WithReplayedHeaders names response headers of the handler's own that
// are stored with its answer and replayed, such as a correlation id.
// Without it a replay sends only Content-Type, Content-Language,
// Content-Location and Location: every other header (an Authorization, a
// session, a trace id) reaches the first answer only. A header that may
// never be replayed (hop-by-hop, Set-Cookie, Authorization, Date,
// Content-Length) makes Middleware panic.
func WithReplayedHeaders(names ...string) Option {
	return func(o *options) { o.replayedNames = append(o.replayedNames, names...) }
}

// WithOptionalKey lets requests without an Idempotency-Key through to the
// handler, unguarded. By default the key is required: 400.
func WithOptionalKey() Option {
	return func(o *options) { o.keyOptional = true }
}

// WithAnonymous lets requests without a client identity (see
// [apikey.ClientFromContext]) through, as one anonymous client: every such caller
// shares one namespace of Idempotency-Keys, so one may be replayed
// another's response, or block it with 409. Use it only where every caller
// is trusted (development, a single-tenant internal API). By default such
// a request gets 403 and reaches no handler and no record.
func WithAnonymous() Option {
	return func(o *options) { o.anonymous = true }
}

// WithProblemWriter sets how error responses are written, so that they
// look like the service's own problems. The writer is given a
// [*problem.Error]; to keep the statuses and headers of the one table, it
// builds on [problem.Prepare]. Default (and with nil): [problem.Write],
// problem+json of type "about:blank" with the status text as title.
func WithProblemWriter(p problem.Writer) Option {
	return func(o *options) {
		if p != nil {
			o.problem = p
		}
	}
}

// WithClientQuota limits how many records each client creates: up to
// records at once, and records per window after that (a token bucket of
// golang.org/x/time/rate, one per client). A request with a new key beyond
// it gets 429 with a Retry-After of the wait (outcome rate_limited), and
// its handler does not run. A request that creates no record (a replay, a
// 409, a 422) takes nothing from the allowance, but a client with nothing
// left gets 429 for every request until the wait is over, before the store
// is asked, so that a flood costs the store nothing. The client is
// [apikey.ClientFromContext]'s: without authentication every caller shares the
// one anonymous client's allowance. The face remembers the allowances of
// the 10,000 clients seen most recently.
//
// The quota bounds how fast one client can fill the store: without it a
// flood of requests with fresh keys (even invalid ones, since every
// answer below 500 is stored) fills a store at network speed. Default
// [DefaultClientRecords] per [DefaultClientWindow] (1000 a second);
// records <= 0 turns the quota off; window <= 0 means the default window.
func WithClientQuota(records int, window time.Duration) Option {
	return func(o *options) {
		o.quotaRecords, o.quotaWindow = records, window
	}
}

// WithClientBytes limits how many bytes of answers each client stores: up
// to bytes at once, and bytes per window of [WithClientQuota] after that
// (a token bucket beside the records'). An answer is counted, with its
// record key, once stored; a client that has stored more than its
// allowance gets 429 with Retry-After for new keys until it is paid back.
// The records' quota bounds how many records a client makes; this bounds
// what they weigh, so that a client whose every answer is as large as
// WithMaxStoredResponse allows fills a store no faster than one of small
// answers. Default [DefaultClientBytes] (1 MiB a second); bytes <= 0 turns
// it off. It applies with the records' quota off, too.
func WithClientBytes(bytes int64) Option {
	return func(o *options) { o.quotaBytes = bytes }
}
