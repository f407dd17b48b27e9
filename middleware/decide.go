package middleware

import (
	"context"
	"errors"
	"fmt"

	"github.com/onceflow/onceflow/stores"
)

// The decisions both modes make the same way once the claim is made.

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
	v, ferr := c.run(ctx, fn, OutcomeFailOpen)
	return Result{Outcome: OutcomeFailOpen, Value: v}, ferr
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
