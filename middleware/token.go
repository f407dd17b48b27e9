package middleware

import (
	"context"

	"github.com/onceflow/onceflow/stores"
)

type tokenKey struct{}

// TokenFromContext returns the fencing token of the claim under which the
// function passed to Execute runs. It is absent when the function runs
// without a record (fail-open). Code that writes elsewhere can use the token
// to fence its own writes.
func TokenFromContext(ctx context.Context) (stores.Token, bool) {
	t, ok := ctx.Value(tokenKey{}).(stores.Token)
	return t, ok
}

func withToken(ctx context.Context, t stores.Token) context.Context {
	return context.WithValue(ctx, tokenKey{}, t)
}

// tokenCtx is withToken's context as a value, so that it can live inside a
// larger allocation (see ownedRun) instead of costing one of its own.
type tokenCtx struct {
	context.Context
	token stores.Token
}

func (c *tokenCtx) Value(key any) any {
	if key == (tokenKey{}) {
		return c.token
	}
	return c.Context.Value(key)
}

func (c *tokenCtx) String() string { return "onceflow.token" }
