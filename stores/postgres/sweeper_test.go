package postgres_test

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/stores"
	"github.com/onceflow/onceflow/stores/postgres"
)

// seed inserts n records named prefix-i in state, with expires_at offset from
// now() (negative: already expired).
func seed(t *testing.T, pool *pgxpool.Pool, prefix, state string, n int, offset time.Duration) {
	t.Helper()
	_, err := pool.Exec(testContext(t), `
		INSERT INTO idempotency_records (key, state, token, fingerprint, created_at, completed_at, expires_at)
		SELECT $1 || '-' || i, $2, md5(random()::text), '\x00', now(),
		       CASE WHEN $2 = 'completed' THEN now() END,
		       now() + $3::bigint * interval '1 microsecond'
		FROM generate_series(1, $4::int) AS i`,
		prefix, state, offset.Microseconds(), n)
	if err != nil {
		t.Fatalf("seeding %s: %v", prefix, err)
	}
}

func TestSweepDeletesExpiredInBoundedBatches(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
	ctx := testContext(t)
	seed(t, pool, "done-expired", "completed", 17, -time.Minute)
	seed(t, pool, "lease-ended", "in_progress", 8, -time.Second)
	seed(t, pool, "done-live", "completed", 5, time.Hour)
	seed(t, pool, "lease-live", "in_progress", 3, time.Minute)

	var got []int64
	for {
		n, err := s.Sweep(ctx, 10)
		if err != nil {
			t.Fatalf("Sweep: %v", err)
		}
		got = append(got, n)
		if n == 0 {
			break
		}
	}
	want := []int64{10, 10, 5, 0}
	if !slices.Equal(got, want) {
		t.Fatalf("deleted per batch %v, want %v", got, want)
	}
	if n := countRows(t, pool); n != 8 {
		t.Fatalf("%d rows left, want the 8 live ones", n)
	}
	wantClaim(t, s, "done-live-1", stores.Completed)
	wantClaim(t, s, "lease-live-1", stores.InProgress)
	wantClaim(t, s, "done-expired-1", stores.Acquired)

	if _, err := s.Sweep(ctx, 0); err == nil {
		t.Fatal("Sweep with batch 0 succeeded")
	}
}

func TestSweeperPassAndRun(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
	seed(t, pool, "expired", "completed", 25, -time.Minute)
	seed(t, pool, "live", "completed", 2, time.Hour)

	w := postgres.NewSweeper(s, postgres.SweeperConfig{Batch: 4, Logger: slog.New(slog.DiscardHandler)})
	n, err := w.Pass(testContext(t))
	if err != nil || n != 25 {
		t.Fatalf("Pass = %d, %v; want 25 deleted", n, err)
	}
	if n := countRows(t, pool); n != 2 {
		t.Fatalf("%d rows left, want 2", n)
	}

	// Run sweeps at once and returns nil when its context ends.
	seed(t, pool, "expired-again", "in_progress", 3, -time.Second)
	ctx, cancel := context.WithCancel(testContext(t))
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for countRows(t, pool) != 2 {
		if time.Now().After(deadline) {
			t.Fatal("Run did not sweep")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v, want nil after cancel", err)
	}
}
