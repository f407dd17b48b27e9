package postgres_test

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/migrations"
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
			return mustNew(t, unreachablePool(t), postgres.Config{})
		},
	})
}

// newStore returns a store on a freshly migrated schema of its own, and the
// pool it runs on.
func newStore(t *testing.T) (*postgres.Store, *pgxpool.Pool) {
	t.Helper()
	url := testenv.PostgresSchema(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := migrations.UpURL(ctx, url); err != nil {
		t.Fatalf("migrating: %v", err)
	}
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatalf("opening pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return mustNew(t, pool, postgres.Config{}), pool
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
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	pool, err := pgxpool.New(context.Background(),
		fmt.Sprintf("postgres://postgres@%s/test?sslmode=disable&connect_timeout=1", addr))
	if err != nil {
		t.Fatalf("opening pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}
