package bench

import (
	"context"
	"runtime"
)

// RouterAllocs measures heap allocations per message of a router round
// (see [RouterRound]) with the middlewares mw returns: the process's
// allocation count over the round, set-up of the round's messages
// included, divided by n. Contenders differ only in their middleware, so
// the difference of two of them is what a middleware adds per message.
func RouterAllocs(n, payload int, mw Middleware) func(ctx context.Context) (float64, error) {
	return func(ctx context.Context) (float64, error) {
		mws, free, err := mw()
		if err != nil {
			return 0, err
		}
		defer free()
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		if _, err := routerRound(ctx, n, payload, mws); err != nil {
			return 0, err
		}
		runtime.ReadMemStats(&after)
		return float64(after.Mallocs-before.Mallocs) / float64(n), nil
	}
}
