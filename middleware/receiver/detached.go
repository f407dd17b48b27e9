package receiver

import (
	"context"
	"sync"
	"time"
)

// detachedCtx is the context of the store calls that must happen whatever
// became of the caller's context (Complete after the effect, Release after
// a failure): it keeps the caller's values but not its cancellation, and
// ends at its deadline. It is context.WithTimeout(context.WithoutCancel(
// parent), d), built lazily: its deadline is set d after the store first
// asks for it, Done or Err, and the standard context exists only once a
// store asks for Done, so a store that only checks Err (the memory store)
// reads the clock once and costs none of the rest. From then on every
// method answers from the standard context, which a context derived from
// this one, or context.AfterFunc (as pgx watches a query's context),
// registers with directly, as with any standard context: no goroutine.
type detachedCtx struct {
	parent context.Context
	d      time.Duration

	mu       sync.Mutex
	deadline time.Time          // zero until first asked for
	values   context.Context    // parent without its cancellation, made on first use
	std      context.Context    // the standard context, made on the first Done
	cancel   context.CancelFunc // std's
}

var _ context.Context = (*detachedCtx)(nil)

// init makes c a fresh context with parent's values, ending d after the
// store call starts with it.
func (c *detachedCtx) init(parent context.Context, d time.Duration) {
	c.parent = parent
	c.d = d
}

func (c *detachedCtx) Deadline() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.startLocked()
	return c.deadline, true
}

func (c *detachedCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.std == nil {
		c.startLocked()
		c.std, c.cancel = context.WithDeadline(c.valuesLocked(), c.deadline)
	}
	return c.std.Done()
}

func (c *detachedCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.std != nil {
		return c.std.Err()
	}
	c.startLocked()
	if time.Now().Before(c.deadline) {
		return nil
	}
	return context.DeadlineExceeded
}

func (c *detachedCtx) Value(key any) any {
	c.mu.Lock()
	ctx := c.std
	if ctx == nil {
		ctx = c.valuesLocked()
	}
	c.mu.Unlock()
	return ctx.Value(key)
}

// startLocked sets the deadline, d from now, unless it is set. c.mu must be
// held.
func (c *detachedCtx) startLocked() {
	if c.deadline.IsZero() {
		c.deadline = time.Now().Add(c.d)
	}
}

// valuesLocked returns the parent without its cancellation, making it on
// first use. c.mu must be held.
func (c *detachedCtx) valuesLocked() context.Context {
	if c.values == nil {
		c.values = context.WithoutCancel(c.parent)
	}
	return c.values
}

// stop releases the standard context's timer, if Done made one; call it
// once the store call has returned.
func (c *detachedCtx) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cancel != nil {
		c.cancel()
	}
}

func (c *detachedCtx) String() string { return "onceflow.detached" }
