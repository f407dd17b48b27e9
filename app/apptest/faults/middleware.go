package faults

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/domain"
	"github.com/onceflow/onceflow/middleware/receiver"
)

// Middleware is the switches of c around a handler: each attempt sleeps
// for c.Delay (giving up with the message's context), fails with
// probability c.FailBefore without running the handler, or runs it and,
// when it succeeded, fails with probability c.FailAfter, dropping the
// messages it produced. Installed inside the idempotent receiver, a
// failure after the handler is what a crash between a side effect and its
// record looks like: in transaction mode the effect rolls back with the
// claim, in lease mode it stays and the redelivery runs it again.
func Middleware(c Config) message.HandlerMiddleware {
	return func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			if c.NoEffectKeys {
				msg.SetContext(receiver.WithoutEffectKeys(msg.Context()))
			}
			if err := sleep(msg.Context(), c.Delay); err != nil {
				return nil, err
			}
			if c.FailBefore > 0 && rand.Float64() < c.FailBefore {
				return nil, ErrInjected
			}
			out, err := h(msg)
			if err != nil {
				return nil, err
			}
			if c.FailAfter > 0 && rand.Float64() < c.FailAfter {
				return nil, ErrInjected
			}
			return out, nil
		}
	}
}

// sleep waits for d, or returns the cause of ctx's end.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Wrap returns d with every route's handler behind Middleware(c), inside
// the receiver; d itself when every switch is off.
func Wrap(d domain.Domain, c Config) domain.Domain {
	if !c.Enabled() {
		return d
	}
	return WrapRoutes(d, Middleware(c))
}

// WrapRoutes returns d with every route's handler behind m, inside the
// receiver.
func WrapRoutes(d domain.Domain, m message.HandlerMiddleware) domain.Domain {
	open := d.Open
	d.Open = func(ctx context.Context, deps domain.Deps) (*domain.Parts, error) {
		parts, err := open(ctx, deps)
		if err != nil {
			return nil, err
		}
		routes := make(domain.Routes, len(parts.Routes))
		for i, r := range parts.Routes {
			if r.Handle != nil {
				r.Handle = m(r.Handle)
			} else {
				consume := r.Consume
				h := m(func(msg *message.Message) ([]*message.Message, error) { return nil, consume(msg) })
				r.Consume = func(msg *message.Message) error { _, err := h(msg); return err }
			}
			routes[i] = r
		}
		wrapped := *parts
		wrapped.Routes = routes
		return &wrapped, nil
	}
	return d
}
