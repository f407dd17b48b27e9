package receiver

import (
	"context"
	"crypto/subtle"
	"errors"
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

// errStillInProgress ends a poll that found the key still held.
var errStillInProgress = errors.New("still in progress")

// heldAlike reports whether claim finds c's key held by another owner for
// the same payload: what the Wait policy waits out.
func heldAlike(claim *stores.Claim, c *call) bool {
	return claim.Status == stores.InProgress && sameFingerprint(claim.Record.Fingerprint, c.fingerprint)
}

// waitClaim claims c's key again, with backoff, while another owner holds
// it for the same payload, for up to Config.Wait. It returns the last claim
// and when it was made: acquired, completed, held for another payload, or
// still held once Wait has passed.
func (r *Receiver) waitClaim(ctx context.Context, c *call) (time.Time, stores.Claim, error) {
	backoff := retry.WithMaxDuration(r.cfg.Wait,
		retry.WithJitterPercent(20, retry.WithCappedDuration(waitCap, retry.NewExponential(waitBase))))
	var (
		claimed time.Time
		claim   stores.Claim
	)
	err := retry.Do(ctx, backoff, func(ctx context.Context) error {
		claimed = time.Now()
		var err error
		if claim, err = r.store.Claim(ctx, c.k, c.fingerprint, r.cfg.Lease); err != nil {
			return err
		}
		if heldAlike(&claim, c) {
			return retry.RetryableError(errStillInProgress)
		}
		return nil
	})
	if errors.Is(err, errStillInProgress) {
		err = nil
	}
	return claimed, claim, err
}

// sameFingerprint reports whether a and b, a stored fingerprint and a
// message's or request's, are equal, in a time that depends on their
// lengths only: how much of a stored fingerprint a caller's matches is not
// told by how long the answer takes.
func sameFingerprint(a, b []byte) bool {
	return subtle.ConstantTimeCompare(a, b) == 1
}
