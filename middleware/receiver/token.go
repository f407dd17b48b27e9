package receiver

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
