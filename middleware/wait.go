package middleware

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sethvargo/go-retry"

	"github.com/onceflow/onceflow/stores"
)

// Backoff of the Wait policy's polls: from waitBase, doubling, capped at
// waitCap, with jitter so that waiters do not poll in step.
const (
	waitBase = 10 * time.Millisecond
	waitCap  = 250 * time.Millisecond
)

// errStillInProgress ends the wait when Config.Wait has passed.
var errStillInProgress = errors.New("still in progress")

// wait polls Claim until the key stops being in progress or Config.Wait has
// passed, then acts on what the key has become.
func (r *Receiver) wait(ctx context.Context, scope, k string, fingerprint []byte,
	fn func(ctx context.Context) ([]byte, error)) (Result, error) {
	backoff := retry.WithMaxDuration(r.cfg.Wait,
		retry.WithJitterPercent(20, retry.WithCappedDuration(waitCap, retry.NewExponential(waitBase))))
	var started time.Time
	claim, err := retry.DoValue(ctx, backoff, func(ctx context.Context) (stores.Claim, error) {
		started = time.Now()
		c, err := r.claim(ctx, r.cfg.Store, k, fingerprint)
		if err == nil && c.Status == stores.InProgress && sameFingerprint(c.Record.Fingerprint, fingerprint) {
			return c, retry.RetryableError(errStillInProgress)
		}
		return c, err
	})
	switch {
	case errors.Is(err, errStillInProgress):
		return r.outcome(scope, OutcomeInProgress, nil), fmt.Errorf("key %q after waiting %v: %w", shown(k), r.cfg.Wait, ErrInProgress)
	case err != nil:
		return r.claimFailed(ctx, scope, k, err, fn)
	}
	if claim.Status == stores.Acquired {
		return r.runOwned(ctx, scope, k, claim.Token, started, fn)
	}
	return r.resolve(ctx, scope, k, fingerprint, &claim, false, fn)
}
