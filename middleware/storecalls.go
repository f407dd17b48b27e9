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

// The store calls below time every call for the Observer, when one is set,
// and trace it (storeSpan) when tracing is on.

// claim claims k in s: the receiver's store, or in transaction mode the
// store bound to the unit of work.
func (r *Receiver) claim(ctx context.Context, s stores.Store, k string, fp []byte) (stores.Claim, error) {
	defer r.timed("claim", r.clock())
	ctx, span := r.storeSpan(ctx, "store claim")
	c, err := s.Claim(ctx, k, fp, r.cfg.Lease)
	endStoreSpan(span, c.Status.String(), err)
	return c, err
}

// complete records v for k in s, on ctx as it is: in transaction mode the
// unit's context, whose cancellation rolls everything back anyway.
func (r *Receiver) complete(ctx context.Context, s stores.Store, k string, t stores.Token, v []byte) error {
	defer r.timed("complete", r.clock())
	ctx, span := r.storeSpan(ctx, "store complete")
	err := s.Complete(ctx, k, t, v, r.cfg.TTL)
	endStoreSpan(span, "ok", err)
	return err
}

// finish records v for k in lease mode, where the effect has happened and
// must be recorded even if the caller was cancelled: on dc, made from ctx.
func (r *Receiver) finish(ctx context.Context, dc *detachedCtx, k string, t stores.Token, v []byte) error {
	dc.init(ctx, finishTimeout)
	defer dc.stop()
	return r.complete(dc, r.cfg.Store, k, t, v)
}

// release frees k after a failure, on dc, made from ctx, for the same
// reason.
func (r *Receiver) release(ctx context.Context, dc *detachedCtx, k string, t stores.Token) error {
	dc.init(ctx, finishTimeout)
	defer dc.stop()
	defer r.timed("release", r.clock())
	ctx, span := r.storeSpan(dc, "store release")
	err := r.cfg.Store.Release(ctx, k, t)
	endStoreSpan(span, "ok", err)
	return err
}

func (r *Receiver) extend(ctx context.Context, k string, t stores.Token) error {
	defer r.timed("extend", r.clock())
	ctx, span := r.storeSpan(ctx, "store extend")
	_, err := r.cfg.Store.Extend(ctx, k, t, r.cfg.Lease)
	endStoreSpan(span, "ok", err)
	return err
}

// clock starts timing a store call: the time now, or zero when no Observer
// is set, as reading the clock is a cost of its own on the message path.
func (r *Receiver) clock() time.Time {
	if !r.timing {
		return time.Time{}
	}
	return time.Now()
}

// timed reports the store call op that started at start, a time from clock.
func (r *Receiver) timed(op string, start time.Time) {
	if r.timing {
		r.cfg.Observer.StoreLatency(op, time.Since(start))
	}
}
