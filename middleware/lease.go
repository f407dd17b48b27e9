package middleware

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sethvargo/go-retry"

	"github.com/onceflow/onceflow/stores"
)

// finishTimeout bounds Complete and Release in lease mode, which run on a
// context that the caller's cancellation does not reach: a handler
// cancelled after its effect must still record it, and a failed one must
// still release its claim.
const finishTimeout = 5 * time.Second

// Backoff of a Complete asked again while the store is unavailable: from
// completeRetryBase, doubling, capped at completeRetryCap, with jitter,
// within finishTimeout.
const (
	completeRetryBase = 50 * time.Millisecond
	completeRetryCap  = time.Second
)

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

	run := r.startRun(ctx, c, claim.Token, claimed)
	defer run.fnCtx.release()
	defer func() {
		if c.unwound == "" {
			return // fn returned
		}
		// fn panicked: free the key, then let the panic go on to the
		// transport's recoverer.
		run.hb.stop()
		if r.release(ctx, c, run) {
			c.unwound = OutcomeLeaseLost
		}
	}()
	v, err := c.run(&run.fnCtx, fn, OutcomeFailed)
	run.hb.stop()

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
