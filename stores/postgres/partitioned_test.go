package postgres_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/migrations"
	"github.com/onceflow/onceflow/stores"
	"github.com/onceflow/onceflow/stores/postgres"
	"github.com/onceflow/onceflow/stores/storetest"
)

// partitioned is the configuration of a store on the partitioned layout.
var partitioned = postgres.Config{Layout: postgres.LayoutPartitioned, Unbatched: true}

// TestConformancePartitioned runs the suite on the partitioned layout. The
// cases share one migrated schema, each on a table of its own made like the
// migrated one, which spares a migration per case. Batched claims on this
// layout are checked by TestPartitionedBatchedClaimsKeepOneRowPerKey rather
// than by a second run of the suite, to keep the default suite short.
func TestConformancePartitioned(t *testing.T) {
	t.Parallel()
	pool := partitionedPool(t)
	storetest.Run(t, storetest.Harness{
		New: func(t *testing.T) stores.Store {
			cfg := partitioned
			cfg.Table = partitionedTable(t, pool)
			return mustNew(t, pool, cfg)
		},
		Unavailable: func(t *testing.T) stores.Store {
			return mustNew(t, unreachablePool(t), partitioned)
		},
	})
}

var tableSeq atomic.Int64

// partitionedTable creates, in pool's schema, a records table like the
// migrated idempotency_records (columns, constraints, indexes, partitioning)
// with one partition around now, and returns its name.
func partitionedTable(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	name := fmt.Sprintf("records_%d", tableSeq.Add(1))
	ctx := testContext(t)
	for _, sql := range []string{
		`CREATE TABLE %[1]s (LIKE idempotency_records INCLUDING ALL) PARTITION BY RANGE (created_at)`,
		`CREATE TABLE %[1]s_now PARTITION OF %[1]s FOR VALUES FROM (now() - interval '1 hour') TO (now() + interval '1 day')`,
	} {
		if _, err := pool.Exec(ctx, fmt.Sprintf(sql, name)); err != nil {
			t.Fatalf("creating table %s: %v", name, err)
		}
	}
	return name
}

// partitionedPool returns a pool on a fresh schema migrated with the
// partitioned layout.
func partitionedPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	return testenv.MigratedPostgres(t, migrations.WithLayout(migrations.Partitioned))
}

// newPartitionedStore is newStore on the partitioned layout.
func newPartitionedStore(t *testing.T) (*postgres.Store, *pgxpool.Pool) {
	t.Helper()
	pool := partitionedPool(t)
	return mustNew(t, pool, partitioned), pool
}

// eachLayout runs test as a parallel subtest per layout, with newStore
// making a store of that layout on a fresh schema.
func eachLayout(t *testing.T, test func(t *testing.T, newStore func(*testing.T) (*postgres.Store, *pgxpool.Pool))) {
	t.Helper()
	for name, mk := range map[string]func(*testing.T) (*postgres.Store, *pgxpool.Pool){
		"rows": newStore, "partitioned": newPartitionedStore,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, mk)
		})
	}
}

// TestPartitionedBatchedClaimsKeepOneRowPerKey races batched claims, four
// per key, and checks what no unique index enforces in this layout: one
// owner per key and one row per key. Then a claim in a REPEATABLE READ
// transaction fails and leaves nothing: a snapshot older than the key's
// lock could miss a committed record and insert a second one.
func TestPartitionedBatchedClaimsKeepOneRowPerKey(t *testing.T) {
	t.Parallel()
	pool := smallPoolOn(t, partitionedPool(t), 4, nil)
	s := mustNew(t, pool, postgres.Config{Layout: postgres.LayoutPartitioned, BatchSize: 64, BatchWorkers: 2, BatchTimeout: time.Second})
	const keys = 50
	owners := storetest.RaceClaims(t, s, keys, 4)
	if len(owners) != keys {
		t.Fatalf("%d keys have an owner, want %d", len(owners), keys)
	}
	var rows, distinct int
	if err := pool.QueryRow(testContext(t), "SELECT count(*), count(DISTINCT key) FROM idempotency_records").Scan(&rows, &distinct); err != nil {
		t.Fatal(err)
	}
	if rows != keys || distinct != keys {
		t.Fatalf("%d rows for %d distinct keys, want %d of each", rows, distinct, keys)
	}

	ctx := testContext(t)
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = s.With(tx).Claim(ctx, "rr", []byte("fp"), time.Minute)
	if err == nil || !strings.Contains(err.Error(), "READ COMMITTED") {
		t.Fatalf("Claim under REPEATABLE READ = %v; want an error naming READ COMMITTED", err)
	}
	_ = tx.Rollback(ctx)
	if n := countRows(t, pool); n != keys {
		t.Fatalf("%d rows after the refused claim, want %d", n, keys)
	}
}

func TestCheckLayout(t *testing.T) {
	t.Parallel()
	pool := partitionedPool(t)
	ctx := testContext(t)
	// A plain table with the columns of the migrated one: the rows layout.
	if _, err := pool.Exec(ctx, "CREATE TABLE plain_records (LIKE idempotency_records INCLUDING ALL)"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		table  string
		layout postgres.Layout
		want   string // "" for no error
	}{
		{"plain_records", postgres.LayoutRows, ""},
		{"idempotency_records", postgres.LayoutPartitioned, ""},
		{"plain_records", postgres.LayoutPartitioned, "records table plain_records has the rows layout, not partitioned"},
		{"idempotency_records", postgres.LayoutRows, "records table idempotency_records has the partitioned layout, not rows"},
		{"missing", postgres.LayoutRows, "records table missing does not exist"},
	} {
		err := mustNew(t, pool, postgres.Config{Table: c.table, Layout: c.layout}).CheckLayout(ctx)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("CheckLayout of %s on %s = %v, want %q", c.layout, c.table, err, c.want)
		}
	}
	if _, err := postgres.New(pool, postgres.Config{Layout: "sharded"}); err == nil || !strings.Contains(err.Error(), `"sharded"`) {
		t.Errorf("New with an unknown layout = %v, want an error naming it", err)
	}
}
