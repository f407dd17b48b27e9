package receiver

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/onceflow/onceflow/stores"
)

// fnContext is the context fn runs in under a claim: the caller's context
// with the fencing token as a value, cancelled with a cause when the lease
// is lost. It behaves as context.WithCancelCause(withToken(parent, token))
// but builds that context lazily, on the first call to Done or cancel: a
// handler that never waits on its context (and whose lease holds) costs no
// cancel context, no Done channel and no registration with its parent.
// Until then Err and Value answer from the parent, as the derived context
// would: it can only be cancelled through its parent, by cancel, or by
// release, after which it reads as cancelled, as the derived context would
// be once fn has returned.
type fnContext struct {
	parent context.Context
	token  stores.Token

	mu          sync.Mutex // serialises building inner
	inner       atomic.Pointer[context.Context]
	innerCancel context.CancelCauseFunc // set with inner, under mu
	released    atomic.Bool
}

var _ context.Context = (*fnContext)(nil)

// derived returns the cancel context, building it on first use.
func (c *fnContext) derived() context.Context {
	if p := c.inner.Load(); p != nil {
		return *p
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.inner.Load(); p != nil {
		return *p
	}
	ctx, cancel := context.WithCancelCause(c.parent)
	c.innerCancel = cancel
	c.inner.Store(&ctx)
	if c.released.Load() {
		cancel(nil)
	}
	return ctx
}

func (c *fnContext) Deadline() (time.Time, bool) { return c.parent.Deadline() }

func (c *fnContext) Done() <-chan struct{} { return c.derived().Done() }

func (c *fnContext) Err() error {
	if p := c.inner.Load(); p != nil {
		return (*p).Err()
	}
	if c.released.Load() {
		return c.derived().Err()
	}
	return c.parent.Err()
}

// Value answers the token, then defers to the derived context once built
// (so that context.Cause sees its cause), else to the parent.
func (c *fnContext) Value(key any) any {
	if key == (tokenKey{}) {
		return c.token
	}
	if p := c.inner.Load(); p != nil {
		return (*p).Value(key)
	}
	return c.parent.Value(key)
}

// cancel fences fn off: its context ends with cause.
func (c *fnContext) cancel(cause error) {
	c.derived()
	c.mu.Lock()
	cancel := c.innerCancel
	c.mu.Unlock()
	cancel(cause)
}

// release frees the derived context, if one was built, once fn returned.
func (c *fnContext) release() {
	c.mu.Lock()
	c.released.Store(true)
	cancel := c.innerCancel
	c.mu.Unlock()
	if cancel != nil {
		cancel(nil)
	}
}

func (c *fnContext) String() string { return "onceflow.fn" }
