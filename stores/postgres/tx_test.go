package postgres_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/stores"
	"github.com/onceflow/onceflow/stores/postgres"
)

func TestClaimRolledBackWithTransaction(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
	ctx := testContext(t)

	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.With(tx).Claim(ctx, "k", []byte("fp"), time.Minute)
	if err != nil || c.Status != stores.Acquired {
		t.Fatalf("Claim in transaction = %v, %v; want acquired", c.Status, err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}

	// The rolled-back claim left nothing behind.
	if n := countRows(t, pool); n != 0 {
		t.Fatalf("%d rows after rollback, want 0", n)
	}
	wantClaim(t, s, "k", stores.Acquired)
}

func TestDuplicateWaitsForTransactionThenSeesCompleted(t *testing.T) {
	t.Parallel()
	eachLayout(t, func(t *testing.T, newStore func(*testing.T) (*postgres.Store, *pgxpool.Pool)) {
		s, pool := newStore(t)
		ctx := testContext(t)
		result := make([]byte, 1<<20)
		_, _ = rand.Read(result)

		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx) }()
		var txPID uint32
		if err := tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&txPID); err != nil {
			t.Fatal(err)
		}
		inTx := s.With(tx)
		c, err := inTx.Claim(ctx, "k", []byte("fp"), time.Minute)
		if err != nil || c.Status != stores.Acquired {
			t.Fatalf("Claim in transaction = %v, %v; want acquired", c.Status, err)
		}
		if err := inTx.Complete(ctx, "k", c.Token, result, time.Hour); err != nil {
			t.Fatalf("Complete in transaction: %v", err)
		}

		// A duplicate outside the transaction waits on the row...
		type outcome struct {
			c   stores.Claim
			err error
		}
		done := make(chan outcome, 1)
		go func() {
			c, err := s.Claim(ctx, "k", []byte("fp"), time.Minute)
			done <- outcome{c, err}
		}()
		waitUntilBlockedBy(t, pool, txPID)

		// ...and sees the committed outcome, 1 MiB result included.
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		got := <-done
		if got.err != nil || got.c.Status != stores.Completed {
			t.Fatalf("duplicate Claim = %v, %v; want completed", got.c.Status, got.err)
		}
		if !bytes.Equal(got.c.Record.Result, result) {
			t.Fatalf("result of %d bytes differs from the %d bytes stored", len(got.c.Record.Result), len(result))
		}
	})
}

// waitUntilBlockedBy returns once some session waits for a lock that the
// session pid holds: the deterministic sign that a claim is blocked on a row
// of pid's transaction.
func waitUntilBlockedBy(t *testing.T, pool *pgxpool.Pool, pid uint32) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var waiting bool
		err := pool.QueryRow(testContext(t), `SELECT EXISTS (
			SELECT 1 FROM pg_stat_activity WHERE $1::int = ANY (pg_blocking_pids(pid)))`, pid).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
		if waiting {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no claim waited on the row")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func countRows(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(testContext(t), "SELECT count(*) FROM idempotency_records").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func wantClaim(t *testing.T, s stores.Store, key string, want stores.Status) stores.Claim {
	t.Helper()
	c, err := s.Claim(testContext(t), key, []byte("fp"), time.Minute)
	if err != nil {
		t.Fatalf("Claim(%q): %v", key, err)
	}
	if c.Status != want {
		t.Fatalf("Claim(%q) = %v, want %v", key, c.Status, want)
	}
	return c
}
