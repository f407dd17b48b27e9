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

// executeInTx is Execute in transaction mode: begin a unit of work, claim
// the key through the unit's store, answer a claim that was not acquired,
// run fn in the unit, then complete the record and commit. A concurrent
// duplicate's claim waits on the first one's in the database and then sees
// the completed record, so the Wait policy does not apply; and no heartbeat
// runs: the open unit holds the key for as long as it lasts.
//
// An error or panic rolls everything back, the claim included, so no
// Release is needed. Unlike lease mode, a failure to complete or commit is
// returned as an error: the effects rolled back with the record, so a
// redelivery must run fn again.
func (r *Receiver) executeInTx(ctx context.Context, c *call, fn handlerFunc) (Result, error) {
	u, err := r.cfg.Transactor.Begin(ctx)
	if err != nil {
		return r.claimFailed(ctx, c, fmt.Errorf("beginning a transaction for key %q: %w", shown(c.k), err), fn)
	}
	defer r.rollback(ctx, c, u) // a no-op once committed
	store := r.observed(u.Store())
	claim, err := store.Claim(ctx, c.k, c.fingerprint, r.cfg.Lease)
	if err != nil {
		r.rollback(ctx, c, u) // before fn may run unguarded
		return r.claimFailed(ctx, c, err, fn)
	}
	if claim.Status != stores.Acquired {
		return r.resolve(c, &claim, false)
	}

	v, err := c.run(withToken(u.Context(), claim.Token), fn, OutcomeFailed)
	switch {
	case errors.Is(err, errNotStored):
		// The result has reached its client, so its effects must stand:
		// the claim is released inside the unit and the unit committed
		// without a record.
		if rerr := store.Release(u.Context(), c.k, claim.Token); rerr != nil {
			return Result{Outcome: OutcomeStoreError}, rerr // it names the key
		}
		if cerr := u.Commit(ctx); cerr != nil {
			return Result{Outcome: OutcomeStoreError}, fmt.Errorf("committing key %q: %w", shown(c.k), cerr)
		}
		return Result{Outcome: OutcomeNotStored}, err
	case err != nil:
		return Result{Outcome: failedOutcome(err)}, err
	}
	if err := store.Complete(u.Context(), c.k, claim.Token, v, r.cfg.TTL); err != nil {
		return Result{Outcome: OutcomeStoreError}, err // it names the key
	}
	if err := u.Commit(ctx); err != nil {
		return Result{Outcome: OutcomeStoreError}, fmt.Errorf("committing key %q: %w", shown(c.k), err)
	}
	return Result{Outcome: OutcomeProcessed, Value: v}, nil
}

// rollback ends u even when ctx is cancelled. After a commit or a previous
// rollback it does nothing.
func (r *Receiver) rollback(ctx context.Context, c *call, u Unit) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	if err := u.Rollback(ctx); err != nil {
		r.cfg.Logger.WarnContext(ctx, "rolling back failed", "scope", c.scope, "key", shown(c.k), "err", err)
	}
}
