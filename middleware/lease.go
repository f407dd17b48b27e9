package middleware

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/onceflow/onceflow/stores"
)

// finishTimeout bounds Complete and Release in lease mode, which run on a
// context that the caller's cancellation does not reach: a handler
// cancelled after its effect must still record it, and a failed one must
// still release its claim.
const finishTimeout = 5 * time.Second

// executeLeased is Execute in lease mode: claim the key with a lease,
// answer a claim that was not acquired, run fn under the lease while a
// heartbeat extends it, then complete the record or release the claim.
func (r *Receiver) executeLeased(ctx context.Context, c *call, fn handlerFunc) (Result, error) {
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
	if claim.Status != stores.Acquired {
		return r.resolve(c, &claim, waited)
	}

	// The key is ours until the lease ends: fn runs with the token in its
	// context, which ends with cause stores.ErrLeaseLost if the heartbeat
	// finds the lease lost.
	run := &leasedRun{fnCtx: fnContext{parent: ctx, token: claim.Token}}
	defer run.fnCtx.release()
	run.hb = heartbeat{r: r, fnCtx: &run.fnCtx, scope: c.scope, k: c.k, token: claim.Token,
		leaseEnd: claimed.Add(r.cfg.Lease)}
	run.hb.start(claimed)
	defer func() {
		if c.unwound == "" {
			return // fn returned
		}
		// fn panicked: free the key, then let the panic go on to the
		// transport's recoverer.
		run.hb.stop()
		if r.release(ctx, &run.finishCtx, c, claim.Token, &run.fnCtx) {
			c.unwound = OutcomeLeaseLost
		}
	}()
	v, err := c.run(&run.fnCtx, fn, OutcomeFailed)
	run.hb.stop()

	if err != nil {
		if r.release(ctx, &run.finishCtx, c, claim.Token, &run.fnCtx) {
			return Result{Outcome: OutcomeLeaseLost}, fmt.Errorf("key %q: %w: %w", shown(c.k), stores.ErrLeaseLost, err)
		}
		return Result{Outcome: failedOutcome(err)}, err
	}
	return r.complete(ctx, &run.finishCtx, c, claim.Token, v)
}

// leasedRun is the state of one acquired key in lease mode, in one
// allocation: fn's context, the heartbeat and the context of the store call
// that finishes the record.
type leasedRun struct {
	fnCtx     fnContext
	hb        heartbeat
	finishCtx detachedCtx
}

// complete records fn's result v for c's key. The effect has happened, so
// the record is written even if ctx was cancelled: on fc, made from ctx
// with its values but not its cancellation, for up to finishTimeout. When
// the record cannot be written, the result is returned all the same, with
// the outcome lease_lost or store_error and a nil error (see Execute).
func (r *Receiver) complete(ctx context.Context, fc *detachedCtx, c *call, token stores.Token, v []byte) (Result, error) {
	fc.init(ctx, finishTimeout)
	err := r.store.Complete(fc, c.k, token, v, r.cfg.TTL)
	fc.stop()
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
		// The record stays in progress until its lease ends.
		r.cfg.Logger.ErrorContext(ctx, "completing key failed: effect may be repeated",
			"scope", c.scope, "key", shown(c.k), "err", err)
		return Result{Outcome: OutcomeStoreError, Value: v}, nil
	}
}

// release frees c's key after fn failed or panicked (or its result is not
// to be stored), so that a redelivery may claim it at once: on fc, made
// from ctx as for complete. It reports whether the claim was lost: the
// heartbeat fenced fnCtx off, or the store says the token no longer owns
// the key. A release that fails otherwise leaves the claim until its lease
// ends.
func (r *Receiver) release(ctx context.Context, fc *detachedCtx, c *call, token stores.Token, fnCtx context.Context) (lost bool) {
	fc.init(ctx, finishTimeout)
	err := r.store.Release(fc, c.k, token)
	fc.stop()
	switch {
	case errors.Is(context.Cause(fnCtx), stores.ErrLeaseLost) || errors.Is(err, stores.ErrLeaseLost):
		r.cfg.Logger.WarnContext(ctx, "lease lost while processing",
			"scope", c.scope, "key", shown(c.k), "lease", r.cfg.Lease)
		return true
	case err != nil:
		r.cfg.Logger.WarnContext(ctx, "releasing key failed",
			"scope", c.scope, "key", shown(c.k), "lease", r.cfg.Lease, "err", err)
	}
	return false
}
