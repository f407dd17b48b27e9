package middleware

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/onceflow/onceflow/stores"
)

// heartbeat extends the lease on k every Lease/3 until stop is called or ctx
// ends. It cancels ctx with cause [stores.ErrLeaseLost] when the store says
// the token no longer owns the key, or when store errors have kept it from
// extending until the lease, as last known (leaseEnd), has run out.
//
// It is a timer, not a goroutine: a handler that finishes within Lease/3,
// as most do, costs one armed and stopped timer, and a goroutine runs only
// when an extension is due.
type heartbeat struct {
	r      *Receiver
	ctx    context.Context
	cancel context.CancelCauseFunc
	scope  string
	k      string
	token  stores.Token
	timer  *time.Timer

	mu       sync.Mutex // held by a running extension, so stop waits for it
	stopped  bool
	leaseEnd time.Time
}

// start arms the first extension. Call stop exactly once afterwards.
func (h *heartbeat) start() {
	h.mu.Lock() // beat reads timer
	defer h.mu.Unlock()
	h.timer = time.AfterFunc(h.r.cfg.Lease/3, h.beat)
}

// stop ends the heartbeat. It waits for an extension in flight, so that
// none reaches the store after stop returns.
func (h *heartbeat) stop() {
	h.mu.Lock()
	h.stopped = true
	h.mu.Unlock()
	h.timer.Stop()
}

// beat extends the lease once and arms the next extension unless the
// heartbeat is over.
func (h *heartbeat) beat() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped || h.ctx.Err() != nil {
		return
	}
	start := time.Now()
	err := h.r.extend(h.ctx, h.k, h.token)
	switch {
	case err == nil:
		h.leaseEnd = start.Add(h.r.cfg.Lease)
	case h.ctx.Err() != nil:
		return
	case errors.Is(err, stores.ErrLeaseLost):
		h.cancel(err) // it names the operation and the key
		return
	case !time.Now().Before(h.leaseEnd):
		h.cancel(fmt.Errorf("%w: %w", stores.ErrLeaseLost, err))
		return
	default:
		h.r.cfg.Logger.WarnContext(h.ctx, "extending lease failed, will retry",
			"scope", h.scope, "key", shown(h.k), "err", err)
	}
	h.timer.Reset(h.r.cfg.Lease / 3)
}
