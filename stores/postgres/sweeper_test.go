package postgres_test

import (
	"context"
	"fmt"
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

// seedAt inserts n completed records named prefix-i that expire at at.
func seedAt(t *testing.T, pool *pgxpool.Pool, prefix string, n int, at time.Time) {
	t.Helper()
	_, err := pool.Exec(testContext(t), `
		INSERT INTO idempotency_records (key, state, token, fingerprint, created_at, completed_at, expires_at)
		SELECT $1 || '-' || i, 'completed', md5(random()::text), '\x00', now(), now(), $2
		FROM generate_series(1, $3::int) AS i`,
		prefix, at, n)
	if err != nil {
		t.Fatalf("seeding %s: %v", prefix, err)
	}
}

func TestSweepFromResumesAtItsCursor(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
	ctx := testContext(t)
	base := time.Now().Add(-time.Hour).Truncate(time.Microsecond)
	// Six records share the first expiry, so a batch of four ends among them.
	seedAt(t, pool, "first", 6, base)
	seedAt(t, pool, "second", 3, base.Add(time.Minute))

	n, last, err := s.SweepFrom(ctx, time.Time{}, 4)
	if err != nil || n != 4 || !last.Equal(base) {
		t.Fatalf("first batch = %d, %v, %v; want 4 up to %v", n, last, err, base)
	}
	// Ties with the cursor are not skipped: the rest of the first expiry and
	// the second one come next.
	n, last, err = s.SweepFrom(ctx, last, 10)
	if err != nil || n != 5 || !last.Equal(base.Add(time.Minute)) {
		t.Fatalf("second batch = %d, %v, %v; want 5 up to %v", n, last, err, base.Add(time.Minute))
	}
	// A record behind the cursor is left to the next pass; an empty batch
	// returns the cursor it was given.
	seedAt(t, pool, "behind", 2, base.Add(-time.Minute))
	n, got, err := s.SweepFrom(ctx, last, 10)
	if err != nil || n != 0 || !got.Equal(last) {
		t.Fatalf("batch from the cursor = %d, %v, %v; want 0 at the cursor %v", n, got, err, last)
	}
	if n := countRows(t, pool); n != 2 {
		t.Fatalf("%d rows left, want the 2 behind the cursor", n)
	}
	if n, err := s.Sweep(ctx, 10); err != nil || n != 2 {
		t.Fatalf("Sweep without a bound = %d, %v; want the 2 behind the cursor", n, err)
	}
	if _, _, err := s.SweepFrom(ctx, last, 0); err == nil {
		t.Fatal("SweepFrom with batch 0 succeeded")
	}
}

func TestSweeperPassResumesAndEnds(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
	ctx := testContext(t)
	base := time.Now().Add(-time.Hour).Truncate(time.Microsecond)
	for i := range 5 {
		// Groups of 7 sharing an expiry, with a batch of 3: most batches end
		// inside a group.
		seedAt(t, pool, fmt.Sprintf("group%d", i), 7, base.Add(time.Duration(i)*time.Second))
	}
	// Records expiring after the first pass's cursor, and after it ends.
	seed(t, pool, "later", "completed", 4, 1500*time.Millisecond)

	w := postgres.NewSweeper(s, postgres.SweeperConfig{Batch: 3, Pause: time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	done := make(chan struct{})
	var n int64
	var err error
	go func() { defer close(done); n, err = w.Pass(ctx) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("Pass did not end")
	}
	if err != nil || n != 35 {
		t.Fatalf("first Pass = %d, %v; want the 35 expired", n, err)
	}
	if n := countRows(t, pool); n != 4 {
		t.Fatalf("%d rows left, want the 4 live ones", n)
	}
	wantClaim(t, s, "later-1", stores.Completed)

	time.Sleep(2 * time.Second)
	if n, err := w.Pass(ctx); err != nil || n != 4 {
		t.Fatalf("second Pass = %d, %v; want the 4 that expired since", n, err)
	}
	if n := countRows(t, pool); n != 0 {
		t.Fatalf("%d rows left, want none", n)
	}

	// A pause is cut short by the end of the context.
	seedAt(t, pool, "backlog", 10, base)
	slow := postgres.NewSweeper(s, postgres.SweeperConfig{Batch: 1, Pause: time.Hour, Logger: slog.New(slog.DiscardHandler)})
	cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if n, err := slow.Pass(cctx); err == nil || n != 1 {
		t.Fatalf("Pass with an hour's pause = %d, %v; want 1 and the context's error", n, err)
	}
}
