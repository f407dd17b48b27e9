package bench_test

import (
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/tools/internal/bench"
)

// The claims contender counts its store's claim batches: on both batching
// stores, 16 callers fill batches of more than one claim and at most the
// 16 they can have in flight.
func TestStoreClaimsKeepsTheBatchFill(t *testing.T) {
	testenv.Integration(t)
	testenv.Postgres(t)
	testenv.Redis(t)
	env, err := bench.OpenEnv(t.Context(), bench.EnvConfig{RedisAddr: testenv.RedisAddr(), PostgresURL: testenv.PostgresURL()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Close(); err != nil {
			t.Error(err)
		}
	})
	for _, b := range []bench.Backend{bench.Redis, bench.Postgres} {
		fill := &bench.BatchFill{}
		if _, err := bench.StoreClaims(env, b, 16, 300*time.Millisecond, fill)(t.Context()); err != nil {
			t.Fatal(err)
		}
		if mean, ok := fill.Median(); !ok || mean <= 1 || mean > 16 {
			t.Errorf("%s: claim batches carried %v (%v) on average, want between 1 and 16", b, mean, ok)
		}
	}
}
