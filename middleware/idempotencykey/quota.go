package idempotencykey

import (
	"errors"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"

	"github.com/onceflow/onceflow/middleware/receiver"
	"github.com/onceflow/onceflow/problem"
)

// Defaults of [WithClientQuota]: each client may create 1000 records at
// once, and 1000 a second after that.
const (
	DefaultClientRecords = 1000
	DefaultClientWindow  = time.Second
)

// quotaClients is how many clients' allowances a face remembers, the most
// recently seen. A client forgotten starts again with a full allowance,
// which gives nothing to a caller that could present that many identities:
// it had that many allowances already.
const quotaClients = 10_000

// errOverQuota, the error of the function the face passes to Execute,
// says that the client may create no record now: Execute releases the
// claim and reports the outcome rate_limited.
var errOverQuota error = &receiver.OutcomeError{Outcome: receiver.OutcomeRateLimited,
	Err: errors.New("client over its record quota")}

// quota is each client's allowance of new records: a token bucket
// (golang.org/x/time/rate) of burst records, refilled at limit a second.
// It is safe for concurrent use.
type quota struct {
	limit   rate.Limit
	burst   int
	clients *lru.Cache[string, *rate.Limiter]
}

// newQuota returns the quota of records per window, or nil (no quota) when
// records is not positive.
func newQuota(records int, window time.Duration) *quota {
	if records <= 0 {
		return nil
	}
	if window <= 0 {
		window = DefaultClientWindow
	}
	clients, _ := lru.New[string, *rate.Limiter](quotaClients) // fails only for a size that is not positive
	return &quota{limit: rate.Limit(float64(records) / window.Seconds()), burst: records, clients: clients}
}

// of returns client's allowance.
func (q *quota) of(client string) *rate.Limiter {
	if l, ok := q.clients.Get(client); ok {
		return l
	}
	l := rate.NewLimiter(q.limit, q.burst)
	if prev, ok, _ := q.clients.PeekOrAdd(client, l); ok {
		return prev
	}
	return l
}

// wait returns how long until l allows a record: zero if it does now.
func (q *quota) wait(l *rate.Limiter) time.Duration {
	tokens := l.Tokens()
	if tokens >= 1 {
		return 0
	}
	return time.Duration((1 - tokens) / float64(q.limit) * float64(time.Second))
}

// overQuota is the answer to a client over its quota: 429 with Retry-After
// the wait.
func overQuota(wait time.Duration) error {
	return &problem.Error{Kind: problem.TooManyRequests, RetryAfter: wait,
		Detail: "this client has made too many new Idempotency-Key requests: retry after the time in Retry-After"}
}
