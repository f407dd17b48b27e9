package middleware

import (
	"context"
	"errors"
	"fmt"

	"github.com/onceflow/onceflow/stores"
)

// Transactor opens units of work for transaction mode (Config.Transactor):
// the claim, everything the function writes through the unit's context and
// the completed record then commit, or roll back, together. Package
// exactlyonce has the PostgreSQL one.
type Transactor interface {
	// Begin starts a unit of work within ctx. It may join a transaction
	// that ctx already carries (as a savepoint, say) rather than open one.
	Begin(ctx context.Context) (Unit, error)
}

// Unit is one open unit of work, used by one goroutine.
type Unit interface {
	// Context returns the context to run the function in: the Begin
	// context, carrying the unit so that code writing to the same database
	// joins it.
	Context() context.Context
	// Store is the idempotency store bound to the unit: its claim holds the
	// key (a concurrent claim waits) until Commit or Rollback.
	Store() stores.Store
	// Commit makes every write of the unit durable at once.
	Commit(ctx context.Context) error
	// Rollback discards every write of the unit. It is a no-op after
	// Commit or a previous Rollback.
	Rollback(ctx context.Context) error
}

// executeInTx is Execute in transaction mode. The claim is made through the
// unit's store, so a concurrent duplicate waits on it in the database and
// then sees the completed record; the same decisions as in lease mode
// (resolve) follow. When the key is acquired, fn runs in the unit's context
// and its result is completed and committed in the unit. An error or panic
// rolls everything back, the claim included, so no Release is needed, and
// no heartbeat runs: the open unit holds the key for as long as it lasts.
// The Wait policy does not apply: the database already does the waiting.
//
// Unlike lease mode, a failure to complete or commit is returned as an
// error: the effects rolled back with the record, so a redelivery must run
// fn again.
func (r *Receiver) executeInTx(ctx context.Context, scope, k string, fingerprint []byte,
	fn func(ctx context.Context) ([]byte, error)) (Result, error) {
	u, err := r.cfg.Transactor.Begin(ctx)
	if err != nil {
		return r.claimFailed(ctx, scope, k, fmt.Errorf("beginning a transaction for key %q: %w", shown(k), err), fn)
	}
	finished := false
	defer func() {
		if !finished {
			// fn panicked: undo everything, then let the panic go on.
			r.rollback(ctx, scope, k, u)
			r.cfg.Observer.Outcome(scope, OutcomeFailed)
		}
	}()
	store := u.Store()
	claim, err := r.claim(ctx, store, k, fingerprint)
	if err != nil {
		finished = true
		r.rollback(ctx, scope, k, u)
		return r.claimFailed(ctx, scope, k, err, fn)
	}
	var res Result
	if claim.Status == stores.Acquired {
		res, err = r.runInUnit(ctx, scope, k, u, claim.Token, fn)
	} else {
		res, err = r.resolve(ctx, scope, k, fingerprint, &claim, false, fn)
	}
	finished = true
	r.rollback(ctx, scope, k, u) // a no-op once committed
	return res, err
}

// runInUnit runs fn in the unit under token, then completes and commits.
// A result too large to store (errNotStored) has already reached its
// client, so its effects must stand: the claim is released inside the unit
// and the unit committed without a record.
func (r *Receiver) runInUnit(ctx context.Context, scope, k string, u Unit, token stores.Token,
	fn func(ctx context.Context) ([]byte, error)) (Result, error) {
	v, err := fn(withToken(u.Context(), token))
	switch {
	case errors.Is(err, errNotStored):
		if rerr := u.Store().Release(u.Context(), k, token); rerr != nil {
			return r.outcome(scope, OutcomeStoreError, nil), rerr // it names the key
		}
		if cerr := u.Commit(ctx); cerr != nil {
			return r.outcome(scope, OutcomeStoreError, nil), fmt.Errorf("committing key %q: %w", shown(k), cerr)
		}
		return r.outcome(scope, OutcomeNotStored, nil), err
	case err != nil:
		return r.outcome(scope, failedOutcome(err), nil), err
	}
	if err := r.complete(u.Context(), u.Store(), k, token, v); err != nil {
		return r.outcome(scope, OutcomeStoreError, nil), err // it names the key
	}
	if err := u.Commit(ctx); err != nil {
		return r.outcome(scope, OutcomeStoreError, nil), fmt.Errorf("committing key %q: %w", shown(k), err)
	}
	return r.outcome(scope, OutcomeProcessed, v), nil
}

// rollback ends u even when ctx is cancelled.
func (r *Receiver) rollback(ctx context.Context, scope, k string, u Unit) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	if err := u.Rollback(ctx); err != nil {
		r.cfg.Logger.WarnContext(ctx, "rolling back failed", "scope", scope, "key", shown(k), "err", err)
	}
}
