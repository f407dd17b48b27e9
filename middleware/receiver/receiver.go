package receiver

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/onceflow/onceflow/stores"
)

// Receiver is the transport-agnostic idempotent receiver. It is safe for
// concurrent use; one Receiver serves every handler of a process.
type Receiver struct {
	cfg Config
	// store is Config.Store, timed for the Observer and traced when either
	// is set (see observedStore): the state machine calls it plainly.
	store  stores.Store
	tracer trace.Tracer // nil: no spans (Config.TracerProvider unset)
	timing bool         // store calls are timed: Config.Observer is set
	beats  *beats       // the lease-mode heartbeats in flight
}

// New fills the defaults of cfg (see [Config]) and validates it.
func New(cfg Config) (*Receiver, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("invalid receiver config: %w", err)
	}
	_, nop := cfg.Observer.(nopObserver)
	r := &Receiver{cfg: cfg, timing: !nop, beats: newBeats(cfg.Lease / 3)}
	if cfg.TracerProvider != nil {
		r.tracer = cfg.TracerProvider.Tracer(tracerName)
	}
	if cfg.Transactor == nil {
		r.store = r.observed(cfg.Store)
	}
	return r, nil
}

// Lease returns the effective lease, after defaults.
func (r *Receiver) Lease() time.Duration { return r.cfg.Lease }

// Config returns the effective configuration, its defaults filled: a face
// logs through its Logger and tells its Observer what the face alone
// knows (a replay, a request refused before any claim).
func (r *Receiver) Config() Config { return r.cfg }

// Execute runs fn at most once per scope and key, as far as the store allows,
// and reports what happened. The record's key is [RecordKey] of scope and
// key, so the same idempotency key is processed once per scope (a handler
// name, or "http"). Neither may be empty; scopes should not contain ":".
//
// fn's context carries the run's effect keys (see [EffectKey]) whatever
// happens below, fail-open included.
//
//   - The key is free: fn runs with the fencing token in its context (see
//     [TokenFromContext]) while a heartbeat extends the lease every Lease/3
//     (at most Lease/12 late). If the lease is lost, fn's context is
//     cancelled with cause [stores.ErrLeaseLost]. On success the result is
//     completed for TTL and returned (processed). On error or panic the
//     claim is released at once, even if ctx was cancelled, and fn's error
//     is returned (or the panic goes on), so a redelivery runs fn again.
//     (A face whose function ends in an [OutcomeError] releases the same
//     way; the outcome is the error's: not_stored, rate_limited.)
//   - The key is completed: with the same fingerprint fn does not run and
//     the stored result is returned (duplicate); with another fingerprint an
//     error wrapping [ErrFingerprintMismatch] is returned.
//   - Another owner holds the key: see [InProgressPolicy].
//   - The store is unavailable: see [StoreErrorPolicy]. A cancelled ctx is
//     returned as is, without an outcome.
//   - The store is full ([stores.ErrFull]): fn does not run and the error
//     is returned (store_full), whatever the store-error policy: running
//     unguarded would let whoever fills the store turn the guard off.
//
// With Config.Transactor set (transaction mode, see [Transactor]), the
// claim, fn's writes and the completed record share one unit of work
// instead.
//
// In lease mode, when fn succeeded but its result could not be recorded
// (lease_lost or store_error), Execute still returns the result with a nil
// error: the effect has happened, and delivering its result is better than
// having the transport redeliver into a second execution. It logs a
// warning. In transaction mode the effect rolled back with the record, so
// the error is returned and Result.Value is nil.
//
// Every call that ends in an outcome, a panic of fn included, reports it
// to Config.Observer. With Config.TracerProvider set, each call is one
// span, "receiver" and the scope, with attributes onceflow.scope,
// onceflow.key and onceflow.outcome (an error, if any, recorded on it), and
// each store call within it a span of its own, "store claim" and so on,
// with its onceflow.outcome. Each call is also one debug line, "receiver
// decision", with the scope, the key and the outcome.
func (r *Receiver) Execute(ctx context.Context, scope, key string, fingerprint []byte,
	fn func(ctx context.Context) ([]byte, error)) (Result, error) {
	if scope == "" || key == "" {
		return Result{}, fmt.Errorf("%w: scope %q and key %q must not be empty", ErrNoKey, scope, key)
	}
	c := call{scope: scope, k: RecordKey(scope, key), fingerprint: fingerprint}
	return r.observe(withEffectScope(ctx, c.k), &c, fn)
}

// handlerFunc is the function Execute runs at most once.
type handlerFunc = func(ctx context.Context) ([]byte, error)

// call is one Execute call as the state machine sees it. Its function is
// passed alongside, never held in it: the strings of a call reach the
// logger and the Observer, which makes everything a call points to escape
// to the heap, and with the function so would everything the function
// captures, on every message.
type call struct {
	scope       string
	k           string // the record key
	fingerprint []byte
	span        trace.Span // the call's, when tracing is on
}
