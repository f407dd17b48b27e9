package middleware

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/onceflow/onceflow/stores"
)

// ownedRun is the state of one acquired key in lease mode, in one
// allocation: fn's context, the heartbeat and the context of the store call
// that finishes the record.
type ownedRun struct {
	fnCtx    fnContext
	hb       heartbeat
	finishCx detachedCtx
}

// runOwned runs fn under the claim token, which was acquired at started,
// and finishes the record: Complete on success, Release on error or panic.
func (r *Receiver) runOwned(ctx context.Context, scope, k string, token stores.Token, started time.Time,
	fn func(ctx context.Context) ([]byte, error)) (Result, error) {
	run := &ownedRun{fnCtx: fnContext{parent: ctx, token: token}}
	fnCtx := &run.fnCtx
	defer fnCtx.release()
	run.hb = heartbeat{r: r, ctx: fnCtx, fnCtx: fnCtx, scope: scope, k: k, token: token,
		leaseEnd: started.Add(r.cfg.Lease)}
	run.hb.start(started)
	stopHeartbeat := run.hb.stop

	finished := false
	defer func() {
		if finished {
			return
		}
		// fn panicked: free the key, then let the panic go on to the
		// transport's recoverer.
		stopHeartbeat()
		r.releaseAfterFailure(ctx, &run.finishCx, scope, k, token, leaseLost(fnCtx), OutcomeFailed)
	}()
	v, err := fn(fnCtx)
	finished = true
	stopHeartbeat()

	if err != nil {
		o := r.releaseAfterFailure(ctx, &run.finishCx, scope, k, token, leaseLost(fnCtx), failedOutcome(err))
		if o == OutcomeLeaseLost {
			return Result{Outcome: o}, fmt.Errorf("key %q: %w: %w", shown(k), stores.ErrLeaseLost, err)
		}
		return Result{Outcome: o}, err
	}

	switch cerr := r.finish(ctx, &run.finishCx, k, token, v); {
	case cerr == nil:
		return r.outcome(scope, OutcomeProcessed, v), nil
	case errors.Is(cerr, stores.ErrLeaseLost):
		// The effect has happened but another owner may have taken the key
		// over and may run it again. Returning the result lets the caller
		// deliver it (publish outputs, answer the client); failing instead
		// would only add a redelivery and a further execution.
		r.cfg.Logger.WarnContext(ctx, "lease lost before completing: effect may be repeated",
			"scope", scope, "key", shown(k), "lease", r.cfg.Lease, "err", cerr)
		return r.outcome(scope, OutcomeLeaseLost, v), nil
	default:
		// Same reasoning: the effect has happened, the record stays in
		// progress until its lease ends.
		r.cfg.Logger.ErrorContext(ctx, "completing key failed: effect may be repeated",
			"scope", scope, "key", shown(k), "err", cerr)
		return r.outcome(scope, OutcomeStoreError, v), nil
	}
}

// releaseAfterFailure frees the key after fn failed (or its result is not to
// be stored) and reports the outcome: failed (or not_stored), or lease_lost
// when the claim was no longer ours.
func (r *Receiver) releaseAfterFailure(ctx context.Context, dc *detachedCtx, scope, k string, token stores.Token,
	lost bool, failed Outcome) Outcome {
	err := r.release(ctx, dc, k, token)
	switch {
	case lost || errors.Is(err, stores.ErrLeaseLost):
		r.cfg.Logger.WarnContext(ctx, "lease lost while processing",
			"scope", scope, "key", shown(k), "lease", r.cfg.Lease)
		r.cfg.Observer.Outcome(scope, OutcomeLeaseLost)
		return OutcomeLeaseLost
	case err != nil:
		// The claim stays until its lease ends; a retry sees in_progress
		// until then.
		r.cfg.Logger.WarnContext(ctx, "releasing key failed",
			"scope", scope, "key", shown(k), "lease", r.cfg.Lease, "err", err)
	}
	r.cfg.Observer.Outcome(scope, failed)
	return failed
}

// leaseLost reports whether the heartbeat fenced off fn's context.
func leaseLost(fnCtx context.Context) bool {
	return errors.Is(context.Cause(fnCtx), stores.ErrLeaseLost)
}

// failedOutcome is the outcome of fn's error: failed, or what a face's own
// error says (not_stored, rate_limited).
func failedOutcome(err error) Outcome {
	switch {
	case errors.Is(err, errNotStored):
		return OutcomeNotStored
	case errors.Is(err, errOverQuota):
		return OutcomeRateLimited
	}
	return OutcomeFailed
}
