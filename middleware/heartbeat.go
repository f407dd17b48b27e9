package middleware

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/onceflow/onceflow/stores"
)

// heartbeat extends the lease on k every Lease/3 until stop is called or ctx
// ends. It cancels ctx with cause [stores.ErrLeaseLost] when the store says
// the token no longer owns the key, or when store errors have kept it from
// extending until the lease, as last known (leaseEnd), has run out. Call
// stop exactly once; it waits for the heartbeat to finish.
func (r *Receiver) heartbeat(ctx context.Context, cancel context.CancelCauseFunc, scope, k string,
	token stores.Token, leaseEnd time.Time) (stop func()) {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		ticker := time.NewTicker(r.cfg.Lease / 3)
		defer ticker.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
			start := time.Now()
			err := r.extend(ctx, k, token)
			switch {
			case err == nil:
				leaseEnd = start.Add(r.cfg.Lease)
			case ctx.Err() != nil:
				return
			case errors.Is(err, stores.ErrLeaseLost):
				cancel(err) // it names the operation and the key
				return
			case !time.Now().Before(leaseEnd):
				cancel(fmt.Errorf("%w: %w", stores.ErrLeaseLost, err))
				return
			default:
				r.cfg.Logger.WarnContext(ctx, "extending lease failed, will retry",
					"scope", scope, "key", shown(k), "err", err)
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}
