package postgres_test

import (
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/migrations"
	"github.com/onceflow/onceflow/stores"
	"github.com/onceflow/onceflow/stores/postgres"
	"github.com/onceflow/onceflow/stores/storetest"
)

// BenchmarkStore runs the store benchmarks with batching off and at the
// service's default batch size, so the two read side by side.
func BenchmarkStore(b *testing.B) {
	for _, batch := range []int{1, postgres.DefaultBatchSize} {
		b.Run("batch="+strconv.Itoa(batch), func(b *testing.B) { benchStore(b, batch) })
	}
}

func benchStore(b *testing.B, batch int) {
	storetest.Bench(b, func(b *testing.B) stores.Store {
		// A pool with a connection per caller, so the benchmark measures
		// the store rather than waiting for connections.
		u := testenv.PostgresSchema(b)
		if err := migrations.UpURL(b.Context(), u); err != nil {
			b.Fatalf("migrating: %v", err)
		}
		cfg, err := pgxpool.ParseConfig(u)
		if err != nil {
			b.Fatal(err)
		}
		cfg.MaxConns = int32(max(storetest.BenchCallers[len(storetest.BenchCallers)-1], 4))
		pool, err := pgxpool.NewWithConfig(b.Context(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(pool.Close)
		s, err := postgres.New(pool, postgres.Config{BatchSize: batch})
		if err != nil {
			b.Fatal(err)
		}
		return s
	})
}
