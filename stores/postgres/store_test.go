package postgres_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/stores"
	"github.com/onceflow/onceflow/stores/postgres"
	"github.com/onceflow/onceflow/stores/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		New: func(t *testing.T) stores.Store {
			s, _ := newStore(t)
			return s
		},
		Unavailable: func(t *testing.T) stores.Store {
			return mustNew(t, unreachablePool(t), unbatched)
		},
	})
}

// TestConformanceBatched runs the suite on a batching store. One worker
// makes concurrent calls queue, so the suite's concurrent cases run in real
// batches, duplicates of one key included.
func TestConformanceBatched(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		New: func(t *testing.T) stores.Store {
			return mustNew(t, smallPool(t, 2, nil), batched)
		},
		Unavailable: func(t *testing.T) stores.Store {
			return mustNew(t, unreachablePool(t), batched)
		},
	})
}

// batched is the configuration of a batching store under test, unbatched
// that of a store that runs each call alone.
var (
	batched   = postgres.Config{BatchSize: 16, BatchWorkers: 1}
	unbatched = postgres.Config{Unbatched: true}
)

// newStore returns an unbatched store on a freshly migrated schema of its
// own, and the pool it runs on.
func newStore(t *testing.T) (*postgres.Store, *pgxpool.Pool) {
	t.Helper()
	pool := testenv.MigratedPostgres(t)
	return mustNew(t, pool, unbatched), pool
}

func mustNew(t *testing.T, db postgres.Querier, cfg postgres.Config) *postgres.Store {
	t.Helper()
	s, err := postgres.New(db, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

// unreachablePool returns a pool aimed at a loopback port nobody listens on.
// pgxpool connects lazily, so only the store's calls see the failure.
func unreachablePool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	addr := testenv.ClosedAddr(t)
	pool, err := pgxpool.New(context.Background(),
		fmt.Sprintf("postgres://postgres@%s/test?sslmode=disable&connect_timeout=1", addr))
	if err != nil {
		t.Fatalf("opening pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}
