package middleware

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/onceflow/onceflow/stores"
)

// Receiver is the transport-agnostic idempotent receiver. It is safe for
// concurrent use; one Receiver serves every handler of a process.
type Receiver struct {
	cfg    Config
	beats  *beats       // the lease-mode heartbeats in flight
	tracer trace.Tracer // nil: no spans (Config.TracerProvider unset)
	timing bool         // store calls are timed: Config.Observer is set
}

// NewReceiver fills the defaults of cfg (see [Config]) and validates it.
func NewReceiver(cfg Config) (*Receiver, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("invalid receiver config: %w", err)
	}
	_, nop := cfg.Observer.(nopObserver)
	r := &Receiver{cfg: cfg, beats: newBeats(cfg.Lease / 3), timing: !nop}
	if cfg.TracerProvider != nil {
		r.tracer = cfg.TracerProvider.Tracer(tracerName)
	}
	return r, nil
}

// Lease returns the effective lease, after defaults.
func (r *Receiver) Lease() time.Duration { return r.cfg.Lease }

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
//     (A face whose result must not be stored releases the same way; that
//     outcome is not_stored.)
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
// With Config.Transactor set (transaction mode, see executeInTx), the claim,
// fn's writes and the completed record share one unit of work instead.
//
// In lease mode, when fn succeeded but its result could not be recorded
// (lease_lost or store_error), Execute still returns the result with a nil
// error: the effect has happened, and delivering its result is better than
// having the transport redeliver into a second execution. It logs a
// warning. In transaction mode the effect rolled back with the record, so
// the error is returned and Result.Value is nil.
//
// With Config.TracerProvider set, each call is one span, "receiver" and the
// scope, with attributes onceflow.scope, onceflow.key and onceflow.outcome
// (an error, if any, recorded on it), and each store call within it a span
// of its own, "store claim" and so on, with its onceflow.outcome. Each call
// is also one debug line, "receiver decision", with the scope, the key and
// the outcome.
func (r *Receiver) Execute(ctx context.Context, scope, key string, fingerprint []byte,
	fn func(ctx context.Context) ([]byte, error)) (Result, error) {
	if scope == "" || key == "" {
		return Result{}, fmt.Errorf("%w: scope %q and key %q must not be empty", ErrNoKey, scope, key)
	}
	k := RecordKey(scope, key)
	ctx = withEffectScope(ctx, k)
	if debug := r.cfg.Logger.Enabled(ctx, slog.LevelDebug); r.tracer != nil || debug {
		return r.executeObserved(ctx, scope, k, debug, fingerprint, fn)
	}
	return r.execute(ctx, scope, k, fingerprint, fn)
}

// execute is Execute once the record key k is known.
func (r *Receiver) execute(ctx context.Context, scope, k string, fingerprint []byte,
	fn func(ctx context.Context) ([]byte, error)) (Result, error) {
	if r.cfg.Transactor != nil {
		return r.executeInTx(ctx, scope, k, fingerprint, fn)
	}
	started := time.Now()
	claim, err := r.claim(ctx, r.cfg.Store, k, fingerprint)
	if err != nil {
		return r.claimFailed(ctx, scope, k, err, fn)
	}
	if claim.Status == stores.Acquired {
		return r.runOwned(ctx, scope, k, claim.Token, started, fn)
	}
	return r.resolve(ctx, scope, k, fingerprint, &claim, true, fn)
}

// resolve decides a successful claim that was not acquired, the same way in
// both modes; the caller runs fn on an acquired one. mayWait says whether
// the Wait policy may still apply to an in-progress key.
//
// The claim is passed by pointer, and an acquired one never comes here,
// because every frame on the way to fn counts: the transports run each
// message in a goroutine of its own, whose stack starts small and is copied
// each time it has to grow.
func (r *Receiver) resolve(ctx context.Context, scope, k string, fingerprint []byte, claim *stores.Claim,
	mayWait bool, fn func(ctx context.Context) ([]byte, error)) (Result, error) {
	switch claim.Status {
	case stores.Completed:
		return r.completed(scope, k, fingerprint, claim.Record)
	case stores.InProgress:
		if !sameFingerprint(claim.Record.Fingerprint, fingerprint) {
			return r.mismatch(scope, k)
		}
		if mayWait && r.cfg.OnInProgress == Wait {
			return r.wait(ctx, scope, k, fingerprint, fn)
		}
		return r.outcome(scope, OutcomeInProgress, nil), fmt.Errorf("key %q: %w", shown(k), ErrInProgress)
	}
	return Result{}, fmt.Errorf("claiming key %q: unknown claim status %v", shown(k), claim.Status)
}

// completed answers a key whose record is completed.
func (r *Receiver) completed(scope, k string, fingerprint []byte, rec stores.Record) (Result, error) {
	if !sameFingerprint(rec.Fingerprint, fingerprint) {
		return r.mismatch(scope, k)
	}
	return r.outcome(scope, OutcomeDuplicate, rec.Result), nil
}

func (r *Receiver) mismatch(scope, k string) (Result, error) {
	return r.outcome(scope, OutcomeFingerprintMismatch, nil), fmt.Errorf("key %q: %w", shown(k), ErrFingerprintMismatch)
}

// claimFailed applies the store-error policy to a failed Claim.
func (r *Receiver) claimFailed(ctx context.Context, scope, k string, err error,
	fn func(ctx context.Context) ([]byte, error)) (Result, error) {
	if ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return Result{}, err
	}
	if errors.Is(err, stores.ErrFull) {
		return r.outcome(scope, OutcomeStoreFull, nil), err
	}
	if !errors.Is(err, stores.ErrUnavailable) || r.cfg.OnStoreError == FailClosed {
		// The store's error names the operation and the key already.
		return r.outcome(scope, OutcomeStoreError, nil), err
	}
	r.cfg.Logger.WarnContext(ctx, "processing without idempotency guard",
		"scope", scope, "key", shown(k), "policy", FailOpen, "err", err)
	r.cfg.Observer.Outcome(scope, OutcomeFailOpen)
	v, ferr := fn(ctx)
	return Result{Outcome: OutcomeFailOpen, Value: v}, ferr
}

// outcome reports o to the observer and returns it as a Result.
func (r *Receiver) outcome(scope string, o Outcome, v []byte) Result {
	r.cfg.Observer.Outcome(scope, o)
	return Result{Outcome: o, Value: v}
}
