package idempotencykey

import (
	"errors"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"

	"github.com/onceflow/onceflow/middleware/receiver"
	"github.com/onceflow/onceflow/problem"
	"github.com/onceflow/onceflow/stores"
)

// Defaults of [WithClientQuota] and [WithClientBytes]: each client may
// create 1000 records at once, and 1000 a second after that, and store
// 1 MiB of answers at once, and 1 MiB a second after that.
const (
	DefaultClientRecords = 1000
	DefaultClientWindow  = time.Second
	DefaultClientBytes   = 1 << 20
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

// quota is each client's allowance of new records and of stored bytes:
// token buckets (golang.org/x/time/rate) of burst records and bytes,
// refilled at their limits a second. It is safe for concurrent use.
type quota struct {
	records, bytes struct {
		limit rate.Limit
		burst int
	}
	clients *lru.Cache[string, *allowance]
}

// allowance is one client's: its records' bucket and its bytes' (nil
// where the quota has no such limit).
type allowance struct {
	records, bytes *rate.Limiter
}

// newQuota returns the quota of records and bytes per window, or nil (no
// quota) when neither is positive. A limit that is not positive is off.
func newQuota(records int, bytes int64, window time.Duration) *quota {
	if records <= 0 && bytes <= 0 {
		return nil
	}
	if window <= 0 {
		window = DefaultClientWindow
	}
	clients, _ := lru.New[string, *allowance](quotaClients) // fails only for a size that is not positive
	q := &quota{clients: clients}
	q.records.limit, q.records.burst = rate.Limit(float64(max(records, 0))/window.Seconds()), records
	q.bytes.limit, q.bytes.burst = rate.Limit(float64(max(bytes, 0))/window.Seconds()), int(bytes)
	return q
}

// of returns client's allowance.
func (q *quota) of(client string) *allowance {
	if a, ok := q.clients.Get(client); ok {
		return a
	}
	a := new(allowance)
	if q.records.burst > 0 {
		a.records = rate.NewLimiter(q.records.limit, q.records.burst)
	}
	if q.bytes.burst > 0 {
		a.bytes = rate.NewLimiter(q.bytes.limit, q.bytes.burst)
	}
	if prev, ok, _ := q.clients.PeekOrAdd(client, a); ok {
		return prev
	}
	return a
}

// wait returns how long until a allows a record: zero if it does now. A
// record needs one of the records' tokens and one of the bytes' (a client
// that has stored more than its bytes waits until it owes nothing).
func (a *allowance) wait() time.Duration {
	var d time.Duration
	for _, l := range [...]*rate.Limiter{a.records, a.bytes} {
		if l == nil {
			continue
		}
		if tokens := l.Tokens(); tokens < 1 {
			d = max(d, time.Duration((1-tokens)/float64(l.Limit())*float64(time.Second)))
		}
	}
	return d
}

// take takes a record from a, reporting whether it had one.
func (a *allowance) take() bool { return a.records == nil || a.records.Allow() }

// stored takes n bytes from a: a stored answer is counted when it is
// known, after its handler ran, so the bucket may go into debt (at most
// its burst), which the next records wait out.
func (a *allowance) stored(n int) {
	if a.bytes != nil {
		a.bytes.ReserveN(time.Now(), min(n, a.bytes.Burst()))
	}
}

// overQuota is the answer to a client over its quota: 429 with Retry-After
// the wait.
func overQuota(wait time.Duration) error {
	return &problem.Error{Kind: problem.TooManyRequests, RetryAfter: wait,
		Detail: "this client has made too many new Idempotency-Key requests: retry after the time in Retry-After"}
}

// storeFull is the answer to a request whose record the store has no room
// for: 429 when it is the client's own share that is full (others are
// still served), 503 when it is the store; either with a Retry-After of
// when the store says room comes back.
func storeFull(err error) error {
	full, _ := errors.AsType[*stores.FullError](err)
	if full != nil && full.Owner {
		return &problem.Error{Kind: problem.TooManyRequests, RetryAfter: full.RoomIn,
			Detail: "this client holds its share of the idempotency store: retry after the time in Retry-After"}
	}
	e := &problem.Error{Kind: problem.Unavailable, Detail: "the idempotency store is full: retry the request later"}
	if full != nil {
		e.RetryAfter = full.RoomIn
	}
	return e
}
