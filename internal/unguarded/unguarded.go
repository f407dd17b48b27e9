// Package unguarded takes the idempotent receiver out of a whole service,
// for the bench that measures what the receiver costs the service: the
// same service, broker, handlers and ledger, with the receiver and
// without. It is no setting: only code of this module can import it, and
// the service reads it from the context given to app.New, never from its
// environment.
package unguarded

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/onceflow/onceflow/middleware/receiver"
	"github.com/onceflow/onceflow/stores"
)

type key struct{}

// With returns ctx asking app.New for the service without its receiver:
// every delivery runs its handler as it comes, however often it comes.
func With(ctx context.Context) context.Context { return context.WithValue(ctx, key{}, true) }

// On reports whether ctx asks for the service without its receiver.
func On(ctx context.Context) bool {
	on, _ := ctx.Value(key{}).(bool)
	return on
}

// Receiver is the receiver that stands for none: package consume installs
// nothing in its place. Its store is never called.
var Receiver = sync.OnceValue(func() *receiver.Receiver {
	r, err := receiver.New(receiver.Config{Store: never{}})
	if err != nil {
		panic(err) // a store and defaults: New cannot refuse them
	}
	return r
})

// errNever is what the store of Receiver would answer, were it called.
var errNever = errors.New("unguarded: the receiver that stands for none was called")

// never is the store of Receiver.
type never struct{}

func (never) Claim(context.Context, string, []byte, time.Duration) (stores.Claim, error) {
	return stores.Claim{}, errNever
}
func (never) Complete(context.Context, string, stores.Token, []byte, time.Duration) error {
	return errNever
}
func (never) Release(context.Context, string, stores.Token) error { return errNever }
func (never) Extend(context.Context, string, stores.Token, time.Duration) (time.Time, error) {
	return time.Time{}, errNever
}
