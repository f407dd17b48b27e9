package receiver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sethvargo/go-retry"

	"github.com/onceflow/onceflow/stores"
)

// The state machine of Execute, for both modes: claim the key, resolve a
// claim that was not acquired, run the function, then complete the record
// or release the claim. Lease mode holds the claim with a lease that a
// heartbeat extends; transaction mode holds it in a unit of work that
// commits or rolls back with the function's writes.

// finishTimeout bounds Complete and Release in lease mode, and Rollback in
// transaction mode, which run on a context that the caller's cancellation
// does not reach: a handler cancelled after its effect must still record
// it, and a failed one must still release its claim.
const finishTimeout = 5 * time.Second

// Backoff of a Complete asked again while the store is unavailable: from
// completeRetryBase, doubling, capped at completeRetryCap, with jitter,
// within finishTimeout.
const (
	completeRetryBase = 50 * time.Millisecond
	completeRetryCap  = time.Second
)

// execute runs c through the state machine of the receiver's mode.
func (r *Receiver) execute(ctx context.Context, c *call, fn handlerFunc) (Result, error) {
	if r.cfg.Transactor != nil {
		return r.executeInTx(ctx, c, fn)
	}
	return r.executeLeased(ctx, c, fn)
}

// executeLeased is Execute in lease mode: claim the key with a lease,
// answer a claim that was not acquired, run fn under the lease while a
// heartbeat extends it, then complete the record or release the claim.
func (r *Receiver) executeLeased(ctx context.Context, c *call, fn handlerFunc) (Result, error) {
	// Claim.
	claimed := time.Now()
	claim, err := r.store.Claim(ctx, c.k, c.fingerprint, r.cfg.Lease)
	waited := false
	if err == nil && r.cfg.OnInProgress == Wait && heldAlike(&claim, c) {
		claimed, claim, err = r.waitClaim(ctx, c)
		waited = true
	}
	if err != nil {
		return r.claimFailed(ctx, c, err, fn)
	}

	// Resolve.
	if claim.Status != stores.Acquired {
		return r.resolve(c, &claim, waited)
	}

	// Run.
	run := r.startRun(ctx, c, claim.Token, claimed)
	defer run.fnCtx.release()
	returned := false
	defer func() {
		if returned {
			return
		}
		// fn panicked (or called runtime.Goexit): free the key, tell how
		// the call ended, and let the panic go on to the transport's
		// recoverer.
		run.hb.stop()
		o := OutcomeFailed
		if r.release(ctx, c, run) {
			o = OutcomeLeaseLost
		}
		r.report(ctx, c, o, nil)
	}()
	v, err := fn(&run.fnCtx)
	returned = true
	run.hb.stop()

	// Release a failure, or complete a success.
	if err != nil {
		if r.release(ctx, c, run) {
			return Result{Outcome: OutcomeLeaseLost}, fmt.Errorf("key %q: %w: %w", shown(c.k), stores.ErrLeaseLost, err)
		}
		return Result{Outcome: failedOutcome(err)}, err
	}
	return r.complete(ctx, c, run, v)
}

// leasedRun is one acquired key in lease mode, in one allocation: its
// token, fn's context, the heartbeat and the context of the store call
// that finishes the record.
type leasedRun struct {
	token     stores.Token
	fnCtx     fnContext
	hb        heartbeat
	finishCtx detachedCtx
}

// startRun holds c's key under token, which was acquired at claimed: fn's
// context carries the token and ends with cause stores.ErrLeaseLost should
// the heartbeat, started now, find the lease lost. Release fn's context
// and stop the heartbeat once fn returns.
func (r *Receiver) startRun(ctx context.Context, c *call, token stores.Token, claimed time.Time) *leasedRun {
	run := &leasedRun{token: token, fnCtx: fnContext{parent: ctx, token: token}}
	run.hb = heartbeat{r: r, fnCtx: &run.fnCtx, scope: c.scope, k: c.k, token: token,
		leaseEnd: claimed.Add(r.cfg.Lease)}
	run.hb.start(claimed)
	return run
}

// complete records fn's result v for c's key. The effect has happened, so
// the record is written even if ctx was cancelled: on a context with ctx's
// values but not its cancellation, for up to finishTimeout, asked again
// with backoff while the store is unavailable. Complete is idempotent for
// one token and one result, so asking again after a write that landed
// (its answer lost, or too few replicas acknowledged it) confirms it. When
// the record cannot be written, the result is returned all the same, with
// the outcome lease_lost or store_error and a nil error (see Execute).
func (r *Receiver) complete(ctx context.Context, c *call, run *leasedRun, v []byte) (Result, error) {
	run.finishCtx.init(ctx, finishTimeout)
	err := r.store.Complete(&run.finishCtx, c.k, run.token, v, r.cfg.TTL)
	if errors.Is(err, stores.ErrUnavailable) {
		err = r.completeAgain(&run.finishCtx, c, run.token, v)
	}
	run.finishCtx.stop()
	switch {
	case err == nil:
		return Result{Outcome: OutcomeProcessed, Value: v}, nil
	case errors.Is(err, stores.ErrLeaseLost):
		// Another owner may have taken the key over and may run it again.
		// Failing instead would only add a redelivery and a further
		// execution.
		r.cfg.Logger.WarnContext(ctx, "lease lost before completing: effect may be repeated",
			"scope", c.scope, "key", shown(c.k), "lease", r.cfg.Lease, "err", err)
		return Result{Outcome: OutcomeLeaseLost, Value: v}, nil
	default:
		// The record stays in progress until its lease ends; or it was
		// written but too few replicas acknowledged it, and a failover
		// may lose it.
		r.cfg.Logger.ErrorContext(ctx, "completing key failed: effect may be repeated",
			"scope", c.scope, "key", shown(c.k), "err", err)
		return Result{Outcome: OutcomeStoreError, Value: v}, nil
	}
}

