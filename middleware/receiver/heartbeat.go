package receiver

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/onceflow/onceflow/stores"
)

// heartbeat extends the lease on k about every Lease/3 until stop is called
// or fn's context ends. It cancels that context with cause
// [stores.ErrLeaseLost] when the store says the token no longer owns the
// key, or when store errors have kept it from extending until the lease,
// as last known (leaseEnd), has run out.
//
// It is neither a goroutine nor a timer of its own: the Receiver's beats
// keep the heartbeats in flight and start an extension only when one is
// due, so a handler that finishes within Lease/3, as most do, costs linking
// it into a list and unlinking it.
type heartbeat struct {
	r     *Receiver
	fnCtx *fnContext
	scope string
	k     string
	token stores.Token

	mu       sync.Mutex // held by a running extension, so stop waits for it
	stopped  bool
	leaseEnd time.Time

	// Guarded by the beats' mutex.
	due        time.Time  // when the next extension is due
	beating    bool       // an extension is running
	prev, next *heartbeat // neighbours in the beats' list
}

// start registers the heartbeat with r's beats; the lease was taken at
// started, so the first extension is due a period after it. Call stop
// exactly once afterwards.
func (h *heartbeat) start(started time.Time) { h.r.beats.add(h, started) }

// stop ends the heartbeat. It waits for an extension in flight, so that
// none reaches the store after stop returns.
func (h *heartbeat) stop() {
	h.r.beats.remove(h)
	h.mu.Lock()
	h.stopped = true
	h.mu.Unlock()
}

// beat extends the lease once, unless the heartbeat is over.
func (h *heartbeat) beat() {
	defer h.r.beats.done(h)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped || h.fnCtx.Err() != nil {
		return
	}
	start := time.Now()
	_, err := h.r.store.Extend(h.fnCtx, h.k, h.token, h.r.cfg.Lease)
	switch {
	case err == nil:
		h.leaseEnd = start.Add(h.r.cfg.Lease)
		h.r.cfg.Observer.LeaseExtension(h.scope, ExtensionExtended)
	case h.fnCtx.Err() != nil:
	case errors.Is(err, stores.ErrLeaseLost):
		h.r.cfg.Observer.LeaseExtension(h.scope, ExtensionLost)
		h.fnCtx.cancel(err) // it names the operation and the key
	case !time.Now().Before(h.leaseEnd):
		h.r.cfg.Observer.LeaseExtension(h.scope, ExtensionFailed)
		h.fnCtx.cancel(fmt.Errorf("%w: %w", stores.ErrLeaseLost, err))
	default:
		h.r.cfg.Observer.LeaseExtension(h.scope, ExtensionFailed)
		h.r.cfg.Logger.WarnContext(h.fnCtx, "extending lease failed, will retry",
			"scope", h.scope, "key", shown(h.k), "err", err)
	}
}

// beats drives the heartbeats of one Receiver: one timer, armed while any
// is in flight, checks every period/beatChecks which are due and starts
// their extensions, each in its own goroutine. An extension is due period
// after the start or the previous extension, and starts at most
// period/beatChecks late.
type beats struct {
	period time.Duration

	mu    sync.Mutex
	first *heartbeat  // the heartbeats in flight, linked by prev and next
	timer *time.Timer // created on first use
	armed bool
}

const beatChecks = 4

func newBeats(period time.Duration) *beats {
	return &beats{period: period}
}

func (b *beats) add(h *heartbeat, started time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	h.due = started.Add(b.period)
	h.prev, h.next = nil, b.first
	if b.first != nil {
		b.first.prev = h
	}
	b.first = h
	if b.armed {
		return
	}
	b.armed = true
	if b.timer == nil {
		b.timer = time.AfterFunc(b.period/beatChecks, b.check)
	} else {
		b.timer.Reset(b.period / beatChecks)
	}
}

func (b *beats) remove(h *heartbeat) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case h.prev != nil:
		h.prev.next = h.next
	case b.first == h:
		b.first = h.next
	}
	if h.next != nil {
		h.next.prev = h.prev
	}
	h.prev, h.next = nil, nil
}

// done marks h's extension as finished.
func (b *beats) done(h *heartbeat) {
	b.mu.Lock()
	defer b.mu.Unlock()
	h.beating = false
}

// check starts the extensions that are due and re-arms the timer while
// heartbeats are in flight.
func (b *beats) check() {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	for h := b.first; h != nil; h = h.next {
		if h.beating || now.Before(h.due) {
			continue
		}
		h.beating = true
		h.due = now.Add(b.period)
		go h.beat()
	}
	if b.first == nil {
		b.armed = false
		return
	}
	b.timer.Reset(b.period / beatChecks)
}
