package middleware

import (
	"context"
	"sync"
	"time"
)

// detachedCtx is the context of the store calls that must happen whatever
// became of the caller's context (Complete after the effect, Release after
// a failure): it keeps the caller's values but not its cancellation, and
// ends at its deadline. It is what
// context.WithTimeout(context.WithoutCancel(parent), d) gives, built
// lazily: its deadline is set d after the store first asks for it, Done or
// Err, its Done channel and timer exist only once a store asks for Done, and
// its view of the caller's values once a store asks for a value, so a store
// that only checks Err (the memory store) reads the clock once and costs
// none of the rest.
type detachedCtx struct {
	parent context.Context
	d      time.Duration

	mu       sync.Mutex
	deadline time.Time       // zero until first asked for
	values   context.Context // parent without its cancellation, made on first use
	done     chan struct{}
	timer    *time.Timer
	err      error
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

// startLocked sets the deadline, d from now, unless it is set. c.mu must be
// held. It reports whether it set it: a deadline just set has not passed.
func (c *detachedCtx) startLocked() bool {
	if !c.deadline.IsZero() {
		return false
	}
	c.deadline = time.Now().Add(c.d)
	return true
}

func (c *detachedCtx) Value(key any) any {
	c.mu.Lock()
	if c.values == nil {
		c.values = context.WithoutCancel(c.parent)
	}
	values := c.values
	c.mu.Unlock()
	return values.Value(key)
}

func (c *detachedCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		if !c.startLocked() && c.expiredLocked() {
			close(c.done)
		} else {
			c.timer = time.AfterFunc(time.Until(c.deadline), c.expire)
		}
	}
	return c.done
}

func (c *detachedCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.startLocked() && c.err == nil && c.expiredLocked() && c.done != nil {
		close(c.done)
	}
	return c.err
}

// expiredLocked sets err once the deadline has passed and reports whether
// it has. c.mu must be held.
func (c *detachedCtx) expiredLocked() bool {
	if c.err == nil && !time.Now().Before(c.deadline) {
		c.err = context.DeadlineExceeded
	}
	return c.err != nil
}

// expire is the timer's end of the deadline.
func (c *detachedCtx) expire() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = context.DeadlineExceeded
		close(c.done)
	}
}

// stop releases the timer, if Done armed one; call it once the store call
// has returned.
func (c *detachedCtx) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.timer != nil {
		c.timer.Stop()
	}
}

func (c *detachedCtx) String() string { return "onceflow.detached" }
