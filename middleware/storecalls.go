package middleware

import (
	"context"
	"time"

	"github.com/onceflow/onceflow/stores"
)

// finishTimeout bounds Complete and Release, which run on a context that the
// caller's cancellation does not reach: a handler cancelled after its effect
// must still record it, and a failed one must still release its claim.
const finishTimeout = 5 * time.Second

// The store calls below time every call for the Observer.

func (r *Receiver) claim(ctx context.Context, k string, fp []byte) (stores.Claim, error) {
	defer r.timed("claim", time.Now())
	return r.cfg.Store.Claim(ctx, k, fp, r.cfg.Lease)
}

func (r *Receiver) complete(ctx context.Context, k string, t stores.Token, v []byte) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	defer r.timed("complete", time.Now())
	return r.cfg.Store.Complete(ctx, k, t, v, r.cfg.TTL)
}

func (r *Receiver) release(ctx context.Context, k string, t stores.Token) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	defer r.timed("release", time.Now())
	return r.cfg.Store.Release(ctx, k, t)
}

func (r *Receiver) extend(ctx context.Context, k string, t stores.Token) error {
	defer r.timed("extend", time.Now())
	_, err := r.cfg.Store.Extend(ctx, k, t, r.cfg.Lease)
	return err
}

func (r *Receiver) timed(op string, start time.Time) {
	r.cfg.Observer.StoreLatency(op, time.Since(start))
}