// completeAgain asks the store to complete c's key again, with backoff,
// while it answers unavailable and ctx lasts, and returns its last answer.
func (r *Receiver) completeAgain(ctx context.Context, c *call, token stores.Token, v []byte) error {
	backoff := retry.WithJitterPercent(20, retry.WithCappedDuration(completeRetryCap, retry.NewExponential(completeRetryBase)))
	var err error
	_ = retry.Do(ctx, backoff, func(ctx context.Context) error {
		err = r.store.Complete(ctx, c.k, token, v, r.cfg.TTL)
		if errors.Is(err, stores.ErrUnavailable) {
			return retry.RetryableError(err)
		}
		return err
	})
	return err
}

// release frees c's key after fn failed or panicked (or its result is not
// to be stored), so that a redelivery may claim it at once; on a context
// made as complete's. It reports whether the claim was lost: the heartbeat
// fenced fn's context off, or the store says the token no longer owns the
// key. A release that fails otherwise leaves the claim until its lease
// ends.
func (r *Receiver) release(ctx context.Context, c *call, run *leasedRun) (lost bool) {
	run.finishCtx.init(ctx, finishTimeout)
	err := r.store.Release(&run.finishCtx, c.k, run.token)
	run.finishCtx.stop()
	switch {
	case errors.Is(context.Cause(&run.fnCtx), stores.ErrLeaseLost) || errors.Is(err, stores.ErrLeaseLost):
		r.cfg.Logger.WarnContext(ctx, "lease lost while processing",
			"scope", c.scope, "key", shown(c.k), "lease", r.cfg.Lease)
		return true
	case err != nil:
		r.cfg.Logger.WarnContext(ctx, "releasing key failed",
			"scope", c.scope, "key", shown(c.k), "lease", r.cfg.Lease, "err", err)
	}
	return false
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
	// Claim, within a unit of work.
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

	// Resolve.
	if claim.Status != stores.Acquired {
		return r.resolve(c, &claim, false)
	}

	// Run.
	returned := false
	defer func() {
		if !returned {
			// fn panicked: the deferred rollback frees the key.
			r.report(ctx, c, OutcomeFailed, nil)
		}
	}()
	v, err := fn(withToken(u.Context(), claim.Token))
	returned = true

	// Roll back a failure, or complete a success; then commit.
	if err != nil {
		if o := failedOutcome(err); o != OutcomeNotStored {
			return Result{Outcome: o}, err // the deferred rollback frees the key
		}
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

// The decisions both modes make the same way.

// resolve answers a claim that was not acquired: completed (duplicate or
// fingerprint mismatch) or held by another owner (in progress, or
// mismatch). waited says the Wait policy already waited for the owner.
func (r *Receiver) resolve(c *call, claim *stores.Claim, waited bool) (Result, error) {
	switch {
	case claim.Status != stores.Completed && claim.Status != stores.InProgress:
		return Result{}, fmt.Errorf("claiming key %q: unknown claim status %v", shown(c.k), claim.Status)
	case !sameFingerprint(claim.Record.Fingerprint, c.fingerprint):
		return Result{Outcome: OutcomeFingerprintMismatch}, fmt.Errorf("key %q: %w", shown(c.k), ErrFingerprintMismatch)
	case claim.Status == stores.Completed:
		return Result{Outcome: OutcomeDuplicate, Value: claim.Record.Result}, nil
	case waited:
		return Result{Outcome: OutcomeInProgress}, fmt.Errorf("key %q after waiting %v: %w", shown(c.k), r.cfg.Wait, ErrInProgress)
	}
	return Result{Outcome: OutcomeInProgress}, fmt.Errorf("key %q: %w", shown(c.k), ErrInProgress)
}

// claimFailed applies the store-error policy to a claim that failed: a
// cancelled context is returned as is, a full store is refused, and an
// unavailable one fails closed or, under FailOpen, runs fn without a
// record.
func (r *Receiver) claimFailed(ctx context.Context, c *call, err error, fn handlerFunc) (Result, error) {
	if ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return Result{}, err
	}
	if errors.Is(err, stores.ErrFull) {
		return Result{Outcome: OutcomeStoreFull}, err
	}
	if !errors.Is(err, stores.ErrUnavailable) || r.cfg.OnStoreError == FailClosed {
		// The store's error names the operation and the key already.
		return Result{Outcome: OutcomeStoreError}, err
	}
	r.cfg.Logger.WarnContext(ctx, "processing without idempotency guard",
		"scope", c.scope, "key", shown(c.k), "policy", FailOpen, "err", err)
	returned := false
	defer func() {
		if !returned {
			r.report(ctx, c, OutcomeFailOpen, nil) // fn panicked
		}
	}()
	v, ferr := fn(ctx)
	returned = true
	return Result{Outcome: OutcomeFailOpen, Value: v}, ferr
}

// failedOutcome is the outcome of fn's error: failed, or the one a face's
// [OutcomeError] names (not_stored, rate_limited).
func failedOutcome(err error) Outcome {
	if oe, ok := errors.AsType[*OutcomeError](err); ok {
		switch oe.Outcome {
		case OutcomeNotStored, OutcomeRateLimited:
			return oe.Outcome
		}
	}
	return OutcomeFailed
}
